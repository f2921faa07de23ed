"""ops.products: ``mm``, ``mv``, ``addmm`` and ``baddbmm``, PyTorch's rank-checked spellings
of the one ``matmul`` primitive (``ops.linalg``).

Room: ops. ``mm``/``mv`` check ranks with PyTorch's messages, then run ``matmul`` (whose
node is named ``MmBackward0`` / ``MvBackward0`` by the operands' ranks); ``addmm`` and
``baddbmm`` add ``beta * input`` to ``alpha * product`` with ordinary ops, so their
gradients are those ops' gradients.
"""
from __future__ import annotations

import numgrad.ops.layout as L
from numgrad.ops.linalg import bmm, matmul
from numgrad.tensor import Tensor


def _tensors(fn, **named):
    for pos, (name, t) in enumerate(named.items(), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices, ``(n, m) @ (m, p) -> (n, p)``, without broadcasting
    (``torch.mm``). Raises RuntimeError, with PyTorch's messages, unless both are 2-D with
    matching inner sizes and one dtype.

    >>> ng.mm(ng.ones(2, 3), ng.ones(3, 4)).shape
    torch.Size([2, 4])
    """
    _tensors("mm", input=input, mat2=mat2)
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector, ``(n, m) @ (m,) -> (n,)`` (``torch.mv``).
    Raises RuntimeError unless ``input`` is 2-D and ``vec`` 1-D of matching size.

    >>> ng.mv(ng.ones(2, 3), ng.ones(3))
    tensor([3., 3.])
    """
    _tensors("mv", input=input, vec=vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, "
                           f"{vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    return matmul(input, vec)


def _scaled_sum(input, product, beta, alpha):
    """``beta * input + alpha * product``; ``input`` must broadcast to the product's shape
    (PyTorch's expand error otherwise), and ``beta == 0`` ignores its values (nan too)."""
    if isinstance(input, Tensor):
        L.expand(input, product.shape)  # raises PyTorch's "expanded size" error
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (input if beta == 1 else input * beta) + product


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` with ``input`` broadcast to the product
    (``torch.addmm``, the affine map of ``nn.Linear``). Raises RuntimeError unless ``mat1``
    and ``mat2`` are matrices that multiply, or when ``input`` does not broadcast.

    >>> ng.addmm(ng.zeros(3), ng.ones(2, 2), ng.ones(2, 3), alpha=0.5)
    tensor([[1., 1., 1.],
            [1., 1., 1.]])
    """
    _tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    return _scaled_sum(input, matmul(mat1, mat2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)`` (``torch.baddbmm``): ``input``
    broadcasts to ``(b, n, p)``. Raises RuntimeError as ``bmm`` does, or when ``input``
    does not broadcast.

    >>> ng.baddbmm(ng.ones(3), ng.ones(2, 2, 4), ng.ones(2, 4, 3), beta=2).shape
    torch.Size([2, 2, 3])
    """
    _tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


__all__ = ["mm", "mv", "addmm", "baddbmm"]

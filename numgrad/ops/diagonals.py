"""ops.diagonals: a matrix's diagonal and its inverse (``diagonal``, ``diag_embed``,
``diag``, ``trace``).

Room: ops. Two host primitives, each the other's vjp, so every order of derivative is
these two again: ``diagonal`` reads the diagonal between ``dim1`` and ``dim2`` into a new last
dim (a view, as PyTorch's: an in-place op on it writes the diagonal of its base, through
``ops.views``), ``diagonal_embed`` writes a last dim onto the
diagonal of zeros of a given shape (PyTorch's ``diagonal_backward``; ``diag_embed`` is it
with the shape the embedding makes).
"""
from __future__ import annotations

import numpy as np

import numgrad.ops.views as views
from numgrad.ops.layout import _dim
from numgrad.ops.registry import defop
from numgrad.tensor import Tensor


def _length(n1, n2, offset):
    return max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))


def _diagonal_shape(shape, offset, dim1, dim2):
    rest = tuple(s for i, s in enumerate(shape) if i not in (dim1, dim2))
    return rest + (_length(shape[dim1], shape[dim2], offset),)


def _diagonal(x, offset, dim1, dim2):
    # A writable view (np.diagonal's is read-only): in-place ops on it reach x, as in PyTorch.
    m = np.moveaxis(x, (dim1, dim2), (-2, -1))[..., max(-offset, 0):, max(offset, 0):]
    n = _length(x.shape[dim1], x.shape[dim2], offset)
    return np.lib.stride_tricks.as_strided(m, m.shape[:-2] + (n,),
                                           m.strides[:-2] + (m.strides[-2] + m.strides[-1],))


def _embed(x, shape, offset, dim1, dim2):
    out = np.zeros(shape, x.dtype)
    moved = np.moveaxis(out, (dim1, dim2), (-2, -1))   # a writable view of out
    n = x.shape[-1]
    rows = np.arange(n) + max(-offset, 0)
    moved[..., rows, rows + offset] = x
    return out


diagonal_p = defop("diagonal", inputs=("x",), params=("offset", "dim1", "dim2"),
                   impl=_diagonal, node="DiagonalBackward0", view=True,
                   abstract=lambda x, offset, dim1, dim2: (
                       _diagonal_shape(x.shape, offset, dim1, dim2), x.dtype))
diagonal_embed_p = defop("diagonal_embed", inputs=("x",),
                         params=("shape", "offset", "dim1", "dim2"), impl=_embed,
                         node="DiagEmbedBackward0",
                         abstract=lambda x, shape, offset, dim1, dim2: (shape, x.dtype))
diagonal_p.defvjp(lambda g, x_shape, offset, dim1, dim2: diagonal_embed_p(
    g, shape=tuple(x_shape), offset=offset, dim1=dim1, dim2=dim2))
diagonal_embed_p.defvjp(lambda g, offset, dim1, dim2: diagonal_p(
    g, offset=offset, dim1=dim1, dim2=dim2))


def _put_diagonal(inter, new, params):
    """``inter`` with ``new`` written on its diagonal (an in-place op on a diagonal view)."""
    from numgrad.ops.elementwise import where
    whole = (new == new) | (new != new)              # all True, on new's device
    embed = dict(shape=tuple(inter.shape), **params)
    return where(diagonal_embed_p(whole, **embed), diagonal_embed_p(new, **embed), inter)


views.PUTS["diagonal"] = _put_diagonal


def _check(input, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _pair(dim1, dim2, ndim):
    d1, d2 = _dim(dim1, ndim), _dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``offset`` above the main one of the matrices spanned by ``dim1`` and
    ``dim2``, as a new last dim (``torch.diagonal``): a view, in-place ops on it write ``input``.

    >>> ng.diagonal(ng.tensor([[1., 2.], [3., 4.]]))
    tensor([1., 4.])
    """
    _check(input, "diagonal")
    d1, d2 = _pair(dim1, dim2, input.ndim)
    return diagonal_p(input, offset=int(offset), dim1=d1, dim2=d2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (over ``dim1``, ``dim2`` of the result) whose ``offset`` diagonal holds the
    last dim of ``input``, zeros elsewhere (``torch.diag_embed``).

    >>> ng.diag_embed(ng.tensor([1., 2.]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    _check(input, "diag_embed")
    ndim = input.ndim + 1
    d1, d2 = _pair(dim1, dim2, ndim)
    n = input.shape[-1] + abs(int(offset)) if input.ndim else 1 + abs(int(offset))
    rest = iter(input.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(rest) for i in range(ndim))
    x = input if input.ndim else input.reshape(1)
    return diagonal_embed_p(x, shape=shape, offset=int(offset), dim1=d1, dim2=d2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector's square diagonal matrix, or a matrix's diagonal ``diagonal`` above the
    main one (``torch.diag``).

    >>> ng.diag(ng.tensor([1., 2.])).shape
    torch.Size([2, 2])
    """
    _check(input, "diag")
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return diagonal_p(input, offset=int(diagonal), dim1=0, dim2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal (``torch.trace``).

    >>> ng.trace(ng.tensor([[1., 2.], [3., 4.]]))
    tensor(5.)
    """
    _check(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return diagonal_p(input, offset=0, dim1=0, dim2=1).sum()


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with ``input``'s elements (flattened) on its ``offset`` diagonal
    (``torch.diagflat``).

    >>> ng.diagflat(ng.tensor([[1., 2.]]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    _check(input, "diagflat")
    return diag_embed(input.reshape(-1), offset, 0, 1)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """``input`` with ``src`` written on its diagonal (``torch.diagonal_scatter``, the
    out-of-place ``input.diagonal(...).copy_(src)``).

    >>> ng.diagonal_scatter(ng.zeros(2, 2), ng.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _check(input, "diagonal_scatter")
    d1, d2 = _pair(dim1, dim2, input.ndim)
    params = dict(offset=int(offset), dim1=d1, dim2=d2)
    want = _diagonal_shape(tuple(input.shape), **params)
    if tuple(src.shape) != want:
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(want)}")
    return _put_diagonal(input, src.to(input.dtype), params)


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Writes ``fill_value`` on the main diagonal, ``self[i, i, ..., i]`` (every dim of equal
    size past 2-D); ``wrap=True`` starts it again below a tall matrix's square top
    (``torch.Tensor.fill_diagonal_``).

    >>> ng.zeros(2, 2).fill_diagonal_(3.0)
    tensor([[3., 0.],
            [0., 3.]])
    """
    from numgrad.ops.composites import masked_fill
    from numgrad.ops.inplace import apply_inplace
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    size = int(np.prod(shape))
    step = sum(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    end = size if wrap and len(shape) == 2 else min(shape) * step
    mask = np.zeros(size, bool)
    mask[0:min(end, size):step] = True
    where = Tensor._make(mask.reshape(shape)).to(self.device)
    return apply_inplace(self, masked_fill, where, fill_value)

"""linalg.products: ``multi_dot``, ``vecdot`` and ``linalg.diagonal`` (``torch.linalg``'s),
compositions of ops' functions.
"""
from __future__ import annotations

from numgrad.dtypes import SCALAR_NAMES
from numgrad.ops.diagonals import diagonal as _diagonal
from numgrad.ops.linalg import matmul
from numgrad.tensor import Tensor


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices, ``A @ B @ C...``; the first may be a row vector
    and the last a column vector, 1-D (``torch.linalg.multi_dot``).

    >>> ng.linalg.multi_dot([ng.ones(2), ng.ones(2, 3), ng.ones(3)])
    tensor(6.)
    """
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_dot(): tensor {i} must be Tensor, not {type(t).__name__}")
        where = ("first" if i == 0 else "last") if i in (0, len(ts) - 1) else None
        if where and t.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): the {where} tensor must be 1D or 2D but got "
                               f"{t.ndim}D")
        if not where and t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {SCALAR_NAMES.get(ts[0].dtype.name)} and tensor {i} is "
                               f"{SCALAR_NAMES.get(t.dtype.name)}")
    for i in range(len(ts) - 1):
        a, b = ts[i].shape, ts[i + 1].shape
        if a[-1] != b[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(a)} and "
                               f"{list(b)} cannot be multiplied")
    out = ts[0]
    for t in ts[1:]:
        out = matmul(out, t)
    return out


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim``, batch dims broadcast
    (``torch.linalg.vecdot``).

    >>> ng.linalg.vecdot(ng.tensor([1., 2.]), ng.tensor([3., 4.]))
    tensor(11.)
    """
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_vecdot(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {SCALAR_NAMES.get(x.dtype.name)} and y of type "
                           f"{SCALAR_NAMES.get(y.dtype.name)} instead")
    return (x * y).sum(dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of a batch of matrices (``torch.linalg.diagonal``: ``torch.diagonal``
    over the last two dims by default).

    >>> ng.linalg.diagonal(ng.eye(2))
    tensor([1., 1.])
    """
    return _diagonal(A, offset, dim1, dim2)


__all__ = ["matmul", "multi_dot", "vecdot", "diagonal"]

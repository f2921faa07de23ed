"""linalg.norms: ``vector_norm``, ``matrix_norm`` and ``norm`` (``torch.linalg``'s), as
compositions of reductions and, for the spectral and nuclear norms, ``svdvals``.

The room above ops: it composes their functions; gradients and ``@ng.jit`` come from them.
"""
from __future__ import annotations

import math
import numbers

from numgrad.dtypes import SCALAR_NAMES
from numgrad.ops.composites import norm as _pnorm
from numgrad.ops.decompositions import norm0_p
from numgrad.ops.layout import _dim
from numgrad.ops.matrices import svdvals
from numgrad.ops.reduction import normalize_dims
from numgrad.tensor import Tensor


def _floating(x, fn, dtype):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {SCALAR_NAMES.get(x.dtype.name, x.dtype.name)}")
    return x


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (every element by default): ``ord`` a number,
    ``inf`` (largest absolute value), ``-inf`` or 0 (the count of nonzeros)
    (``torch.linalg.vector_norm``); its gradient at 0 is 0.

    >>> ng.linalg.vector_norm(ng.tensor([3., 4.]))
    tensor(5.)
    """
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError("linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    x = _floating(x, "vector_norm", dtype)
    if ord == 0:  # a count: PyTorch's node, with no gradient for x
        dims = normalize_dims(dim, x.ndim) if x.ndim else None
        return norm0_p(x, dim=dims, keepdim=bool(keepdim))
    return _pnorm(x, p=float(ord), dim=dim, keepdim=keepdim)


def _unsqueeze(t, dims):
    for d in sorted(dims):
        t = t.unsqueeze(d)
    return t


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The matrix norm of the matrices over ``dim`` (``torch.linalg.matrix_norm``):
    ``'fro'``, ``'nuc'`` (the sum of the singular values), 2 / -2 (the largest / smallest
    singular value), 1 / -1 (max / min absolute column sum), inf / -inf (rows).

    >>> ng.linalg.matrix_norm(ng.tensor([[1., -2.], [3., 4.]]), ord=1)
    tensor(6.)
    """
    A = _floating(A, "matrix_norm", dtype)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if isinstance(dim, int):
        raise TypeError("linalg_matrix_norm(): argument 'dim' must be tuple of ints, not int")
    dims = tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dims)}")
    d0, d1 = (_dim(d, A.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                           f"{dims[1]})")
    if ord == "fro":
        return _pnorm(A, p=2.0, dim=(d0, d1), keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        rest = [i for i in range(A.ndim) if i not in (d0, d1)]
        s = svdvals(A.permute(*rest, d0, d1))
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        return _unsqueeze(out, (d0, d1)) if keepdim else out
    if ord in (1, -1, math.inf, -math.inf):
        across, along = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = A.abs().sum(across, keepdim=True)
        out = sums.amax(along, keepdim=True) if ord > 0 else sums.amin(along, keepdim=True)
        return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``vector_norm`` over one dim (or every element, with ``ord`` None), ``matrix_norm``
    over two, as ``torch.linalg.norm`` picks: with ``dim`` None and ``ord`` given, ``A``
    must be 1-D or 2-D.

    >>> ng.linalg.norm(ng.tensor([[3., 0.], [0., 4.]]))
    tensor(5.)
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_norm(): argument 'input' must be Tensor, not {type(A).__name__}")
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.ndim != 1:
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    return vector_norm(A, ord, None, keepdim, dtype=dtype)

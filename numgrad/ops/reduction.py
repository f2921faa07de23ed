"""ops.reduction: sum, mean, amax/amin, max/min along a dim, argmax/argmin.

Room: ops. A reduction's vjp broadcasts ``g`` back over the reduced dims; the
compiler fuses the elementwise chain feeding a reduction into its loop nest.
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

import numgrad.dtypes as _dt

from numgrad.ops.dispatch import shape_count
from numgrad.ops.registry import Reduction, defop
from numgrad.tensor import Tensor  # for annotations
import numgrad.ops.elementwise as EW
from numgrad.ops.elementwise import where


def normalize_dims(dim, ndim):
    """``None`` (all dims) or a sorted tuple of non-negative dims, checked like PyTorch."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = []
    for d in dims:
        d = int(d)
        lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
        if not lo <= d <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {d})")
        d = d % builtins.max(ndim, 1)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out))


def np_axis(x, dim):
    """NumPy's ``axis`` for the normalized ``dim`` of ``x``: a 0-d tensor's dim 0 (or -1),
    which PyTorch accepts as the whole tensor, is NumPy's ``None`` (NumPy has no axis 0)."""
    return None if x.ndim == 0 else dim


def reduced_shape(shape, dim, keepdim):
    if dim is None:
        return tuple(1 for _ in shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in dim else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dim)


def _reduce_abstract(dtype_rule):
    return lambda x, dim, keepdim: (reduced_shape(x.shape, dim, keepdim), dtype_rule(x.dtype))


def _sum_dtype(d):
    return np.dtype(np.int64) if d.kind in "biu" else d


def _lowest(dt):  # of the dtype itself: int64's would not fit a uint8 accumulator
    return -np.inf if dt.kind == "f" else np.iinfo(dt if dt.kind in "iu" else np.int64).min


def _highest(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt if dt.kind in "iu" else np.int64).max


def _np_mean(x, dim, keepdim):
    if x.size == 0:  # NumPy warns "Mean of empty slice"; PyTorch's NaN is silent
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.mean(x, axis=np_axis(x, dim), keepdims=keepdim, dtype=x.dtype)
    return np.mean(x, axis=np_axis(x, dim), keepdims=keepdim, dtype=x.dtype)


_SUM = Reduction(EW.add, lambda dt: 0, additive=True)
_MEAN = Reduction(EW.add, lambda dt: 0, additive=True, mean=True)
_MAX = Reduction(EW.maximum, _lowest)
_MIN = Reduction(EW.minimum, _highest)

sum_p = defop("sum", kind="reduction", inputs=("x",), params=("dim", "keepdim"),
              impl=lambda x, dim, keepdim: np.add.reduce(  # np.sum less its Python wrapper
                  x, axis=np_axis(x, dim), keepdims=keepdim, dtype=_sum_dtype(x.dtype)),
              abstract=_reduce_abstract(_sum_dtype),
              node=lambda p, s: "SumBackward0" if p["dim"] is None else "SumBackward1",
              reduce=_SUM)
mean_p = defop("mean", kind="reduction", inputs=("x",), params=("dim", "keepdim"),
               impl=lambda x, dim, keepdim: _np_mean(x, dim, keepdim),
               abstract=_reduce_abstract(lambda d: d),
               node=lambda p, s: "MeanBackward0" if p["dim"] is None else "MeanBackward1",
               reduce=_MEAN)
amax_p = defop("amax", kind="reduction", inputs=("x",), params=("dim", "keepdim"),
               impl=lambda x, dim, keepdim: np.amax(x, axis=np_axis(x, dim), keepdims=keepdim),
               abstract=_reduce_abstract(lambda d: d), reduce=_MAX)
amin_p = defop("amin", kind="reduction", inputs=("x",), params=("dim", "keepdim"),
               impl=lambda x, dim, keepdim: np.amin(x, axis=np_axis(x, dim), keepdims=keepdim),
               abstract=_reduce_abstract(lambda d: d), reduce=_MIN)
argmax_p = defop("argmax", inputs=("x",), params=("dim", "keepdim"),
                 impl=lambda x, dim, keepdim: np.argmax(x, axis=dim, keepdims=keepdim),
                 abstract=lambda x, dim, keepdim: (
                     reduced_shape(x.shape, None if dim is None else (dim,), keepdim),
                     np.dtype(np.int64)))
argmin_p = defop("argmin", inputs=("x",), params=("dim", "keepdim"),
                 impl=lambda x, dim, keepdim: np.argmin(x, axis=dim, keepdims=keepdim),
                 abstract=argmax_p.abstract)


def _count(shape, dim):
    n = 1
    for i, s in enumerate(shape):
        if dim is None or i in dim:
            n *= s
    return n


def _unreduce(g, x_shape, dim, keepdim):
    """Broadcast a reduced gradient back over ``x_shape``."""
    from numgrad.ops.layout import expand_p, reshape
    if not keepdim and dim is not None:
        g = reshape(g, reduced_shape(x_shape, dim, True))
    # A full reduction's 0-d gradient broadcasts directly (one node, not two).
    return g if g.shape == tuple(x_shape) else expand_p(g, shape=tuple(x_shape))


sum_p.defvjp(lambda g, x_shape, dim, keepdim: _unreduce(g, x_shape, dim, keepdim))
# The count is a shape's: traced, a constant a shape-generic plan reads at run time.
mean_p.defvjp(lambda g, x_shape, dim, keepdim: _unreduce(g, x_shape, dim, keepdim)
              / shape_count(builtins.max(_count(x_shape, dim), 1), g))


def _extremum_vjp(g, x, out, x_shape, dim, keepdim):
    # Ties share the gradient evenly (PyTorch's amax/amin rule).
    from numgrad.ops.layout import reshape
    keep = reduced_shape(x_shape, dim, True)
    hit = where(x == reshape(out, keep), 1.0, 0.0).to(g.dtype)
    count = sum_p(hit, dim=dim, keepdim=True)
    return _unreduce(g, x_shape, dim, keepdim) * (hit / count)


amax_p.defvjp(_extremum_vjp)
amin_p.defvjp(_extremum_vjp)
argmax_p.defvjp(None)
argmin_p.defvjp(None)

# max(dim)/min(dim) values: the gradient goes to the index that was picked, as in PyTorch.
max_dim_p = defop("max_dim", inputs=("x",), params=("dim", "keepdim"), node="MaxBackward0",
                  impl=lambda x, dim, keepdim: np.amax(x, axis=np_axis(x, dim), keepdims=keepdim),
                  abstract=lambda x, dim, keepdim: (reduced_shape(x.shape, (dim,), keepdim),
                                                    x.dtype))
min_dim_p = defop("min_dim", inputs=("x",), params=("dim", "keepdim"), node="MinBackward0",
                  impl=lambda x, dim, keepdim: np.amin(x, axis=np_axis(x, dim), keepdims=keepdim),
                  abstract=max_dim_p.abstract)


def _picked_vjp(arg_p):
    def rule(g, x, x_shape, dim, keepdim):
        if not x_shape:  # a 0-d tensor: its one element was picked
            return g
        from numgrad.creation import arange
        from numgrad.ops.layout import reshape
        idx = arg_p(x.detach(), dim=dim, keepdim=True)
        pos = reshape(arange(x_shape[dim], device=x.device), tuple(-1 if i == dim else 1
                                                  for i in range(len(x_shape))))
        return where(pos == idx, _unreduce(g, x_shape, (dim,), keepdim), 0)
    return rule


max_dim_p.defvjp(_picked_vjp(argmax_p))
min_dim_p.defvjp(_picked_vjp(argmin_p))


# ------------------------------------------------------------- public API
def _check(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")


def sum(x, dim=None, keepdim=False, dtype=None) -> Tensor:
    """Sum over ``dim`` (an int, a tuple, or None for all) (``torch.sum``, ``jax.numpy.sum``);
    bool and int inputs give int64. Raises IndexError for a dim out of range."""
    _check(x, "sum")
    if dtype is None and dim is None:  # x.sum(), the common call: nothing to normalize
        return sum_p(x, dim=None, keepdim=bool(keepdim))
    if dtype is not None:
        x = x.to(dtype)
    out = sum_p(x, dim=normalize_dims(dim, x.ndim), keepdim=bool(keepdim))
    # sum(dtype=int8) is int8, as PyTorch's: the int64 total, wrapped (the same bits).
    return out if dtype is None or out.dtype is x.dtype else out.to(x.dtype)


def mean(x, dim=None, keepdim=False, dtype=None) -> Tensor:
    """Mean over ``dim`` (an int, a tuple, or None for all) (``torch.mean``, ``jax.numpy.mean``).

    Raises RuntimeError for a non-floating input, IndexError for a dim out of range.
    """
    _check(x, "mean")
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{_dt.SCALAR_NAMES.get(x.dtype.name, x.dtype.name)}")
    return mean_p(x, dim=normalize_dims(dim, x.ndim), keepdim=bool(keepdim))


def _nonempty_dims(x, dims, name):
    """PyTorch refuses a max/min/arg-reduction over an empty dim (there is no identity);
    checked on shapes, so eager mode and @ng.jit raise alike."""
    shape = x.shape
    if dims is None:
        if x.numel() == 0:
            raise (IndexError if name.startswith("arg") else RuntimeError)(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                + ("" if name.startswith("arg") else
                   " Specify the reduction dim with the 'dim' argument."))
        return
    for d in dims:
        if shape and shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def amax(x, dim=(), keepdim=False) -> Tensor:
    """Largest value over ``dim`` (all dims by default); ties share the gradient evenly
    (``torch.amax``, ``jax.numpy.max``). Raises IndexError for a dim out of range.
    """
    _check(x, "amax")
    dim = None if dim == () or dim is None else dim
    dims = normalize_dims(dim, x.ndim)
    _nonempty_dims(x, dims, "amax")
    return amax_p(x, dim=dims, keepdim=bool(keepdim))


def amin(x, dim=(), keepdim=False) -> Tensor:
    """Smallest value over ``dim`` (all dims by default); ties share the gradient evenly
    (``torch.amin``, ``jax.numpy.min``). Raises IndexError for a dim out of range.
    """
    _check(x, "amin")
    dim = None if dim == () or dim is None else dim
    dims = normalize_dims(dim, x.ndim)
    _nonempty_dims(x, dims, "amin")
    return amin_p(x, dim=dims, keepdim=bool(keepdim))


def _empty_check(x, name):
    if x.numel() == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")


def max(x, dim=None, keepdim=False) -> Tensor | tuple:
    """``max(x)`` is the largest value; ``max(x, dim)`` returns ``(values, indices)``
    (``torch.max``).

    ``max(x, y)`` with a tensor ``y`` is ``maximum``, as in PyTorch.
    """
    from numgrad.tensor import Tensor
    if isinstance(dim, Tensor):
        from numgrad.ops.elementwise import maximum
        return maximum(x, dim)
    _check(x, "max")
    if dim is None:
        _empty_check(x, "max")
        return amax_p(x, dim=None, keepdim=False)
    (d,) = normalize_dims(dim, x.ndim) or (0,)
    _nonempty_dims(x, (d,), "max")
    return _values_indices(max_dim_p(x, dim=d, keepdim=bool(keepdim)),
                           argmax_p(x.detach(), dim=d, keepdim=bool(keepdim)))


def min(x, dim=None, keepdim=False) -> Tensor | tuple:
    """``min(x)`` is the smallest value; ``min(x, dim)`` returns ``(values, indices)``
    (``torch.min``); ``min(x, y)`` with a tensor ``y`` is ``minimum``.

    Raises RuntimeError for ``min(x)`` of an empty tensor.
    """
    from numgrad.tensor import Tensor
    if isinstance(dim, Tensor):
        from numgrad.ops.elementwise import minimum
        return minimum(x, dim)
    _check(x, "min")
    if dim is None:
        _empty_check(x, "min")
        return amin_p(x, dim=None, keepdim=False)
    (d,) = normalize_dims(dim, x.ndim) or (0,)
    _nonempty_dims(x, (d,), "min")
    return _values_indices(min_dim_p(x, dim=d, keepdim=bool(keepdim)),
                           argmin_p(x.detach(), dim=d, keepdim=bool(keepdim)))


class _ValuesIndices(tuple):
    """``(values, indices)`` with attribute access, like ``torch.return_types.max``."""

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def _values_indices(values, indices):
    return _ValuesIndices((values, indices))


def argmax(x, dim=None, keepdim=False) -> Tensor:
    """Index of the largest value over ``dim`` (of the flattened tensor by default)
    (``torch.argmax``, ``jax.numpy.argmax``); int64, no gradient.
    """
    _check(x, "argmax")
    _nonempty_dims(x, None if dim is None else normalize_dims(dim, x.ndim), "argmax")
    if dim is None:
        from numgrad.ops.layout import reshape
        return argmax_p(reshape(x.detach(), (-1,)), dim=0, keepdim=False)
    (d,) = normalize_dims(dim, x.ndim)
    return argmax_p(x.detach(), dim=d, keepdim=bool(keepdim))


def argmin(x, dim=None, keepdim=False) -> Tensor:
    """Index of the smallest value over ``dim`` (of the flattened tensor by default)
    (``torch.argmin``, ``jax.numpy.argmin``); int64, no gradient.
    """
    _check(x, "argmin")
    _nonempty_dims(x, None if dim is None else normalize_dims(dim, x.ndim), "argmin")
    if dim is None:
        from numgrad.ops.layout import reshape
        return argmin_p(reshape(x.detach(), (-1,)), dim=0, keepdim=False)
    (d,) = normalize_dims(dim, x.ndim)
    return argmin_p(x.detach(), dim=d, keepdim=bool(keepdim))

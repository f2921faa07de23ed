"""ops.composites: ops written over existing primitives (no new derivatives).

Room: ops. Each function here is plain numgrad ops (docs/architecture.md: composites are Python
functions over primitives), so its gradient at every order, its eager speed and its
compiled form come from the primitives' rules: elementwise composites fuse into one
kernel under ``@ng.jit``. Index-based ones (gather, index_select, flip, roll,
scatter_add) are the indexing primitives with index arrays built here; under ``@ng.jit`` a
traced index tensor is a gather in the kernel.
"""
from __future__ import annotations

import builtins
import itertools
import math
import numpy as np

import numgrad.tracing_hook as tracing_hook
import numgrad.ops.elementwise as E
import numgrad.ops.layout as L
import numgrad.ops.reduction as R
import numgrad.ops.special as S
from numgrad.ops.cumulative import cumsum_p, prod_p
import numgrad.ops.losses as _losses
from numgrad.ops.dispatch import shape_count
from numgrad.ops.indexing import getitem, index_add_p, normalize_index
from numgrad.ops.layout import _dim
from numgrad.tensor import Tensor

_SQRT_HALF = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _tensor_arg(x, fn: str, name: str = "input") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _const(a: np.ndarray) -> Tensor:
    return Tensor._make(a)


# ------------------------------------------------------------------ activations
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold``
    (``torch.nn.functional.softplus``)."""
    _tensor_arg(input, "softplus")
    z = input * beta if beta != 1 else input
    # The clamp keeps exp finite in the branch `where` discards (inf there would turn the
    # discarded branch's zero gradient into nan).
    soft = S.log1p(E.exp(E.clamp(z, min=None, max=float(threshold))))
    if beta != 1:
        soft = soft / beta
    return E.where(z > threshold, input, soft)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` with the normal CDF, or its tanh approximation
    (``torch.nn.functional.gelu``). Raises ValueError for another ``approximate``."""
    _tensor_arg(input, "gelu")
    if approximate == "none":
        return input * 0.5 * (S.erf(input * _SQRT_HALF) + 1.0)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * _SQRT_2_OVER_PI
        return input * 0.5 * (E.tanh(inner) + 1.0)
    raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x`` (``torch.nn.functional.leaky_relu``)."""
    _tensor_arg(input, "leaky_relu")
    return E.where(input > 0, input, input * negative_slope)


def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)`` (``torch.nn.functional.elu``)."""
    _tensor_arg(input, "elu")
    neg = S.expm1(E.clamp(input, min=None, max=0.0))  # finite in the discarded branch
    return E.where(input > 0, input, neg * alpha)


def silu(input: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (``torch.nn.functional.silu``; JAX's ``nn.silu``)."""
    _tensor_arg(input, "silu")
    return input * E.sigmoid(input)


# ------------------------------------------------------------------- reductions
def _dims(dim, ndim):
    return R.normalize_dims(dim, ndim)


def _count(shape, dims) -> int:
    return math.prod(s for i, s in enumerate(shape) if dims is None or i in dims)


def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Variance over ``dim``, dividing by ``N - correction`` (default 1, Bessel's)
    (``torch.var``). Raises RuntimeError for non-floating input."""
    _tensor_arg(input, "var")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got "
                           f"{input.dtype.name}")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _dims(dim, input.ndim)
    mean = R.mean_p(input, dim=dims, keepdim=True)
    d = input - mean
    n = _count(input.shape, dims) - correction
    with np.errstate(divide="ignore", invalid="ignore"):
        s = R.sum_p(d * d, dim=dims, keepdim=bool(keepdim))
        return s / shape_count(builtins.max(n, 0), s)


def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Standard deviation: ``sqrt(var(...))`` (``torch.std``)."""
    return E.sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def _safe_root(s: Tensor, p: float) -> Tensor:
    # s ** (1/p) with a zero (not nan) gradient at s == 0, as torch's norm backward gives.
    zero = s == 0
    safe = E.where(zero, 1.0, s)
    root = E.sqrt(safe) if p == 2 else safe ** (1.0 / p)
    return E.where(zero, 0.0, root)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False) -> Tensor:
    """The vector p-norm over ``dim`` (all elements by default): ``p`` is a number,
    ``"fro"`` (2), ``inf`` or ``-inf`` (``torch.norm``, ``torch.linalg.vector_norm``).
    Raises RuntimeError for a non-floating input."""
    _tensor_arg(input, "norm")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be floating point, got "
                           f"{input.dtype.name}")
    if p == "fro" or p is None:
        p = 2
    dims = _dims(dim, input.ndim)
    a = E.abs_(input)
    if p == math.inf:
        return R.amax_p(a, dim=dims, keepdim=bool(keepdim))
    if p == -math.inf:
        return R.amin_p(a, dim=dims, keepdim=bool(keepdim))
    if p == 0:
        return R.sum_p((input != 0).to(input.dtype), dim=dims, keepdim=bool(keepdim))
    if p == 1:
        return R.sum_p(a, dim=dims, keepdim=bool(keepdim))
    s = R.sum_p(input * input if p == 2 else a ** p, dim=dims, keepdim=bool(keepdim))
    return _safe_root(s, p)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype=None) -> Tensor:
    """Product of the elements, over one ``dim`` or all (``torch.prod``); bool and
    integer inputs give int64."""
    _tensor_arg(input, "prod")
    if dtype is not None:
        input = input.to(dtype)
    dims = None if dim is None else _dims(dim, input.ndim)
    return prod_p(input, dim=dims, keepdim=bool(keepdim) and dims is not None)


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running sum along ``dim`` (``torch.cumsum``); bool and integer inputs give int64."""
    _tensor_arg(input, "cumsum")
    if dtype is not None:
        input = input.to(dtype)
    if input.ndim == 0:
        return cumsum_p(L.reshape(input, (1,)), dim=0).reshape(())
    return cumsum_p(input, dim=_dim(dim, input.ndim))


# ---------------------------------------------------------------- index-based
def _along(x_ndim: int, dim: int, idx) -> tuple:
    return (slice(None),) * dim + (idx,)


def flip(input: Tensor, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (``torch.flip``)."""
    _tensor_arg(input, "flip")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if input.ndim == 0:
        return E.clone(input)
    out = input
    for d in sorted({_dim(d, input.ndim) for d in dims}):
        n = input.shape[d]
        out = getitem(out, _along(input.ndim, d, np.arange(n - 1, -1, -1)))
    return out


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements along ``dims`` cyclically (``torch.roll``); with ``dims=None`` the
    flattened tensor is rolled and reshaped back."""
    _tensor_arg(input, "roll")
    if dims is None:
        if not isinstance(shifts, int):
            (shifts,) = shifts
        flat = L.reshape(input, (-1,))
        return L.reshape(roll(flat, shifts, 0), input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = _dim(d, input.ndim)
        n = input.shape[d]
        if n:
            out = getitem(out, _along(input.ndim, d, (np.arange(n) - s) % n))
    return out


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``input`` at ``index`` (a 1-D int64 tensor) along ``dim``
    (``torch.index_select``). Raises IndexError for an out-of-range index."""
    _tensor_arg(input, "index_select")
    _tensor_arg(index, "index_select", "index")
    if index.ndim > 1 or index.dtype.name != "int64":
        raise RuntimeError("index_select(): Expected a 1-D int64 (Long) tensor for index")
    return getitem(input, _along(input.ndim, _dim(dim, input.ndim), L.reshape(index, (-1,))))


def _gather_index(x_ndim: int, dim: int, index: Tensor) -> tuple:
    """The advanced index that reads ``x[..., index[i, j, ...], ...]`` along ``dim``."""
    if index.ndim != builtins.max(x_ndim, 1) and not (x_ndim == 0 and index.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    if index.dtype.name != "int64":
        raise RuntimeError("gather(): Expected dtype int64 for index")
    parts = []
    for a in range(index.ndim):
        if a == dim:
            parts.append(index)
        else:
            shape = [1] * index.ndim
            shape[a] = index.shape[a]
            parts.append(np.arange(index.shape[a]).reshape(shape))
    return tuple(parts)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` and so on (``torch.gather``).

    ``index`` must have ``input``'s number of dims. Raises IndexError for an
    out-of-range index.
    """
    _tensor_arg(input, "gather")
    _tensor_arg(index, "gather", "index")
    d = _dim(dim, builtins.max(input.ndim, 1))
    return getitem(input, _gather_index(input.ndim, d, index))


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src[i][j]`` added at ``[index[i][j]][j]`` (``dim=0``; repeated
    indices add up) (``torch.scatter_add``)."""
    _tensor_arg(input, "scatter_add")
    _tensor_arg(index, "scatter_add", "index")
    _tensor_arg(src, "scatter_add", "src")
    d = _dim(dim, builtins.max(input.ndim, 1))
    # The scatter runs as a host step on any device: a device index is read there too.
    # An index with no values yet (traced, or per example inside vmap) is a scatter_add_p
    # operand, as getitem's is a gather's.
    from numgrad.ops.indexing import _check_bounds, _stack_indices, scatter_add_p
    key = normalize_index(_gather_index(
        input.ndim, d, index.cpu() if tracing_hook.concrete(index._data) else index))
    template, idx = _stack_indices(key)
    if idx is None:
        _check_bounds(input.shape, key)
    if src.shape != index.shape:
        src = getitem(src, tuple(slice(0, n) for n in index.shape))
    if src.dtype is not input.dtype:
        src = src.to(input.dtype)
    if idx is not None:
        return input + scatter_add_p(src, idx, shape=input.shape, index=template)
    return input + index_add_p(src, shape=input.shape, index=key)


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``input`` with ``value`` where ``mask`` (a bool tensor) is True
    (``torch.Tensor.masked_fill``). Raises RuntimeError for a non-bool mask."""
    _tensor_arg(input, "masked_fill")
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(getattr(mask, 'dtype', None), 'name', type(mask).__name__)}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    out = E.where(mask, value, input)
    if out.shape != input.shape:
        raise RuntimeError(f"The size of the mask ({mask.shape}) must broadcast to the input's "
                           f"({input.shape})")
    return out if out.dtype is input.dtype else out.to(input.dtype)


# ------------------------------------------------------------------ splitting
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of ``length`` entries from ``start`` along ``dim`` (``torch.narrow``)."""
    _tensor_arg(input, "narrow")
    d = _dim(dim, input.ndim)
    n = input.shape[d]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return getitem(input, _along(input.ndim, d, slice(start, start + length)))


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Pieces of ``split_size`` entries along ``dim`` (the last may be shorter), or of the
    given sizes (``torch.split``). Raises RuntimeError if the sizes do not add up."""
    _tensor_arg(tensor, "split", "tensor")
    d = _dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [builtins.min(size, n - s) for s in range(0, n, size)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    starts = [0] + list(itertools.accumulate(sizes))
    return tuple(getitem(tensor, _along(tensor.ndim, d, slice(a, a + k)))
                 for a, k in zip(starts, sizes))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` pieces of ``ceil(n / chunks)`` entries (fewer if ``n`` runs
    out) (``torch.chunk``). Raises RuntimeError unless ``chunks > 0``."""
    _tensor_arg(input, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input.shape[_dim(dim, input.ndim)]
    return split(input, builtins.max(-(-n // chunks), 1) if n else 1, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices along ``dim``, each without that dim (``torch.unbind``)."""
    _tensor_arg(input, "unbind")
    d = _dim(dim, input.ndim)
    return tuple(getitem(input, _along(input.ndim, d, i)) for i in range(input.shape[d]))


# ------------------------------------------------------------------ repeating
def repeat(input: Tensor, *sizes) -> Tensor:
    """Tile ``input`` ``sizes[i]`` times along each dim (``torch.Tensor.repeat``; NumPy's
    ``tile``). Raises RuntimeError if fewer sizes than dims are given."""
    _tensor_arg(input, "repeat")
    sizes = L._shape_args(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(sizes) - input.ndim) + input.shape
    inter, expanded, final = [], [], []
    for r, s in zip(sizes, shape):
        inter += [1, s]
        expanded += [r, s]
        final.append(r * s)
    out = L.expand(L.reshape(input, tuple(inter)), tuple(expanded))
    return L.reshape(out, tuple(final))


def tile(input: Tensor, dims) -> Tensor:
    """``repeat`` with ``dims`` padded with leading 1s to ``input``'s rank (``torch.tile``)."""
    _tensor_arg(input, "tile")
    dims = L._shape_args((dims,) if isinstance(dims, int) else tuple(dims))
    dims = (1,) * builtins.max(input.ndim - len(dims), 0) + dims
    return repeat(input, *dims)


# ----------------------------------------------------------------- triangles
def _triangle(input: Tensor, diagonal: int, lower: bool, name: str) -> Tensor:
    _tensor_arg(input, name)
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    r, c = input.shape[-2:]
    keep = np.tri(r, c, k=diagonal, dtype=bool) if lower else \
        ~np.tri(r, c, k=diagonal - 1, dtype=bool)
    return E.where(_const(keep).to(input.device), input, 0)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below ``diagonal``) of the last two dims; zeros above
    (``torch.tril``). Raises RuntimeError for fewer than 2 dims."""
    return _triangle(input, diagonal, True, "tril")


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above ``diagonal``) of the last two dims; zeros below
    (``torch.triu``). Raises RuntimeError for fewer than 2 dims."""
    return _triangle(input, diagonal, False, "triu")


# ------------------------------------------------------------------ closeness
def isclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` as a bool tensor, equal
    infinities close, NaN close to NaN only with ``equal_nan`` (``torch.isclose``)."""
    _tensor_arg(input, "isclose")
    other = tracing_hook.as_number(other)   # a number takes the number's path below
    a = input.detach()
    b = other.detach() if isinstance(other, Tensor) else other
    with np.errstate(invalid="ignore"):
        return _isclose(a, b, rtol, atol, equal_nan)


def _isclose(a, b, rtol, atol, equal_nan):
    if not a.dtype.is_floating_point and not (isinstance(b, Tensor)
                                              and b.dtype.is_floating_point):
        return E.eq(a, b)
    diff = E.abs_(a - b)
    within = E.logical_and(E.le(diff, E.abs_(b * 1.0) * rtol + atol), E.ne(diff, math.inf))
    close = E.logical_or(E.eq(a, b), within)  # infinities are close only to themselves
    if equal_nan:
        close = E.logical_or(close, E.logical_and(E.ne(a, a), E.ne(b, b)))
    return close


def allclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every element is ``isclose`` (``torch.allclose``); a Python bool, so it
    needs concrete values (under ``@ng.jit`` it raises TracingError)."""
    return not bool(R.sum_p(E.logical_not(isclose(input, other, rtol, atol, equal_nan)),
                            dim=None, keepdim=False))


# ------------------------------------------------------------- softmax family
def _shift(x, dim):
    """The detached max along ``dim`` (keepdim), subtracted so exp never overflows; over an
    empty dim, where amax raises (as torch's does), there is nothing to shift: zeros."""
    d = x.detach()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if x.ndim and any(x.shape[k] == 0 for k in dims):
        return R.sum(d * 0, dim, keepdim=True)
    return R.amax(d, dim, keepdim=True)


def _logsumexp_parts(x, dim):
    # Subtract the (detached) max so exp never overflows; the max cancels exactly
    # in the gradient, so detaching it changes nothing but the numerics.
    m = _shift(x, dim)
    shifted = x - m
    return shifted, E.log(R.sum(E.exp(shifted), dim, keepdim=True))


def softmax(x, dim, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed stably (``torch.softmax``, ``jax.nn.softmax``).

    Raises IndexError for a dim out of range."""
    if dtype is not None:
        x = x.to(dtype)
    e = E.exp(x - _shift(x, dim))
    return e / R.sum(e, dim, keepdim=True)


def log_softmax(x, dim, dtype=None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed stably (``torch.log_softmax``,
    ``jax.nn.log_softmax``). Raises IndexError for a dim out of range."""
    if dtype is not None:
        x = x.to(dtype)
    fused = _losses.log_softmax(x, dim)  # one node eagerly (LogSoftmaxBackward0)
    if fused is not None:
        return fused
    shifted, lse = _logsumexp_parts(x, dim)
    return shifted - lse


def logsumexp(x, dim, keepdim=False) -> Tensor:
    """``log(sum(exp(x), dim))`` computed without overflow (``torch.logsumexp``,
    ``jax.scipy.special.logsumexp``). Raises IndexError for a dim out of range.
    """
    m = _shift(x, dim)
    out = E.log(R.sum(E.exp(x - m), dim, keepdim=True)) + m
    return out if keepdim else L.squeeze(out, dim)

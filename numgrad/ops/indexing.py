"""ops.indexing: ``t[index]`` and ``t[index] = v``, basic and advanced.

Room: ops. The backward of a gather is a scatter-add (repeated indices add
up), and the backward of that scatter is the gather again, so every order of
derivative is covered by these two primitives.
"""
from __future__ import annotations

import warnings

import numpy as np

import numgrad.tracing_hook as tracing_hook
import numgrad.ops.late as _late
from numgrad.ops.registry import defop


def byte_mask(a):
    """A uint8 index array read as the bool mask PyTorch still takes it for, with its
    deprecation warning."""
    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                  "torch.bool instead.", UserWarning, stacklevel=4)
    return a.astype(np.bool_)


def _check_index_dtype(a):
    # PyTorch indexes with int64 and int32 tensors (and 0-d ones of any integer dtype) only.
    if a.ndim > 0 and a.dtype in (np.int8, np.int16):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def normalize_index(index, shape=None):
    """A tuple of ints, slices, None, Ellipsis and int64/bool NumPy arrays."""
    from numgrad.tensor import Tensor
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for k in index:
        if isinstance(k, Tensor):
            lifted = tracing_hook.standin(k)  # tracing: a captured index is read per call
            if lifted is not None:
                k = lifted
            if type(k._data) is not np.ndarray and k._data.dtype == np.bool_ and \
                    hasattr(k._data, "_ng_device"):
                # An eager device mask: its count decides the result's shape, so it is read
                # on the host (as PyTorch synchronises for one) and indexes as a NumPy mask.
                k = Tensor(k._data._ng_host())
            if type(k._data) is not np.ndarray:
                if k._data.dtype.kind != "i":  # a bool or uint8 (byte) mask
                    from numgrad.errors import DataDependentError, user_location
                    raise DataDependentError(
                        f"indexing with a traced {k._data.dtype} tensor {user_location()}: a "
                        "boolean mask selects a data-dependent number of elements, so the "
                        "result has no static shape and @ng.jit runs this call eagerly (a "
                        "graph break); to compile it, use ng.where(mask, x, 0) to keep the "
                        "shape, or pass the mask as a NumPy array (a compile-time constant)")
                _check_index_dtype(k._data)
                out.append(_TracedIndex(k))  # a gather: its shape is the index's (static)
                continue
            a = k._concrete()
            if a.dtype == np.uint8:
                a = byte_mask(a)
            _check_index_dtype(a)
            if a.dtype == np.bool_ or a.ndim > 0:
                k = a.astype(np.int64) if a.dtype.kind in "iu" else a
            else:
                k = int(a)
        elif isinstance(k, (list, np.ndarray, range)):
            k = np.asarray(k)  # x[range(n), y], as PyTorch takes it: a list of ints
            if k.dtype.kind in "iu":
                k = k.astype(np.int64)
            elif k.dtype != np.bool_:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(k, (bool, np.bool_)):
            k = np.asarray(k)
        elif isinstance(k, (int, np.integer)):
            k = int(k)
        elif not (k is None or k is Ellipsis or isinstance(k, slice)):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")
        if isinstance(k, slice) and k.step is not None and k.step <= 0:
            raise ValueError("step must be greater than zero")
        out.append(k)
    return tuple(out)


def is_advanced(index):
    return any(isinstance(k, (np.ndarray, Slot)) for k in index)


class _TracedIndex:
    """An integer tensor index whose values are only known when the compiled code runs."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class Slot:
    """In the ``index`` param of ``gather``/``scatter_add``/``index_put_at``: the position
    of the ``k``-th integer index tensor, whose values arrive as the ``idx`` input (all of
    them broadcast together and stacked: ``idx[k]``)."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return type(other) is Slot and other.k == self.k

    def __hash__(self):
        return hash(("Slot", self.k))

    def __repr__(self):
        return f"idx[{self.k}]"


def _fill(index, idx):
    """``index`` with each Slot replaced by its row of ``idx``."""
    return tuple(idx[k.k] if type(k) is Slot else k for k in index)


def _fill_checked(x_shape, index, idx):
    full = _fill(index, idx)
    _check_bounds(x_shape, full)  # eager's IndexError, not NumPy's (nor garbage)
    return full


def _probe_index(index, idx):
    return _fill(index, np.zeros(idx.shape, np.int64))


def _getitem_name(p, s):
    index = p["index"]
    if is_advanced(index):
        return "IndexBackward0"
    real = [k for k in index if k is not Ellipsis and k is not None]
    if not real:
        return "UnsqueezeBackward0" if None in index else "AliasBackward0"
    return "SelectBackward0" if isinstance(real[-1], int) else "SliceBackward0"


def _abstract_getitem(x, index):
    probe = np.lib.stride_tricks.as_strided(np.zeros((), x.dtype), x.shape, (0,) * len(x.shape))
    return probe[index].shape, np.dtype(x.dtype)


def _np_getitem(x, index):
    if not is_advanced(index) and not any(k is Ellipsis for k in index):
        index = index + (Ellipsis,)  # x[1] of a 1-D array: a 0-d view, not a NumPy scalar
    return x[index]


def _np_index_add(g, shape, index):
    out = np.zeros(shape, g.dtype)
    if is_advanced(index):
        np.add.at(out, index, g)
    else:
        out[index] = g
    return out


def _np_index_put(x, v, index):
    out = x.copy()
    out[index] = v
    return out


def _saves_advanced_index(params):
    # PyTorch's IndexBackward0 and CopySlices keep their index tensors as saved variables.
    return ("index",) if is_advanced(params["index"]) else ()


getitem_p = defop("getitem", inputs=("x",), params=("index",), view=True, impl=_np_getitem,
                  abstract=_abstract_getitem, node=_getitem_name, saves=_saves_advanced_index)
index_add_p = defop("index_add", inputs=("g",), params=("shape", "index"),
                    node="IndexAddBackward0", impl=_np_index_add,
                    abstract=lambda g, shape, index: (tuple(shape), g.dtype))
index_put_p = defop("index_put", inputs=("x", "v"), params=("index",), node="CopySlices",
                    impl=_np_index_put, abstract=lambda x, v, index: (x.shape, x.dtype),
                    saves=lambda params: ("index",))

# The same three with integer index tensors that are values in a compiled graph: the
# indices are an input (``idx``), so the shapes are static and the values run-time. They
# run as NumPy steps between kernels; the backward saves the indices, never ``x``.
gather_p = defop("gather", inputs=("x", "idx"), params=("index",), node="IndexBackward0",
                 impl=lambda x, idx, index: x[_fill_checked(x.shape, index, idx)],
                 abstract=lambda x, idx, index: _abstract_getitem(x, _probe_index(index, idx)))
scatter_add_p = defop("scatter_add", inputs=("g", "idx"), params=("shape", "index"),
                      node="IndexAddBackward0",
                      impl=lambda g, idx, shape, index: _np_index_add(
                          g, shape, _fill_checked(shape, index, idx)),
                      abstract=lambda g, idx, shape, index: (tuple(shape), g.dtype))
index_put_at_p = defop("index_put_at", inputs=("x", "v", "idx"), params=("index",),
                       node="CopySlices",
                       impl=lambda x, v, idx, index: _np_index_put(
                           x, v, _fill_checked(x.shape, index, idx)),
                       abstract=lambda x, v, idx, index: (x.shape, x.dtype))
gather_p.defvjp(lambda g, idx, x_shape, index: scatter_add_p(g, idx, shape=x_shape, index=index),
                None)
scatter_add_p.defvjp(lambda g, idx, index: gather_p(g, idx, index=index), None)
index_put_at_p.defvjp(
    lambda g, idx, index: index_put_at_p(g, _zero_like_scalar(g), idx, index=index),
    lambda g, idx, index: gather_p(g, idx, index=index), None)


def _zero_like_scalar(g):
    from numgrad.tensor import Tensor
    return Tensor._make(np.zeros((), g._data.dtype))


def _stack_indices(index):
    """``(template, idx)``: traced index tensors replaced by Slots, and their values
    broadcast together and stacked into one int64 tensor (None if there are none)."""
    traced = [k.tensor for k in index if type(k) is _TracedIndex]
    if not traced:
        return index, None
    from numgrad.ops.dispatch import broadcast_shapes
    from numgrad.ops.layout import expand, stack
    shape = broadcast_shapes(*[t.shape for t in traced])
    ts = [t if t.dtype.np == np.int64 else t.long() for t in traced]
    idx = stack([t if t.shape == shape else expand(t, shape) for t in ts], 0)
    slots = iter(range(len(traced)))
    template = tuple(Slot(next(slots)) if type(k) is _TracedIndex else k for k in index)
    return template, idx


getitem_p.defvjp(lambda g, x_shape, index: index_add_p(g, shape=x_shape, index=index))
index_add_p.defvjp(lambda g, index: getitem_p(g, index=index))


def _index_put_x_vjp(g, index):
    from numgrad.tensor import Tensor
    return index_put_p(g, Tensor._make(np.zeros((), g._data.dtype)), index=index)


index_put_p.defvjp(_index_put_x_vjp, lambda g, index: getitem_p(g, index=index))
_late.index_put_p, _late.is_advanced = index_put_p, is_advanced  # (for ops.views)


def _traced_masks(index):
    """The positions in ``index`` (a tuple or one entry) of traced bool tensors, whose
    counts decide the shape of what they select."""
    from numgrad.ops.masked import traced
    from numgrad.tensor import Tensor
    entries = index if isinstance(index, tuple) else (index,)
    return [i for i, k in enumerate(entries)
            if isinstance(k, Tensor) and k.dtype.np == np.bool_ and traced(k)]


def _with_masks(index, at, masks):
    entries = list(index if isinstance(index, tuple) else (index,))
    for i, m in zip(at, masks):
        entries[i] = m
    return tuple(entries)


def _mask_message():
    from numgrad.errors import user_location
    return (f"indexing with a traced bool tensor {user_location()}: a boolean mask selects a "
            "data-dependent number of elements, so the result has no static shape and @ng.jit "
            "breaks the graph there (compiled segments around an eager step); "
            "ng.where(mask, x, 0) keeps the shape and compiles as one graph")


def getitem(x, index):
    """``x[index]`` with NumPy semantics (PyTorch's for the cases both define)."""
    at = _traced_masks(index)
    if at:  # a graph break (compiler.graph_break): computed eagerly between compiled segments
        from numgrad.ops.masked import data_dependent
        entries = index if isinstance(index, tuple) else (index,)
        return data_dependent(_mask_message, lambda x, *ms: getitem(x, _with_masks(
            index, at, ms)), x, *[entries[i] for i in at])
    index = normalize_index(index)
    template, idx = _stack_indices(index)
    if idx is not None:
        return gather_p(x, idx, index=template)
    _check_bounds(x.shape, index)
    return getitem_p(x, index=index)


def _check_bounds(shape, index):
    dim = 0
    n_real = sum(1 for k in index if k is not None and k is not Ellipsis)
    for k in index:
        if k is Ellipsis:
            dim += len(shape) - n_real
            continue
        if k is None:
            continue
        if isinstance(k, int):
            if dim >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            size = shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size "
                                 f"{size}")
        if type(k) is _TracedIndex:  # checked when the compiled code runs (see _fill_checked)
            dim += 1
            continue
        if isinstance(k, np.ndarray) and k.dtype != np.bool_ and k.size and dim < len(shape):
            size = shape[dim]
            if k.max() >= size or k.min() < -size:
                bad = int(k.max() if k.max() >= size else k.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size "
                                 f"{size}")
        dim += k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1


def index_put(x, index, value):
    """Out-of-place ``x[index] = value`` (the graph op behind ``__setitem__``)."""
    from numgrad.tensor import Tensor
    at = _traced_masks(index)
    if at:
        return _index_put_traced_mask(x, index, at, value)
    index = normalize_index(index)
    _check_bounds(x.shape, index)
    if not isinstance(value, Tensor):
        value = Tensor._make(np.asarray(value, x._data.dtype))
    elif value.dtype is not x.dtype:
        value = value.to(x.dtype)
    template, idx = _stack_indices(index)
    if idx is not None:
        return index_put_at_p(x, value, idx, index=template)
    return index_put_p(x, value, index=index)


def _index_put_traced_mask(x, index, at, value):
    """``x[mask] = value`` with a traced mask: one value for every selected place is a
    ``where`` (a static shape, so it compiles, and its gradients are the write's); otherwise
    a graph break, the write computed eagerly between compiled segments."""
    from numgrad.ops.elementwise import where
    from numgrad.ops.layout import reshape
    from numgrad.ops.masked import data_dependent
    from numgrad.tensor import Tensor
    entries = index if isinstance(index, tuple) else (index,)
    mask = entries[at[0]]
    if not isinstance(value, Tensor):
        value = Tensor._make(np.asarray(value, x._data.dtype))
    elif value.dtype is not x.dtype:
        value = value.to(x.dtype)
    if len(entries) == 1 and value.ndim == 0 and tuple(mask.shape) == tuple(
            x.shape[:mask.ndim]):
        m = mask if mask.ndim == x.ndim else reshape(mask, tuple(mask.shape) + (1,) * (
            x.ndim - mask.ndim))
        return where(m, value, x)
    return data_dependent(_mask_message, lambda x, v, *ms: index_put(x, _with_masks(
        index, at, ms), v), x, value, *[entries[i] for i in at])

"""ops.views: how a view was made from its base, so in-place ops on it reach the base.

Room: ops. A view records its *chain*: the view primitives (getitem, reshape,
permute, expand) with their params, applied in order to its root base (the
tensor that owns the storage). An in-place op on a view then rewrites the
root's history functionally, as PyTorch's CopySlices and functionalisation do:

    new_root = put_1(root, put_2(I_1, ... put_k(I_{k-1}, new_view)))

where ``I_j`` is the root seen through the first ``j`` steps and ``put`` is the
inverse of a step (``index_put`` for a slice, the inverse permutation, a reshape
back). The result is ordinary ops, so the gradient is right by construction,
and the traced payloads of ``@ng.jit`` (which share no storage) get their new
values the same way: the root, and every live view of it, are rebound. CUDA payloads
are flat buffers, so their views (but reshapes) are copies: they get their new values
the same way too, written into their own memory (``store``), so memory shared outside
numgrad (DLPack, ``__cuda_array_interface__``) stays shared.

Traced payloads carry no data, so whether a reshape is a view is decided as
NumPy would decide it, by replaying the chain on a strided *stand-in* of the
root: a one-element buffer with the strides eager mode's array would have. The
tracer keeps a stand-in on each value whose eager layout is not C-contiguous
(``result_standin``: views, and NumPy's keep-the-input-order rule for
elementwise results such as ``x.T * 2``); plan inputs are made C-contiguous.
"""
from __future__ import annotations

import weakref

import numpy as np

import numgrad.ops.late as _late
from numgrad.tensor import Tensor


class _Detach:
    """``detach()`` as a step of a view chain: a traced ``x.detach()`` aliases x's values
    (eagerly it shares x's storage), so writes through either must reach the other."""

    name = "detach"

    def __call__(self, t):
        return t.detach()

    @staticmethod
    def impl(a):
        return a

    def __repr__(self):
        return "detach"


DETACH = _Detach()


def through_detach(chain):
    return any(p is DETACH for p, _ in chain)


def is_traced(t):
    return type(t._data) is not np.ndarray


def root_and_chain(t):
    """``(root, chain)`` of ``t``: ``(t, ())`` for a tensor that is no view."""
    if t._base is None:
        return t, ()
    return t._base, t._view_chain


def record(out, base, prim, params):
    """Make ``out`` (the result of view primitive ``prim`` on ``base``) a view of base's root."""
    root, chain = root_and_chain(base)
    out._base = root
    out._view_chain = None if chain is None else chain + ((prim, params),)
    if is_traced(out) or root.grad_fn is not None or not root._requires_grad:
        # Kept (weakly) so that an in-place op on any member of the family can update the
        # others: traced values are rebound, and histories regenerated as PyTorch does.
        # (Not for views of a leaf that requires grad: an in-place op on that family is
        # refused while recording, and under no_grad leaves histories as they are.)
        views = root._views if _has_views(root) else None
        if views is None:
            views = root._views = []
        views.append(weakref.ref(out))
        if len(views) >= 64 and not len(views) & (len(views) - 1):
            live_views(root)  # drop dead references now and then (a view per loop step)


def _has_views(t):
    try:
        return t._views is not None
    except AttributeError:
        return False


def _stand_in(shape, dtype):
    """A C-contiguous array of ``shape`` over one element: only its strides are real."""
    dtype = np.dtype(dtype)
    strides, step = [], dtype.itemsize
    for s in reversed(shape):
        strides.append(step)
        step *= max(int(s), 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), tuple(shape),
                                           tuple(reversed(strides)), writeable=False)


def _step_view(a, prim, params):
    """``prim`` applied to the stand-in ``a`` without reading it; None if NumPy would copy."""
    name = prim.name
    if name == "reshape":
        try:
            return np.reshape(a, params["shape"], copy=False)
        except ValueError:
            return None
    if name == "getitem":
        if _late.is_advanced(params["index"]):
            return None
    return prim.impl(a, **params)


def layout_standin(a):
    """A stand-in with the strides of the concrete array ``a``; None if ``a`` is C-contiguous
    (a traced input with a caller's transposed or sliced layout reshapes as eager does)."""
    if a.flags.c_contiguous:
        return None
    return np.lib.stride_tricks.as_strided(np.zeros(1, a.dtype), a.shape, a.strides,
                                           writeable=False)


def standin(data):
    """The strided stand-in of a traced value: C-contiguous unless the tracer kept one."""
    a = getattr(data, "_ng_standin", None)
    return a if a is not None else _stand_in(data.shape, data.dtype)


_KEEP_ORDER = ("where", "to_dtype")  # np.where and astype keep their inputs' order too


def result_standin(prim, ins, params, shape, dtype):
    """The stand-in of ``prim``'s eager result, or None where it is C-contiguous."""
    if prim.view:
        a = _step_view(standin(ins[0]), prim, params)
        return None if a is None or a.flags.c_contiguous else a
    if not (prim.kind in ("elementwise", "compare") or prim.name in _KEEP_ORDER):
        return None
    if all(getattr(v, "_ng_standin", None) is None for v in ins):
        return None  # all C-contiguous: so is the result
    return _k_order(ins, tuple(shape), dtype)


def _k_order(ins, shape, dtype):
    # Ask NumPy's own iterator which axis order an elementwise result gets (order="K"),
    # on proxies of at most 2 per axis with the operands' strides (nothing is read).
    small = tuple(min(s, 2) for s in shape)
    proxies = []
    for v in ins:
        b = np.broadcast_to(standin(v), shape)
        proxies.append(np.lib.stride_tricks.as_strided(np.zeros(1, b.dtype), small, b.strides,
                                                       writeable=False))
    try:
        it = np.nditer(proxies + [None], flags=["zerosize_ok"],
                       op_flags=[["readonly"]] * len(proxies) + [["writeonly", "allocate"]],
                       order="K", op_dtypes=[p.dtype for p in proxies] + [np.dtype(dtype)])
    except (ValueError, TypeError):
        return None
    st = it.operands[-1].strides
    perm = sorted(range(len(shape)), key=lambda i: (-abs(st[i]) if small[i] > 1 else 0, i))
    if perm == sorted(perm):
        return None
    strides, step = [0] * len(shape), np.dtype(dtype).itemsize
    for i in reversed(perm):
        strides[i] = step
        step *= max(shape[i], 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, tuple(strides),
                                           writeable=False)


def traced_is_view(base, prim, params):
    """Would eager mode's NumPy return a view here? (for payloads without strides)"""
    root, chain = root_and_chain(base)
    if chain is None:
        return False
    a = standin(root._data)
    for p, pa in chain + ((prim, params),):
        a = _step_view(a, p, pa)
        if a is None:
            return False
    return True


def replay(t, chain):
    """``t`` seen through ``chain`` (recording autograd as usual)."""
    for prim, params in chain:
        t = prim(t, **params)
    return t


def _overlap_error():
    return RuntimeError("unsupported operation: more than one element of the written-to tensor "
                        "refers to a single memory location. Please clone() the tensor before "
                        "performing the operation.")


# name -> put(inter, new, params): the inverse of a view row defined above this module
# (``ops.diagonals``' ``diagonal``), filled in by its module.
PUTS = {}


def _put(inter, new, prim, params):
    """The value ``inter`` takes when ``prim(inter)`` (a view of it) becomes ``new``."""
    name = prim.name
    if prim is DETACH:
        return new
    if name in PUTS:
        return PUTS[name](inter, new, params)
    if name == "getitem":
        return _late.index_put_p(inter, new, index=params["index"])
    if name == "permute":
        inv = tuple(np.argsort(params["dims"]).tolist())
        return prim(new, dims=inv, op="permute")
    if name == "reshape":
        return prim(new, shape=inter.shape, op="view")
    if name == "expand":
        shape, src = params["shape"], inter.shape
        lead = len(shape) - len(src)
        if any(s != 1 for s in shape[:lead]) or any(
                a != b for a, b in zip(src, shape[lead:])):
            raise _overlap_error()
        return _late.reshape_p(new, shape=src, op="view")
    raise NotImplementedError(f"in-place write-back through a {name} view")


def write_back(root, chain, new):
    """The root's new value when the view ``replay(root, chain)`` becomes ``new``."""
    inters = [root]
    for prim, params in chain[:-1]:
        inters.append(prim(inters[-1], **params))
    for (prim, params), inter in zip(reversed(chain), reversed(inters)):
        new = _put(inter, new, prim, params)
    return new


def live_views(root):
    """The traced views of ``root`` still alive (dead references are dropped)."""
    if not _has_views(root):
        return []
    out, keep = [], []
    for ref in root._views:
        v = ref()
        if v is not None and v._base is root:
            out.append(v)
            keep.append(ref)
    root._views = keep
    return out


def write_into(t, data):
    """Write ``data`` into the memory of ``t``'s device payload (``_ng_write``: a CUDA
    tensor's in-place result); False where ``t``'s payload takes no writes (traced)."""
    write = getattr(t._data, "_ng_write", None)
    return write is not None and write(data)


def store(t, data):
    """Make ``t`` hold the value ``data``: written into a device payload's memory, so that
    what shares it outside numgrad (DLPack, ``__cuda_array_interface__``) sees it; a
    traced payload, which shares no memory, is rebound."""
    if not write_into(t, data):
        t._data = data


def refresh_values(root, views=None, skip=None):
    """The live views of ``root`` (``views``: those of them already listed), but ``skip``,
    take the value ``root`` holds now, their histories untouched: a traced view is
    rebound, a device one (a copy, but for a reshape) written in its memory."""
    from numgrad.grad_mode import no_grad
    alias = Tensor._make(root._data)
    with no_grad():
        for v in live_views(root) if views is None else views:
            if v is not skip and v._view_chain is not None:
                store(v, replay(alias, v._view_chain)._data)


def store_shared(t, data):
    """``t`` takes the value ``data`` as a write into its memory would give it on the CPU,
    histories untouched: its base (through ``t``'s view chain) and the base's other views
    take it too, each in its own memory (a CUDA view, but a reshape, is a copy). What a
    compiled call's write-back into a device input does."""
    store(t, data)
    base, chain = t._base, t._view_chain
    if base is None or chain is None:
        refresh_values(t)
        return
    from numgrad.grad_mode import no_grad
    with no_grad():
        new = write_back(Tensor._make(base._data), chain, Tensor._make(data))
    store(base, new._data)
    refresh_values(base, skip=t)


def refresh_views(root, skip=None):
    """After an in-place op on ``root`` or one of its views, every other live view shows
    the new value and, as in PyTorch (which regenerates a view's grad_fn when its version
    moved on), takes its history from the root's new one. Eager views share storage, so
    only their history changes; traced views are rebound to their new values, and device
    views (copies, but for reshapes) take them in their own memory (``store``)."""
    views = live_views(root)
    if not views:
        return
    from numgrad.grad_mode import set_grad_enabled
    traced = is_traced(root)
    history = root.grad_fn is not None
    if not history:
        if traced:
            refresh_values(root, views, skip)
        return
    alias = Tensor._make(root._data, root.grad_fn, root._vc, root._output_nr)
    alias._requires_grad = root._requires_grad
    alias._accumulator = root._accumulator
    with set_grad_enabled(history):
        for v in views:
            if v is skip or v._view_chain is None:
                continue
            new = replay(alias, v._view_chain)
            if traced:
                store(v, new._data)
            if new.grad_fn is not None:
                v.grad_fn, v._output_nr, v._requires_grad = new.grad_fn, new._output_nr, True

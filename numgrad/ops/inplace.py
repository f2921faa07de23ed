"""ops.inplace: ``add_``, ``mul_``, ``x[i] = v``... as an out-of-place op written back.

Room: ops. An in-place op computes the out-of-place result (recording its
node as usual), writes it into the tensor's storage (so views and detached
aliases see it), bumps the shared version counter by one and moves the tensor
to the new node. Saved tensors that captured the old version then refuse to
unpack, which is PyTorch's "modified by an inplace operation" error.

A CUDA tensor's result is copied into its device memory (``views.store``), so memory
it shares outside numgrad (DLPack, ``__cuda_array_interface__``) sees the write, as
on the CPU. Its views other than reshapes are copies (CUDA payloads are flat), kept
in sync by ``views.refresh_views``. Traced values (``@ng.jit``) share no memory: an
in-place op rebinds them, and the compiler writes inputs back after the call.
"""
from __future__ import annotations

import numpy as np

import numgrad.dtypes as _dt
import numgrad.tracing_hook as tracing_hook
from numgrad.grad_mode import is_grad_enabled
import numgrad.ops.views as _views
from numgrad.ops.registry import defop
from numgrad.tensor import Tensor

fill_p = defop("fill", inputs=("x",), params=("value",), node="FillBackward0",
               impl=lambda x, value: np.full(x.shape, value, x.dtype),
               abstract=lambda x, value: (x.shape, x.dtype))
copy_p = defop("copy", inputs=("x", "src"), node="CopyBackwards",
               impl=lambda x, src: np.array(np.broadcast_to(src, x.shape), dtype=x.dtype),
               abstract=lambda x, src: (x.shape, x.dtype))
fill_p.defvjp(lambda g: g * 0)
copy_p.defvjp(lambda g: g * 0, lambda g: g)


def apply_inplace(self, fn, *args, **kwargs):
    """Run ``fn(self, *args)`` out of place, then make ``self`` hold the result."""
    if not isinstance(self, Tensor):
        raise TypeError(f"in-place op on {type(self).__name__}")
    if tracing_hook.capture is not None:  # tracing: a captured tensor is written back
        self = tracing_hook.capture(self)
    recording = is_grad_enabled()
    others = any(isinstance(a, Tensor) and a._requires_grad for a in args)
    # Whether the op's node may save what it reads of the tensor (which the write changes).
    saves = recording and (others or self._requires_grad or (
        self._base is not None and self._base._requires_grad))
    if recording and self.grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    # Traced: self, or an operand (a concrete tensor made inside a jitted function, updated
    # with a traced value, becomes traced itself).
    traced = type(self._data) is not np.ndarray or any(
        isinstance(a, Tensor) and type(a._data) is not np.ndarray for a in args)
    if self._base is not None and (traced or recording and (
            self._base._requires_grad or self._requires_grad or others)):
        return _inplace_on_view(self, fn, args, kwargs, recording, traced, saves)
    src = self
    if traced:
        return _functional_inplace(self, fn, args, kwargs, saves)
    if recording and (self._requires_grad or others):
        # The op's backward may need self's old value, which the write destroys: keep a
        # copy at self's place in the graph (PyTorch saves `original_self` the same way).
        src = _snapshot(self)
    out = fn(src, *args, **kwargs)
    _check_result(self, out)
    try:
        self._data[...] = out._data
    except ValueError:
        raise _views._overlap_error() from None
    self._vc.value += 1
    _take_history(self, out)
    if recording and self._base is None and _views._has_views(self):
        _views.refresh_views(self)
    return self


def _check_result(self, out):
    if out.shape != self.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(out.shape)}")
    if out.dtype is not self.dtype and out.dtype._rank > self.dtype._rank and \
            _category(out.dtype) > _category(self.dtype):
        raise RuntimeError(f"result type {_TYPE[out.dtype.name]} can't be cast to the desired "
                           f"output type {_TYPE[self.dtype.name]}")


def _take_history(self, out):
    if out.grad_fn is not None:
        self.grad_fn = out.grad_fn
        self._output_nr = out._output_nr
        self._requires_grad = True
        rebase = getattr(out.grad_fn, "_rebase_output", None)
        if rebase is not None:
            rebase(self)


def _snapshot(t, saved=True):
    """``t``'s value at ``t``'s place in the graph, with a version counter of its own
    (PyTorch's ``original_self``): a copy eagerly (of a device payload only if ``saved``:
    a node recorded on it may keep it, and the write that follows changes that memory);
    a traced value never changes."""
    data = t._data
    if type(data) is np.ndarray or (saved and hasattr(data, "_ng_write")):
        data = data.copy()
    s = Tensor._make(data, t.grad_fn, None, t._output_nr)
    s._requires_grad = t._requires_grad
    s._accumulator = t._accumulator
    return s


def _inplace_on_view(view, fn, args, kwargs, recording, traced, saves):
    # The root's history is rewritten as "root with the view's region replaced"
    # (PyTorch's CopySlices; ops.views), and the view becomes that view of the new root.
    base = view._base
    if view._view_chain is not None and _views.through_detach(view._view_chain):
        return _inplace_on_detached(view, fn, args, kwargs, saves)
    if recording and base.grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    chain = view._view_chain
    if chain is None:
        raise NotImplementedError(
            "in-place ops on this kind of view of a tensor that takes part in autograd are not "
            "supported; apply the op to the base tensor, or to a .clone() of the view")
    out = fn(_snapshot(view, saves), *args, **kwargs)
    _check_result(view, out)
    if out.dtype is not view.dtype:
        out = out.to(view.dtype)
    new_base = _views.write_back(_snapshot(base, saves), chain, out)
    written = False
    if not traced:
        try:
            view._data[...] = out._data
        except ValueError:
            raise _views._overlap_error() from None
    else:
        _views.store(base, new_base._data)
        # A device view (a copy of the base's region) takes the new values in its memory
        # too; a traced one is rebound to the view of the new base below.
        written = _views.write_into(view, out._data)
    view._vc.value += 1
    if new_base.grad_fn is not None:
        base.grad_fn, base._output_nr, base._requires_grad = \
            new_base.grad_fn, new_base._output_nr, True
    rebind = traced and not written
    if base.grad_fn is not None or rebind:
        alias = Tensor._make(base._data, base.grad_fn, base._vc, base._output_nr)
        alias._requires_grad = base._requires_grad
        alias._accumulator = base._accumulator
        new_view = _views.replay(alias, chain)
        if rebind:
            view._data = new_view._data
        if new_view.grad_fn is not None:
            view.grad_fn, view._output_nr, view._requires_grad = \
                new_view.grad_fn, new_view._output_nr, True
    _views.refresh_views(base, skip=view)
    return view


def _inplace_on_detached(view, fn, args, kwargs, saves):
    # A traced or device alias made by detach(): the root's values change, its history
    # does not (eagerly the write goes to the shared storage and nothing else happens).
    from numgrad.grad_mode import no_grad
    base = view._base
    out = fn(_snapshot(view, saves), *args, **kwargs)
    _check_result(view, out)
    if out.dtype is not view.dtype:
        out = out.to(view.dtype)
    with no_grad():
        new_base = _views.write_back(Tensor._make(base._data), view._view_chain,
                                     Tensor._make(out._data))
    _views.store(base, new_base._data)
    _views.store(view, out._data)
    view._vc.value += 1
    _take_history(view, out)
    _views.refresh_views(base, skip=view)
    return view


def _functional_inplace(self, fn, args, kwargs, saves):
    # Traced payloads are functionalised: the tensor is rebound to the new value instead
    # of written to; the compiler writes inputs back after the call. A device payload
    # gets the value computed out of place copied into its memory (views.store). The op
    # reads a snapshot, so what its backward saves is not the tensor the write bumps.
    out = fn(_snapshot(self, saves), *args, **kwargs)
    _check_result(self, out)
    if out.dtype is not self.dtype:
        out = out.to(self.dtype)
    _views.store(self, out._data)
    self._vc.value += 1
    _take_history(self, out)
    _views.refresh_views(self)
    return self


_TYPE = _dt.SCALAR_NAMES


def _category(d):
    return _dt._category(d)


def fill_(self, value) -> Tensor:
    """Fill with ``value`` in place (``torch.Tensor.fill_``). Raises RuntimeError on a leaf that
    requires grad (under grad mode).
    """
    value = _dt.checked_scalar(value, self.dtype.np)
    return apply_inplace(self, lambda s: fill_p(s, value=value))


def zero_(self) -> Tensor:
    """Fill with zeros in place (``torch.Tensor.zero_``). Raises RuntimeError on a leaf that
    requires grad (under grad mode).
    """
    return fill_(self, 0)


def copy_(self, src) -> Tensor:
    """Copy ``src``'s values (broadcast, cast) into this tensor in place; gradients flow
    to ``src`` (``torch.Tensor.copy_``). Raises TypeError unless ``src`` is a Tensor.
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    return apply_inplace(self, copy_p, src)

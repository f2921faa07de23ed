"""ops.dispatch: the one seam every op goes through.

Room: ops. Imports tensor, dtypes, grad_mode and autograd.graph (never jit).

``apply(prim, *args, **params)`` evaluates a primitive on tensors and, when
grad mode is on and an input requires grad, records an ``OpNode``. Evaluation
asks the payloads how: a NumPy array runs ``prim.impl``; a payload carrying an
``_ng_interpreter`` (the jit tracer's IR values) hands the call to it. That is
the only place tracing plugs into eager code.

Type promotion is PyTorch's (``dtypes.promote``): a Python number only lifts the
category. A traced Python number (``tracing_hook.weak``: a float argument ``@ng.jit``
traces as a 0-d float64 input) promotes as the number it stands for, so ``x_f32 * lr``
stays float32 with ``lr`` rounded to float32 as eager mode rounds it. An elementwise op
on such numbers and Python numbers alone is Python's arithmetic on them (``lr * 2``,
``lr > 1``): it computes as Python does (float64 if a float is among them, else int64:
a bool is an int) and gives a traced Python number again, where the registry says the
op has Python's bits (``python_exact``); else the trace fails and the argument stays a
constant.
"""
from __future__ import annotations

import numbers

import numpy as np

import numgrad.dtypes as _dt
import numgrad.tracing_hook as tracing_hook
from numgrad.errors import TracingError, user_location
import numgrad.autograd.anomaly as _anomaly
from numgrad.autograd.graph import (Node, SavedParam, SavedTensor, accumulator_of,
                                    _sequence, _SAVED_HOOKS, _FREED, version_error, describe)
from numgrad.autograd.saved_attrs import saved_attribute
import weakref as _weakref
from numgrad.grad_mode import is_grad_enabled, _state as _grad_state
from numgrad.tensor import Tensor
from numgrad.size import broadcast_shapes  # noqa: F401  (ops.broadcast_shapes)
import numgrad.ops.late as _late
import numgrad.malloc_tuning as _malloc_tuning
import numgrad.ops.views as _views

_ndarray = np.ndarray
_generic = np.generic
_make = Tensor._make
_new = object.__new__
BROADCASTING = ("elementwise", "compare")  # kinds whose operands dispatch broadcasts

# NOTE: PyTorch computes log(-1), 1/0 and exp(1000) silently (NaN, inf); NumPy's kernels warn.
# Each impl runs with NumPy's floating-point errors ignored, for its own call only, so the
# user's NumPy code keeps its warnings. NumPy keeps that state in a context variable: setting
# it costs about 0.4 us per op, ``with np.errstate(all="ignore")`` about 1.1 us. (A warnings
# filter would cost nothing, but any ``warnings.catch_warnings`` around ``import numgrad`` -
# pytest's, for one - drops it again.)
try:
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
    _QUIET_FP = _make_extobj(all="ignore")
    _set_fp, _reset_fp = _extobj_contextvar.set, _extobj_contextvar.reset
except ImportError:  # a NumPy that keeps it elsewhere: the public, slower spelling
    _set_fp = None


# Whether eager mode has yet to make an array of ``malloc_tuning.EAGER_LARGE`` bytes: the
# first one sets glibc's thresholds (``malloc_tuning.tune``, once per process; the
# NUMGRAD_MALLOC_TUNING flag opts out), as the first compile does.
_untuned = True
_LARGE = _malloc_tuning.EAGER_LARGE


def _tune_malloc():
    global _untuned
    _untuned = False
    _malloc_tuning.tune()


def run_impl(prim, datas, params):
    """``prim.impl`` over NumPy arrays, silent about NaN and inf as PyTorch's kernels are
    (``prim.quiet``: the ops that compute at all)."""
    if not prim.quiet:
        return prim.impl(*datas, **params)
    if _set_fp is None:
        with np.errstate(all="ignore"):
            return prim.impl(*datas, **params)
    token = _set_fp(_QUIET_FP)
    try:
        return prim.impl(*datas, **params)
    finally:
        _reset_fp(token)


def evaluate(prim, datas, params):
    """Run ``prim`` on payloads (no autograd): NumPy eagerly, else the payload's interpreter."""
    for d in datas:
        if type(d) is not _ndarray:
            interp = getattr(d, "_ng_interpreter", None)
            if interp is not None:
                return _innermost(datas, interp).process(prim, datas, params)
    if prim.quiet and _set_fp is not None:  # run_impl, inlined: every eager op comes here
        token = _set_fp(_QUIET_FP)
        try:
            out = prim.impl(*datas, **params)
        finally:
            _reset_fp(token)
    else:
        out = run_impl(prim, datas, params)
    if type(out) is _ndarray:
        if _untuned and out.nbytes >= _LARGE:
            _tune_malloc()
        return out
    if hasattr(out, "_ng_device"):  # a device payload (to_device)
        return out
    return np.asarray(out)


def _innermost(datas, interp):
    """The interpreter that sees a call first: a transform level (``ng.func.vmap``, forward
    mode) has an ``_ng_depth``, the later the deeper; a trace has none (0), so a transform
    running inside ``@ng.jit`` handles its values before the tracer records them."""
    best = getattr(interp, "_ng_depth", 0)
    for d in datas:
        other = getattr(d, "_ng_interpreter", None)
        if other is not None and getattr(other, "_ng_depth", 0) > best:
            interp, best = other, other._ng_depth
    return interp


def _type_error(prim, x):
    return TypeError(f"{prim.name}(): expected a Tensor or a number, but got "
                     f"{type(x).__name__}; wrap arrays with ng.tensor(...)")


def promote_operands(prim, args):
    """Tensors stay as given (they are what the graph records); scalars become 0-d
    tensors; payloads are cast to the common dtype, as PyTorch's type promotion says."""
    if prim.check is not None:
        error = prim.check(args)
        if error is not None:
            raise error
    n = len(args)
    if n == 1:
        a = args[0]
        if type(a) is Tensor and (not prim.floating or a._data.dtype.kind == "f"):
            return args, [a._data]
    elif n == 2:
        a, b = args
        ta, tb = type(a), type(b)
        if ta is Tensor:
            da = a._data
            if tb is Tensor:
                db = b._data
                if da.dtype == db.dtype and (da.dtype.kind == "f" or not prim.floating):
                    return args, [da, db]
            elif ((tb is float or tb is int) and da.dtype.kind == "f"
                  and (type(da) is _ndarray or not getattr(da, "_ng_weak", False))):
                s = _make(np.array(b, da.dtype))
                return (a, s), [da, s._data]
        elif tb is Tensor and (ta is float or ta is int):
            db = b._data
            if db.dtype.kind == "f" and (type(db) is _ndarray
                                         or not getattr(db, "_ng_weak", False)):
                s = _make(np.array(a, db.dtype))
                return (s, b), [s._data, db]
    keys = []
    for a in args:
        if isinstance(a, Tensor):
            if getattr(a._data, "_ng_weak", False):  # keyed as the Python number it is
                d = a.dtype
                keys.append((_dt.default_float if d.is_floating_point else d, 0, True))
            else:
                keys.append((a.dtype, a.ndim, False))
        elif isinstance(a, (numbers.Number, np.bool_)) and not isinstance(a, complex):
            keys.append((_dt.of_scalar(a), 0, True))
        else:
            raise _type_error(prim, a)
    rd = _dt.promote(keys)
    if prim.floating and not rd.is_floating_point:
        rd = _dt.default_float
    return _operands_in(args, rd.np)


def _operands_in(args, dt):
    """``(tensors, payloads)`` of ``args`` computed in the NumPy dtype ``dt``: numbers
    become 0-d tensors of it, payloads of another dtype are cast."""
    tensors = [a if isinstance(a, Tensor) else _make(_dt.wrapped_scalar(a, dt)) for a in args]
    datas = []
    for t in tensors:
        d = t._data
        if d.dtype != dt:
            d = evaluate(to_dtype_prim(), [d], {"dtype": dt})
        datas.append(d)
    return tensors, datas


def to_dtype_prim():
    return _late.to_dtype  # defined with the other unary ops (ops.elementwise)


def apply(prim, *args, **params):
    """Evaluate ``prim`` on ``args`` and record its backward node when grad mode asks."""
    if tracing_hook.capture is None:
        # The eager fast path (see ``_FAST``): NumPy payloads that need no promotion.
        out = (_FAST.get(prim) or _fast_entry(prim))(args, params)
        if out is not None:
            return out
    return _apply_general(prim, args, params)


def _apply_general(prim, args, params):
    """``apply`` for every call: traced, transformed, device payloads, promotion, views."""
    weak = False
    if tracing_hook.capture is not None:  # a trace is running: lift captured tensors
        args = _lift(prim, args)
        weak = prim.kind in BROADCASTING and _python_numbers_only(prim, args)
    if prim.kind in BROADCASTING:
        tensors, datas = (_python_operands(prim, args) if weak else
                          promote_operands(prim, args))
        if len(datas) != len(prim.inputs):
            raise _arity_error(prim, args)
        try:
            out_data = evaluate(prim, datas, params)
        except ValueError:
            broadcast_shapes(*[d.shape for d in datas])  # PyTorch's message if that was it
            raise
        if weak:  # Python arithmetic on Python numbers gives a Python number
            out_data._ng_weak = True
    else:
        tensors = args[0] if prim.variadic else args
        if len(tensors) != len(prim.inputs) and not prim.variadic:
            raise _arity_error(prim, args)
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"{prim.name}(): argument must be Tensor, not {type(t).__name__}")
        datas = [t._data for t in tensors]
        out_data = evaluate(prim, datas, params)
    vc = None
    if prim.view:
        d0 = datas[0]
        if type(out_data) is _ndarray:
            if out_data is not d0 and _shares(out_data, d0):
                vc = tensors[0]._vc
        elif _views.traced_is_view(tensors[0], prim, params):
            vc = tensors[0]._vc  # traced: a view where eager's NumPy would return one
    needed = None
    if prim.vjps is not None and is_grad_enabled():
        needed = _needed_inputs(prim, tensors)
    out = (record(prim, params, tensors, needed, out_data, vc) if needed else
           _make(out_data, None, vc))
    if vc is not None:
        _views.record(out, tensors[0], prim, params)
    return out


# The eager fast path: per primitive, a function built on its first eager call (``_fast_entry``)
# that settles once what the general path asks on every call (its kind, arity, promotion
# rule, check, quiet-FP need, vjp rules and save plans) and so does per call only: look at
# the operands, run the kernel, build the node. It serves NumPy payloads of one and two
# inputs that need no promotion (tensors of one dtype, or a floating tensor and a Python
# number); anything else (a trace, a transform's or device payload, mixed dtypes, a view,
# a variadic op) returns None and takes ``_apply_general``, which is the reference.
_FAST = {}


def _never(args, params):
    return None


def _fast_entry(prim):
    fast = _FAST[prim] = (_never if prim.variadic or prim.view or not prim.inputs
                          or (len(prim.inputs) > 2 and prim.kind in BROADCASTING)
                          else _build_fast(prim))
    return fast


def forget_fast_path(prim):
    """Drop what was settled for ``prim`` (its rules changed: ``Primitive.defvjp``)."""
    _FAST.pop(prim, None)
    _SAVE_PLANS.pop(prim, None)


def _build_fast(prim):
    quiet = prim.quiet and _set_fp is not None
    bcast = prim.kind in BROADCASTING
    floating = prim.floating and bcast
    check = prim.check if bcast else None  # the general path checks promoted kinds only
    rules = prim.vjps
    n_in = len(prim.inputs)
    two = n_in == 2
    if rules is None:
        grad0 = grad1 = False
    else:
        grad0, grad1 = rules[0] is not None, two and rules[1] is not None

    def kernel(datas, params):
        token = _set_fp(_QUIET_FP) if quiet else None
        try:
            out = prim.impl(*datas, **params)  # read per call: a test may swap it
        except ValueError:
            if bcast:  # PyTorch's message where the shapes were the cause
                broadcast_shapes(*[d.shape for d in datas])
            raise
        finally:
            if token is not None:
                _reset_fp(token)
        if type(out) is _ndarray:
            if _untuned and out.nbytes >= _LARGE:
                _tune_malloc()
            return out
        if isinstance(out, _generic):  # a full reduction's NumPy scalar (no hasattr miss)
            return np.asarray(out)
        return out if hasattr(out, "_ng_device") else np.asarray(out)

    def unary(args, params):
        if len(args) != 1:
            return None
        a = args[0]
        if not isinstance(a, Tensor):
            return None
        da = a._data
        if type(da) is not _ndarray or (floating and da.dtype.kind != "f"):
            return None
        if check is not None:
            error = check(args)
            if error is not None:
                raise error
        out = kernel((da,), params)
        if grad0 and a._requires_grad and _grad_state.enabled:
            return record(prim, params, (a,), _FIRST, out)
        return _make(out)

    def binary(args, params):
        if len(args) != 2:
            return None
        a, b = args
        if isinstance(a, Tensor):
            da = a._data
            if type(da) is not _ndarray:
                return None
            if isinstance(b, Tensor):
                db = b._data
                if type(db) is not _ndarray or (bcast and (
                        da.dtype != db.dtype or (floating and da.dtype.kind != "f"))):
                    return None
            elif bcast and (type(b) is float or type(b) is int) and da.dtype.kind == "f":
                db = None
            else:
                return None
        elif (bcast and (type(a) is float or type(a) is int) and isinstance(b, Tensor)
              and type(b._data) is _ndarray and b._data.dtype.kind == "f"):
            da, db = None, b._data
        else:
            return None
        if check is not None:
            error = check(args)
            if error is not None:
                raise error
        # A Python number becomes a 0-d tensor of the other's dtype (the graph records it).
        if db is None:
            b = _make(np.array(b, da.dtype))
            db = b._data
        elif da is None:
            a = _make(np.array(a, db.dtype))
            da = a._data
        out = kernel((da, db), params)
        if rules is not None and _grad_state.enabled:
            ra = grad0 and a._requires_grad
            if grad1 and b._requires_grad:
                return record(prim, params, (a, b), _BOTH if ra else _SECOND, out)
            if ra:
                return record(prim, params, (a, b), _FIRST, out)
        return _make(out)

    def nary(args, params):
        # Three or more inputs (addmm, nll_loss): never promoted, every one a tensor.
        if len(args) != n_in:
            return None
        datas = []
        for t in args:
            if not isinstance(t, Tensor) or type(t._data) is not _ndarray:
                return None
            datas.append(t._data)
        out = kernel(datas, params)
        if rules is not None and _grad_state.enabled:
            needed = tuple([i for i, t in enumerate(args)
                            if t._requires_grad and rules[i] is not None])
            if needed:
                return record(prim, params, args, needed, out)
        return _make(out)

    return binary if two else unary if n_in == 1 else nary


def _lift(prim, args):
    # isinstance, not type(): an nn.Parameter (a Tensor subclass) must be lifted too.
    capture = tracing_hook.capture
    if prim.variadic and args and isinstance(args[0], (list, tuple)):
        return (type(args[0])(capture(a) if isinstance(a, Tensor) else a for a in args[0]),
                ) + tuple(args[1:])
    return tuple(capture(a) if isinstance(a, Tensor) else a for a in args)


def _python_numbers_only(prim, args):
    """Whether ``args`` are traced Python numbers and Python numbers alone (the result is
    then one too). Raises TracingError where the op would not give Python's bits."""
    traced = False
    for a in args:
        if tracing_hook.weak(a):
            traced = True
        elif type(a) not in (int, float, bool):
            return False
    if not traced:
        return False
    exact = prim.python_exact
    if exact is True or (exact and exact(args)):
        return True
    raise TracingError(f"{prim.name} of a Python float argument {user_location()}: compiled "
                       "code would not give the bits (or the error) Python's float arithmetic "
                       "gives, so the argument stays a constant of the plan")


def _python_operands(prim, args):
    """``promote_operands`` for Python arithmetic on Python numbers (some traced): in
    float64 if a float is among them, else int64, as Python computes (``True + True`` is
    2: a bool is an int; comparisons give the same answers on ints)."""
    if prim.check is not None:
        error = prim.check(args)
        if error is not None:
            raise error
    floating = any(a._data.dtype.kind == "f" if isinstance(a, Tensor) else type(a) is float
                   for a in args)
    return _operands_in(args, np.dtype(np.float64 if floating else np.int64))


def _arity_error(prim, args):
    return TypeError(f"{prim.name}() takes {len(prim.inputs)} tensor argument(s) {prim.inputs} "
                     f"but got {len(args)}; static parameters {prim.params} go by keyword")


def _shares(a, b):
    # NOTE: numpy returns a fresh array when reshape must copy; only real views share.
    base = getattr(a, "base", None)
    return base is not None and (base is b or base is getattr(b, "base", None)
                                 or np.may_share_memory(a, b))


def _needed_inputs(prim, tensors):
    """The indices of the inputs a node of ``prim`` computes a gradient for (they require
    grad and, but for a variadic op, have a rule); spelled out for one and two inputs, the
    common calls."""
    if prim.variadic:
        return tuple(i for i, t in enumerate(tensors) if t._requires_grad)
    rules = prim.vjps
    if len(tensors) == 1:
        return _FIRST if tensors[0]._requires_grad and rules[0] is not None else ()
    if len(tensors) == 2:
        a = tensors[0]._requires_grad and rules[0] is not None
        if tensors[1]._requires_grad and rules[1] is not None:
            return _BOTH if a else _SECOND
        return _FIRST if a else ()
    return tuple(i for i, t in enumerate(tensors) if t._requires_grad and rules[i] is not None)


_FIRST, _SECOND, _BOTH = (0,), (1,), (0, 1)
_NO_EDGE = (None, 0)


def _edge(t):
    """``graph.edge_of`` inlined for the recording path."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        acc = t._accumulator
        acc = acc() if acc is not None else None
        return (acc if acc is not None else accumulator_of(t), 0)
    return _NO_EDGE


# primitive -> {needed inputs -> (((name, input index or -1 for a variadic list), ...),
# wants_out)}: what a node saves, worked out from the rules once rather than per node.
_SAVE_PLANS = {}


def _save_plan(prim, needed):
    names = prim.inputs
    plan, seen, wants_out = [], set(), False
    for i in (range(1) if prim.variadic else needed):
        for n in prim.needs[i]:
            if n == "out":
                wants_out = True
            elif n in seen:
                continue
            elif prim.variadic and n == names[0][1:]:
                plan.append((n, -1))
            elif n in names:
                plan.append((n, names.index(n)))
            seen.add(n)
    result = _SAVE_PLANS.setdefault(prim, {})[needed] = (tuple(plan), wants_out)
    return result


def record(prim, params, tensors, needed, out_data, vc=None):
    """The output tensor of ``prim`` applied to ``tensors`` (its payload ``out_data``, its
    version counter ``vc`` if a view), with its ``OpNode``: the edges, the inputs' shapes and
    dtypes, and what the rules of the ``needed`` inputs read saved, per a plan cached per
    (primitive, needed). The hot path of every recorded op: its slots are set directly, one
    and two inputs spelled out (see docs/performance.md, eager speed)."""
    node = _new(OpNode)
    if len(tensors) == 2:
        a, b = tensors
        da, db = a._data, b._data
        node.next_functions = (_edge(a), _edge(b))
        node._shapes = (da.shape, db.shape)
        node._dtypes = (da.dtype, db.dtype)
    elif len(tensors) == 1:
        d = tensors[0]._data
        node.next_functions = (_edge(tensors[0]),)
        node._shapes = (d.shape,)
        node._dtypes = (d.dtype,)
    else:
        node.next_functions = tuple([_edge(t) for t in tensors])
        node._shapes = tuple([t._data.shape for t in tensors])
        node._dtypes = tuple([t._data.dtype for t in tensors])
    node._seq = next(_sequence)
    node._pre_hooks = node._retained = None
    node._prim, node._params, node._needed = prim, params, needed
    plans = _SAVE_PLANS.get(prim)
    plan, wants_out = (plans is not None and plans.get(needed)) or _save_plan(prim, needed)
    saved = {}
    if _SAVED_HOOKS:  # the hooks pack every saved tensor: SavedTensor runs them
        for n, i in plan:
            saved[n] = SavedTensor(tensors[i]) if i >= 0 else [SavedTensor(t) for t in tensors]
    else:
        # A saved input is kept as (tensor, its version now), checked when unpacked: no
        # SavedTensor object (one object and nine stores, ~0.4 us) per input.
        for n, i in plan:
            if i >= 0:
                t = tensors[i]
                saved[n] = (t, t._vc.value)
            else:
                saved[n] = [SavedTensor(t) for t in tensors]
    if prim.saves is not None:
        for n in prim.saves(params):
            saved[n] = SavedParam(params[n])
    node._saved = saved
    node._wants_out = wants_out
    if _anomaly.enabled:
        _anomaly.record(node)
    out = _make(out_data, node, vc)
    if wants_out:
        saved["out"] = SavedTensor(out, is_output=True)
    return out


class OpNode(Node):
    """The backward of one primitive application (``MulBackward0``...); made by ``record``."""

    __slots__ = ("_prim", "_params", "_saved", "_shapes", "_dtypes", "_needed", "_wants_out")

    def name(self):
        return self._prim.node_name(self._params, self._shapes)

    def __getattr__(self, name):  # grad_fn._saved_self and the like, by PyTorch's names
        return saved_attribute(self, name)

    @property
    def metadata(self):
        return {"primitive": self._prim.name, "params": self._params}

    def _release(self):
        saved = self._saved
        for n, s in saved.items():
            if type(s) is tuple:  # a saved input (record): a weak reference marks it freed
                saved[n] = _weakref.ref(s[0])
            elif type(s) is _weakref.ReferenceType:
                continue  # freed by an earlier release
            elif isinstance(s, list):
                for x in s:
                    x.free()
            else:
                s.free()

    def _kwargs(self, needs):
        prim = self._prim
        kw = {}
        for n in needs:
            s = self._saved.get(n)
            if type(s) is tuple:  # a saved input, as record keeps it
                t, version = s
                if t._vc.value != version:
                    raise _modified(t, version)
                kw[n] = t
            elif s is not None:
                if type(s) is _weakref.ReferenceType:
                    raise RuntimeError(_FREED)
                kw[n] = [x.unpack(self) for x in s] if isinstance(s, list) else s.unpack(self)
            elif n in self._params:
                kw[n] = self._params[n]
            elif n == "shapes":
                kw[n] = self._shapes
            elif n == "dtypes":
                kw[n] = self._dtypes
            elif n.endswith("_shape"):
                kw[n] = self._shapes[prim.inputs.index(n[:-6])]
            elif n.endswith("_dtype"):
                kw[n] = self._dtypes[prim.inputs.index(n[:-6])]
        return kw

    def apply(self, grads):
        g = grads[0]
        prim = self._prim
        n_in = len(self.next_functions)
        result = [None] * n_in
        if g is None:
            return result
        if prim.variadic:
            rule = prim.vjps[0]
            outs = rule(g, **self._kwargs(prim.needs[0]))
            for i in self._needed:
                result[i] = outs[i]
        else:
            for i in self._needed:
                result[i] = prim.vjps[i](g, **self._kwargs(prim.needs[i]))
        for i in self._needed:
            r = result[i]
            if r is None:
                continue
            if not isinstance(r, Tensor):
                raise TypeError(f"vjp of {prim.name} returned {type(r).__name__}")
            if r._data.shape != self._shapes[i]:
                r = sum_to(r, self._shapes[i])
            if r._data.dtype != self._dtypes[i]:
                r = apply(to_dtype_prim(), r, dtype=self._dtypes[i])
            result[i] = r
        return result

    def _rebase_output(self, t):
        s = self._saved.get("out")
        if s is not None:
            s.rebase(t)


def _modified(t, version):
    """SavedTensor.unpack's error for a saved input changed in place since it was saved (it
    names the tensor's grad_fn now, after the in-place op, as PyTorch does)."""
    data = t._data
    return version_error(describe(data, _dt.from_numpy_dtype(data.dtype).name), t.grad_fn,
                         t._vc.value, version)


def sum_to(g, shape):
    """Sum ``g`` down to ``shape`` (the inverse of broadcasting): unbroadcast, done once here."""
    gshape = g._data.shape
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        g = g.sum(tuple(dims), keepdim=True)   # (the ops install Tensor's methods)
    if g._data.shape != tuple(shape):
        g = g.reshape(tuple(shape))
    return g


def shape_count(n, like):
    """``n``, a number computed from shapes (a mean's element count), as an operand of an
    op with the tensor ``like``. Eager: the number itself. Traced: the 0-d constant of
    ``like``'s dtype that type promotion would make of it, marked as coming from a shape
    (``Tracer.shape_constant``), so that a shape-generic plan reads it at run time rather
    than compiling it into its kernels (one set of kernels for every batch size). A
    constant that is the same for every shape (``0.5``, ``2.0``) is never marked: it stays
    a literal the kernels fold."""
    d = like._data
    make = getattr(getattr(d, "_ng_interpreter", None), "shape_constant", None)
    if make is None or d.dtype.kind != "f" or getattr(d, "_ng_weak", False):
        return n  # eager, a device payload, or a promotion this does not mirror
    return _make(make(np.array(n, d.dtype)))

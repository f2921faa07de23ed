"""compiler.tracer: runs the user's function on IR values and records a Graph.

Room: compiler. Tracing is one more interpreter of the same ops: the eager
dispatcher finds a ``Var`` payload, sees its ``_ng_interpreter`` and hands the
primitive to ``Tracer.process`` instead of running NumPy. Grad mode, detach and
hooks reach the tracer through the same seam and become annotations.
"""
from __future__ import annotations

import threading

import numpy as np

import numgrad.tracing_hook as tracing_hook
from numgrad.compiler.ir import Eqn, Graph, Var
from numgrad.errors import TracingError
from numgrad.errors import user_location as where_in_user_code
from numgrad.grad_mode import is_grad_enabled
from numgrad.ops import structural
from numgrad.ops.dispatch import broadcast_shapes
from numgrad.ops.views import result_standin


_tls = threading.local()        # .stack: the tracers running on this thread, innermost last
_active_lock = threading.Lock()
_n_active = 0                   # tracers running on any thread


def current_tracer():
    """The innermost trace running on this thread, or None."""
    stack = getattr(_tls, "stack", None)
    return stack[-1] if stack else None


def _capture(t, owner=None):
    tracer = current_tracer()
    d = t._data
    if tracer is None or not tracing_hook.concrete(d):
        return t  # traced already (device payloads are concrete, as NumPy arrays are)
    return tracer.capture(t, owner)


class Tracer:
    """Builds a Graph from the primitives applied to its Vars."""

    def __init__(self, name="fn"):
        self.graph = Graph(name=name)
        self._const_of = {}     # id(array) -> Var
        self._keep = []         # arrays whose id() we rely on
        self._dtype_cache = {}
        self.leaf_hooks = []    # (input position, hook) registered on inputs while tracing
        self.active = True
        self.backward = False   # set while a transform runs the engine: equations are {bwd}
        # Captures: concrete tensors from outside the arguments, lifted to implicit inputs.
        self.reachable = {}     # id -> tensor: what the guard scan found a path to
        self.on_device = False  # a tensor the trace reads lives on a device (autodiff.trace)
        self.lift = None        # set by autodiff.trace: tensor -> traced input tensor
        self.captures = []      # the captured tensors, in input order (after the arguments)
        self._lifted = {}       # id(captured tensor) -> its traced stand-in
        self.constants = {}     # id -> concrete tensors read as constants (version-guarded)
        self.grad_reads = []    # (owner, grad tensor) for `.grad` read while tracing
        self.device_constants = []  # tensors made on a device inside the function

    # ------------------------------------------------------- captures
    def __enter__(self):
        global _n_active
        stack = getattr(_tls, "stack", None)
        if stack is None:
            stack = _tls.stack = []
        stack.append(self)
        with _active_lock:
            _n_active += 1
            tracing_hook.capture = _capture
        return self

    def __exit__(self, *exc):
        global _n_active
        _tls.stack.pop()
        with _active_lock:
            _n_active -= 1
            if _n_active == 0:
                tracing_hook.capture = None

    def alias_capture(self, t, stand_in):
        """Make reads of the captured tensor ``t`` see ``stand_in`` (already an input)."""
        self._lifted[id(t)] = stand_in

    def capture(self, t, owner=None):
        """The traced stand-in for a concrete tensor ``t`` read while tracing.

        A tensor that requires grad, or that the guard scan found outside the arguments,
        becomes an implicit input (its data is read at every call); anything else (a
        constant made inside the function) is baked in, guarded by its version counter."""
        got = self._lifted.get(id(t))
        if got is not None:
            return got
        if owner is not None:
            self.grad_reads.append((owner, t))
        if not (t._requires_grad or id(t) in self.reachable or owner is not None) \
                or self.lift is None:
            self.constants[id(t)] = t
            return t
        lifted = self.lift(t)
        self._lifted[id(t)] = lifted
        self.captures.append(t)
        return lifted

    # ----------------------------------------------------------- values
    def new_input(self, shape, dtype):
        v = self.graph.new_var(shape, dtype)
        v._ng_interpreter = self
        self.graph.inputs.append(v)
        return v

    def var_of(self, d):
        if isinstance(d, Var):
            if d._ng_interpreter is not self:
                raise TracingError(
                    "a value traced by another @ng.jit call leaked into this one "
                    f"{where_in_user_code()}; return tensors from jitted functions instead of "
                    "storing them in globals")
            return d
        # A device payload (a CUDA tensor made inside the function) is baked in by value:
        # a graph's constants are host arrays, which each backend places itself.
        host = getattr(d, "_ng_host", None)
        a = np.asarray(d) if host is None else host()
        v = self._const_of.get(id(d))
        if v is None and host is not None:  # its device takes part in choosing the backend
            from numgrad.tensor import Tensor
            self.device_constants.append(Tensor._make(d))
        if v is None and any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)):
            # A broadcast constant (ones(()) expanded by a vjp): keep the small base and
            # record the expand, so kernels read one value instead of a big array. (A
            # zero stride on a length-1 axis broadcasts nothing: NumPy leaves it on
            # contiguous arrays, and treating it as a broadcast recursed for ever.)
            base = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
            from numgrad.ops.layout import expand_p
            v = self.process(expand_p, [np.ascontiguousarray(base)], {"shape": a.shape})
            self._const_of[id(d)] = v
            self._keep.append(d)
            return v
        if v is None:
            v = self.graph.new_var(a.shape, a.dtype)
            v._ng_interpreter = self
            self.graph.consts[v] = a
            self._const_of[id(d)] = v
            self._keep.append(d)
        return v

    def shape_constant(self, a):
        """A new constant Var holding the array ``a``, a value computed from shapes (a
        mean's element count), marked ``from_shape``: a shape-generic plan passes it to
        its kernels at run time, so that the kernels' source does not depend on it."""
        v = self.var_of(np.asarray(a))
        v.from_shape = True
        return v

    def _new(self, shape, dtype):
        v = self.graph.new_var(shape, dtype)
        v._ng_interpreter = self
        return v

    # ------------------------------------------------------ recording
    def process(self, prim, datas, params):
        if not self.active:
            raise TracingError(f"a traced tensor was used after its @ng.jit trace ended "
                               f"{where_in_user_code()}")
        if not prim.jit:
            raise TracingError(f"op '{prim.name}' has no lowering, so @ng.jit cannot compile it "
                               f"({where_in_user_code()}); call it outside the jitted function")
        for v in params.values():  # a parameter is baked into the kernel: a number is needed
            tracing_hook.as_number(v)
        ins = [self.var_of(d) for d in datas]
        shape, dtype = self.abstract(prim, ins, params)
        out = self._new(shape, dtype)
        out._ng_standin = result_standin(prim, ins, params, shape, dtype)
        ann = {"grad": is_grad_enabled(), "bwd": True} if self.backward else {
            "grad": is_grad_enabled()}
        self.graph.eqns.append(Eqn(prim, ins, params, out, ann))
        return out

    def abstract(self, prim, ins, params):
        if prim.kind in ("elementwise", "compare"):
            shape = broadcast_shapes(*[v.shape for v in ins]) if len(ins) > 1 else ins[0].shape
            key = (prim.name, tuple(v.dtype for v in ins), _param_key(params))
            dt = self._dtype_cache.get(key)
            if dt is None:
                # Ask NumPy itself what the impl returns, so traced dtypes match eager ones.
                probe = prim.impl(*[np.ones(1, v.dtype) for v in ins], **params)
                dt = self._dtype_cache[key] = np.asarray(probe).dtype
            return tuple(shape), dt
        shape, dt = prim.abstract(*ins, **params)
        return tuple(shape), np.dtype(dt)

    def record(self, prim, ins, shape, dtype, params=None, ann=None):
        """An equation of a primitive eager mode never runs as an op (``detach``, ``hook``:
        ``ops.structural``), annotated with its name."""
        out = self._new(shape, dtype)
        a = {"grad": is_grad_enabled(), "bwd": True} if self.backward else {
            "grad": is_grad_enabled()}
        a[prim.name] = True
        self.graph.eqns.append(Eqn(prim, ins, params or {}, out, a))
        return out

    def detach(self, var):
        out = self.record(structural.detach_p, [var], var.shape, var.dtype)
        out._ng_standin = var._ng_standin  # an alias: eager's layout is its source's
        return out

    def detached(self, tensor, out):
        """``out = tensor.detach()`` shares storage eagerly: record it as an alias, so that
        in-place ops on either one reach the other (``ops.views``)."""
        from numgrad.ops import views
        views.record(out, tensor, views.DETACH, {})

    def concrete_access(self, var, reason=None):
        where = where_in_user_code()
        if var._ng_weak:
            # Caught by the runtime, which keeps the argument a constant and traces again.
            what = (f"the Python float argument {var.name}" if var.hint else
                    "a value computed from Python float arguments")
            raise TracingError(f"the value of {what} is needed as a Python number {where}: "
                               "the argument stays a constant of the plan")
        if reason == "array":
            raise TracingError(
                f"NumPy was handed a traced tensor ({var.type_str()}) {where}: inside @ng.jit, "
                "tensors have no values to give NumPy. Use numgrad's ops on tensors "
                "(ng.tanh(x), not np.tanh(x)), and turn a NumPy array into a tensor before "
                "mixing it in (x * ng.tensor(arr)).")
        if var in self._captured_vars():
            raise TracingError(
                f"the value of a tensor captured from outside the function is read {where} "
                f"({var.type_str()}): @ng.jit would freeze it into the compiled plan, so later "
                "changes to the tensor would be missed. Use tensor ops on it, or pass the "
                "value as a non-tensor argument.")
        if reason in _CONVERSIONS:
            what, why = _CONVERSIONS[reason]
            raise TracingError(f"{what.format(var.type_str())} {where}: {why}")
        raise TracingError(
            f"tensor-dependent Python control flow {where}: this needs the value "
            f"of a traced tensor ({var.type_str()}), but @ng.jit traces with shapes and dtypes "
            "only. Use ng.where(cond, a, b) to select by value, or pass the value as a "
            "non-tensor argument (it then becomes a compile-time constant).")

    def refuse_backward(self):
        raise TracingError(
            f".backward() inside an @ng.jit function {where_in_user_code()}: accumulating into "
            "leaves' .grad is a side effect the compiled plan does not replay. Return the loss "
            "and call .backward() on the result, or compute gradients inside with "
            "ng.autograd.grad(loss, inputs) or ng.value_and_grad(f).")

    def _captured_vars(self):
        return {t._data for t in self._lifted.values() if isinstance(t._data, Var)}

    def wrap_hook(self, tensor, hook):
        """A hook registered on a traced tensor becomes a boundary in the backward graph."""
        return _TracedHook(self, hook)


class _TracedHook:
    """Stands in for a user hook while the backward is traced: records a ``hook`` equation
    whose output is whatever the hook returns at run time."""

    def __init__(self, tracer, hook):
        self.tracer = tracer
        self.hook = hook
        self.__name__ = getattr(hook, "__name__", structural.hook_p.name)

    def __call__(self, g):
        from numgrad.tensor import Tensor

        var = self.tracer.var_of(g._data)
        out = self.tracer.record(structural.hook_p, [var], var.shape, var.dtype,
                                 params={"fn": self.hook})
        return Tensor._make(out)


_NO_VALUE = "inside @ng.jit tensors have shapes and dtypes but no values yet, so "
_RETURN_IT = ("return the tensor from the function and convert it outside, or compute the "
              "value outside the function and pass it in")
_STATIC = ("pass the number as a static argument (@ng.jit(static_argnums=...) or "
           "static_argnames=...: a new value compiles a new plan)")
_SCALAR = (_NO_VALUE + "there is no Python number to give. Ways out: keep it a tensor (tensor "
           "ops take a 0-d tensor wherever they take a number: x * x.max(), not "
           f"x * x.max().item()); {_RETURN_IT}; or {_STATIC}.")
# What each conversion of a traced tensor says (``Tensor._concrete(reason)``): not the
# control-flow message, since none of these lines has an ``if`` and ng.where fixes none.
_CONVERSIONS = {
    ".item()": (".item() of a traced tensor ({})", _SCALAR),
    "float()": ("float() of a traced tensor ({})", _SCALAR),
    "int()": ("int() of a traced tensor ({})", _SCALAR),
    "an index": ("a traced tensor ({}) used as a Python index", _SCALAR),
    "a format string": ("a traced tensor ({}) formatted as a number",
                        _NO_VALUE + f"there is nothing to print. Ways out: {_RETURN_IT}."),
    ".tolist()": (".tolist() of a traced tensor ({})",
                  _NO_VALUE + f"there are no numbers to list. Ways out: {_RETURN_IT}."),
    ".numpy()": (".numpy() of a traced tensor ({})",
                 _NO_VALUE + "there is no array to hand out. Ways out: use numgrad's ops on the "
                 f"tensor (ng.tanh(x), not np.tanh(x.numpy())); {_RETURN_IT}."),
    "ng.tensor()": ("ng.tensor() of a traced tensor ({})",
                    _NO_VALUE + "there is nothing to copy into a new constant. Ways out: "
                    "x.detach().clone() (a copy the compiled plan computes, as PyTorch "
                    "recommends over torch.tensor(x)), or x.clone() to stay in the graph."),
}


def _param_key(params):
    return tuple(sorted((k, repr(v)) for k, v in params.items()))

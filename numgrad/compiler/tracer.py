"""compiler.tracer: runs the user's function on IR values and records a Graph.

Room: compiler. Tracing is one more interpreter of the same ops: the eager
dispatcher finds a ``Var`` payload, sees its ``_ng_interpreter`` and hands the
primitive to ``Tracer.process`` instead of running NumPy. Grad mode, detach and
hooks reach the tracer through the same seam and become annotations.
"""
from __future__ import annotations

import numpy as np

from numgrad.compiler.ir import Eqn, Graph, Var
from numgrad.errors import TracingError, user_location as where_in_user_code
from numgrad.grad_mode import is_grad_enabled
from numgrad.ops.dispatch import broadcast_shapes


class Tracer:
    """Builds a Graph from the primitives applied to its Vars."""

    def __init__(self, name="fn"):
        self.graph = Graph(name=name)
        self._const_of = {}     # id(array) -> Var
        self._keep = []         # arrays whose id() we rely on
        self._dtype_cache = {}
        self.leaf_hooks = []    # (input position, hook) registered on inputs while tracing
        self.active = True

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
        a = np.asarray(d)
        v = self._const_of.get(id(d))
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

    def _new(self, shape, dtype):
        v = self.graph.new_var(shape, dtype)
        v._ng_interpreter = self
        return v

    # ------------------------------------------------------ recording
    def process(self, prim, datas, params):
        if not self.active:
            raise TracingError(f"a traced tensor was used after its @ng.jit trace ended "
                               f"{where_in_user_code()}")
        if prim.lowering is None:
            raise TracingError(f"op '{prim.name}' has no lowering, so @ng.jit cannot compile it "
                               f"({where_in_user_code()}); call it outside the jitted function")
        ins = [self.var_of(d) for d in datas]
        shape, dtype = self.abstract(prim, ins, params)
        out = self._new(shape, dtype)
        self.graph.eqns.append(Eqn(prim, ins, params, out, {"grad": is_grad_enabled()}))
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

    def record(self, name, ins, shape, dtype, params=None, ann=None):
        """A structural equation (``detach``, ``hook``) that is no registry primitive."""
        out = self._new(shape, dtype)
        a = {"grad": is_grad_enabled()}
        a.update(ann or {})
        self.graph.eqns.append(Eqn(name, ins, params or {}, out, a))
        return out

    def detach(self, var):
        return self.record("detach", [var], var.shape, var.dtype, ann={"detach": True})

    def concrete_access(self, var):
        raise TracingError(
            f"tensor-dependent Python control flow {where_in_user_code()}: this needs the value "
            f"of a traced tensor ({var.type_str()}), but @ng.jit traces with shapes and dtypes "
            "only. Use ng.where(cond, a, b) to select by value, or pass the value as a "
            "non-tensor argument (it then becomes a compile-time constant).")

    def wrap_hook(self, tensor, hook):
        """A hook registered on a traced tensor becomes a boundary in the backward graph."""
        return _TracedHook(self, hook)


class _TracedHook:
    """Stands in for a user hook while the backward is traced: records a ``hook`` equation
    whose output is whatever the hook returns at run time."""

    def __init__(self, tracer, hook):
        self.tracer = tracer
        self.hook = hook
        self.__name__ = getattr(hook, "__name__", "hook")

    def __call__(self, g):
        from numgrad.tensor import Tensor
        var = self.tracer.var_of(g._data)
        out = self.tracer.record("hook", [var], var.shape, var.dtype, params={"fn": self.hook},
                                 ann={"hook": True})
        return Tensor._make(out)


def _param_key(params):
    return tuple(sorted((k, repr(v)) for k, v in params.items()))

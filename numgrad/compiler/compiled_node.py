"""compiler.compiled_node: ``CompiledFunctionBackward``, the autograd node of a compiled call.

Room: compiler. ``plan.Plan.run`` records one per call that requires grad; inside the eager
engine it is a node like any other: ``apply`` runs the plan's compiled backward program
(or hands out the gradients a speculative call already computed: ``compiler.speculate``),
checks the versions of what it reads as eager nodes check their saved tensors, and under
``create_graph`` differentiates the backward itself. The one engine hook it implements is
``_runs_own_hooks``: the hooks of an output the function also used run inside its program.
Imports autograd, grad_mode and tensor.
"""
from __future__ import annotations

import threading

import numpy as np

from numgrad.autograd.graph import _FREED, Node, _sequence, describe, edge_of, version_error
import numgrad.compiler.saved_hooks as saved_hooks
from numgrad.grad_mode import is_grad_enabled
from numgrad.tensor import Tensor

_active = threading.local()


def active_backward_node():
    """The CompiledFunctionBackward whose program is running on this thread, if any."""
    return getattr(_active, "node", None)


def defined_cotangents():
    """Per cotangent slot of the backward program running on this thread, whether a
    gradient came for it (the others run as zeros); None outside such a run."""
    return getattr(_active, "defined", None)


class CompiledFunctionBackward(Node):
    """The backward of one compiled call; runs the compiled backward program."""

    __slots__ = ("_plan", "_tensors", "_arrays", "_saved", "_versions", "_outs", "_freed",
                 "_spec", "_hooked")

    def __init__(self, plan, tensors, arrays, saved):
        # Node.__init__, inlined: one of these is made per compiled call.
        self.next_functions = tuple([(t.grad_fn, t._output_nr) if t.grad_fn is not None
                                     else edge_of(t) for t in tensors])
        self._seq = next(_sequence)
        self._pre_hooks = None
        self._retained = None
        self._plan = plan
        self._tensors = tensors
        self._arrays = arrays
        self._saved = list(saved)
        self._versions = [(tensors[i], tensors[i]._vc.value) for i in plan.check_inputs]
        self._outs = []
        self._freed = False
        self._spec = None  # gradients for a cotangent of 1, computed by the call
        self._hooked = saved_hooks.pack(self, plan.check_inputs) if saved_hooks.active() \
            and plan.saves else None  # saved_tensors_hooks around the call

    def name(self):
        return "CompiledFunctionBackward"

    @property
    def num_outputs(self):
        return len(self._plan.cot_vars)

    # Outputs the function also used itself have their hooks run inside the backward
    # program (where their whole gradient is known: autodiff.OutputHooks), so the engine
    # must not run them. NOTE: under create_graph the differentiable backward re-traces the
    # function and the engine runs them as usual, on the caller's gradient alone.
    def _runs_own_hooks(self, output_nr):
        return output_nr in self._plan.effects.probed and not is_grad_enabled()

    def watch_outputs(self, outs):
        # Eager mode saves these outputs; so the error names the op eager would name.
        if self._hooked is None:
            self._outs = [(t._vc, t._vc.value, t._data, name) for t, name in outs]

    def _check_versions(self):
        for t, v in self._versions:
            if t._vc.value != v:
                self._raise_version(t._data, t._vc.value, v, t.grad_fn)
        for vc, v, data, name in self._outs:
            if vc.value != v:
                self._raise_version(data, vc.value, v, name or self.name())

    @staticmethod
    def _raise_version(data, now, expected, producer):
        raise version_error(describe(data, str(data.dtype)), producer, now, expected)

    def apply(self, grads):
        if self._freed:
            raise RuntimeError(_FREED)
        self._check_versions()
        plan = self._plan
        result = [None] * len(self._tensors)
        spec, self._spec = self._spec, None
        if spec is not None:
            plan.spec.pending -= 1
        arrays, saved = self._arrays, self._saved
        if self._hooked is not None:  # the unpack hooks run at every backward, as eagerly
            arrays, saved, spec = *saved_hooks.unpack(self), None
        if is_grad_enabled():  # create_graph: differentiate the backward itself
            gs = plan.differentiable_backward(self._tensors, grads)
            for i, g in zip(plan.grad_pos, gs):
                result[i] = g
            return result
        if plan.spec is not None and grads[0] is not None:
            if spec is not None and plan.spec.is_one(grads[0]._data):
                for i, r in zip(plan.grad_pos, spec):
                    result[i] = Tensor._make(r)
                return result
            plan.spec.saw_backward(grads[0]._data)
        args = arrays + saved
        for g, v in zip(grads, plan.cot_vars):
            if g is None:
                args.append(np.zeros(v.shape, v.dtype))
            else:  # backward(gradient) may pass another float dtype; torch casts it too
                d = g._data
                args.append(d if d.dtype == v.dtype else d.astype(v.dtype))
        # (read by the refusals of missing derivatives: autodiff.gate_refusals)
        defined, _active.defined = getattr(_active, "defined", None), [g is not None
                                                                        for g in grads]
        try:
            if plan.effects.probed:  # output hooks run inside the program: tell them whose
                prev = getattr(_active, "node", None)
                _active.node = self
                try:
                    res = plan.bwd(args)
                finally:
                    _active.node = prev
            else:
                res = plan.bwd(args)
        finally:
            _active.defined = defined
        make = Tensor._make
        for i, r in zip(plan.grad_pos, res):
            result[i] = make(r)
        return result

    def _release(self):
        if not self._plan.saves:
            return
        self._freed = True
        self._saved = None
        self._arrays = None
        self._spec = None
        self._hooked = None

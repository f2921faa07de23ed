"""compiler.graph_break: the plan of a signature whose function has a data-dependent size.

Room: compiler. ``x[x > 0]``, ``masked_select``, ``nonzero`` (and ``x[mask] = v`` with a
tensor ``v``) make a tensor whose length is a count of values, which a trace (shapes and dtypes
only) cannot know. The trace raises ``DataDependentError`` there, and ``CompiledFunction``
files a ``GraphBreakPlan`` under the call's signature, which runs the function as
``torch.compile`` runs a graph break: compiled segments with one eager step between them.

Segment k is the function traced from its start until its k-th break (``ops.masked.
data_dependent``), where the trace stops and returns the break's input tensors. Breaks before
the k-th take their results as inputs of the segment: the run computed them eagerly, from the
previous segment's outputs, with the extent known then. So a call runs segment 0 (kernels
before the first break), the eager op (NumPy), segment 1 (kernels after it, compiled for its
extent, shape-generic from a second one), and so on; the last segment returns the function's
result. Each segment is an ordinary ``CompiledFunction``: its outputs are tensors whose
``grad_fn`` is its compiled backward, and the eager op's node sits between two of them, so the
backward is split the same way (the backward of ``x[mask]`` scatters into zeros of ``x``'s
shape) and the eager engine runs it. A segment recomputes what it needs from before a break
(fused, dead code dropped) instead of receiving it, so gradients are counted once per use.

A function the segments cannot replay exactly (in-place writes to its inputs, random draws,
hooks: each would happen once per segment) runs eagerly for that signature; so does one whose
later segment cannot be traced, or takes a gradient inside itself through a break's result
(``ng.autograd.grad``: there the result is an input, ``_Boundary`` notices; a tensor first
captured after the break is not watched). Either way values, gradients and errors are eager mode's.
``trace()``, ``source()`` and ``schedule()`` of such a signature raise the first trace's error,
which names the line that broke the graph.
"""
from __future__ import annotations

import functools

import numgrad.compiler.pytree as pytree
from numgrad.compiler.autodiff import OutputHooks
from numgrad.autograd.function import Function
from numgrad.errors import TracingError
from numgrad.ops import masked

_END = object()  # computes[k]: segment k returns the function's result


class _Stop(BaseException):
    """Ends a segment's trace at its break (a BaseException: user ``except Exception`` code
    around the break must not swallow it)."""

    def __init__(self, tensors):
        super().__init__()
        self.tensors = tensors


class _SegmentRun:
    """The break context of one segment's trace (``ops.masked.data_dependent`` calls it)."""

    def __init__(self, results, stop_at, plan, k, args):
        self.results, self.stop_at, self.plan, self.k = results, stop_at, plan, k
        self.count = 0
        self.args = args

    def anchors(self):
        """The traced tensors a gradient inside the function may be taken for: the
        arguments and the tensors captured so far, that require grad."""
        from numgrad.compiler.tracer import current_tracer
        from numgrad.tensor import Tensor
        tracer = current_tracer()
        got = [t for t in pytree.flatten(self.args)[1] if isinstance(t, Tensor)]
        got += list(getattr(tracer, "_lifted", {}).values())
        return [t for t in got if t.requires_grad]

    def at_break(self, compute, tensors):
        n = self.count
        self.count += 1
        if n < self.stop_at:
            r = self.results[n]
            anchors = self.anchors()
            if isinstance(r, tuple):
                return tuple(_Boundary.apply(t, *anchors) if t.requires_grad else t for t in r)
            return _Boundary.apply(r, *anchors) if r.requires_grad else r
        self.plan.computes[self.k] = compute
        raise _Stop(tuple(tensors))


class _Boundary(Function):
    """A break's result inside a later segment, where it is an input: the segment's derived
    backward passes its gradient out (to the eager step's node) unchanged, but a gradient the
    function itself asks for (``ng.autograd.grad`` inside it) would stop here and miss the
    path through the break, so that trace fails and the signature runs eagerly."""

    @staticmethod
    def forward(ctx, x, *anchors):
        # The anchors (the arguments, the captures so far) only make the engine see a path
        # from here to them: a gradient for them walks through this node, not around it.
        ctx.n = len(anchors)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        if getattr(masked._segments, "run", None) is not None:  # the function is running
            raise TracingError("a gradient through a graph break, taken inside the function")
        return (g,) + (None,) * ctx.n


def _segment(plan, k, args, kwargs, results):
    run = _SegmentRun(results, k, plan, k, (args, kwargs))
    before = getattr(masked._segments, "run", None)
    masked._segments.run = run
    try:
        out = plan.owner.fn(*args, **kwargs)
    except _Stop as stop:
        out = stop.tensors
    else:
        plan.computes[k] = _END
    finally:
        masked._segments.run = before
    if k and _derived_inside():
        # ng.grad / value_and_grad inside the function: their gradients for its arguments
        # would miss every path through the breaks before this segment (inputs here).
        raise TracingError("a gradient through a graph break, taken inside the function")
    return out


def _derived_inside():
    """Whether the running trace recorded a derived backward (``ng.grad``, ``value_and_grad``
    and ``ng.func.grad`` mark theirs) while the function ran."""
    from numgrad.compiler.tracer import current_tracer
    tracer = current_tracer()
    return tracer is not None and any(e.ann.get("bwd") for e in tracer.graph.eqns)


def _replayable(seg_plan):
    """Whether tracing the function again from its start repeats nothing observable."""
    tr = getattr(seg_plan, "traced", None)
    if tr is None:
        return False
    return not (tr.effects.writebacks or tr.effects.leaf_hooks or any(
        e.prim.random or "calls_user" in e.prim.effects
        and not isinstance(e.params.get("fn"), OutputHooks)  # (the runtime's own)
        for e in tr.graph.eqns))


class GraphBreakPlan:
    """Stands in a ``PlanCache`` where a ``plan.Plan`` would; ``run(leaves)`` runs the
    segments and the eager steps between them (or the function eagerly, ``eager``)."""

    guard = None               # each segment guards its own trace
    weak = frozenset()         # no float traced as a value: the key holds each float
    graph_break = True

    def __init__(self, owner, tree, reason):
        self.owner = owner
        self.tree = tree
        self.reason = reason   # the DataDependentError of the first trace (the user's line)
        self.eager = False
        self.computes = {}     # k -> the eager op after segment k, or _END
        name = getattr(owner.fn, "__name__", "fn")
        self._segments = []
        self._make = lambda k: owner.sibling(  # a CompiledFunction per segment
            functools.update_wrapper(functools.partial(_segment, self, k), owner.fn,
                                     updated=()), device=owner.device, remat=owner.remat)
        if owner.verbose:
            print(f"[numgrad.jit] {name}: graph break, this signature runs in compiled "
                  f"segments ({str(reason).splitlines()[0]})")

    def guard_ok(self):
        return True

    def run(self, leaves):
        args, kwargs = pytree.unflatten(self.tree, list(leaves))
        if self.eager:
            return self.owner.fn(*args, **kwargs)
        results = []
        for k in range(len(results), 1 << 30):
            if k == len(self._segments):
                self._segments.append(self._make(k))
            seg = self._segments[k]
            try:  # (the segment's own call, split to look at its plan before it runs)
                seg_plan, seg_leaves = seg._plan((args, kwargs, tuple(results)), {})
            except Exception:  # noqa: BLE001  (the eager run raises the function's own error)
                # A later segment needs a value a trace has not, or a gradient inside the
                # function through a break's result (which is an input there).
                seg_plan = None
            ok = getattr(seg_plan, "_ng_replayable", None)
            if ok is None:
                ok = _replayable(seg_plan)
                if seg_plan is not None:
                    seg_plan._ng_replayable = ok
            if not ok:
                # Nothing observable ran yet (the earlier segments were replayable).
                self.eager = True
                return self.owner.fn(*args, **kwargs)
            out = seg_plan.run(seg_leaves)
            compute = self.computes.get(k, _END)
            if compute is _END:
                return out
            results.append(compute(*out))

    def _no_graph(self, *_):
        raise self.reason

    joint_graph = property(_no_graph)
    source = schedule = _no_graph

"""compiler.graph_break: the plan of a signature whose function has a data-dependent extent.

Room: compiler. ``x[x > 0]``, ``x[mask] = v``, ``masked_select`` and ``nonzero`` make a
tensor whose length is a count of values, which a trace (shapes and dtypes only) cannot
know. The trace raises ``DataDependentError`` there, and ``CompiledFunction`` files an
``EagerPlan`` under the call's signature instead of failing, as ``torch.compile`` falls back
to Python at a graph break: each call of that signature runs the function eagerly, so its
values, gradients (the eager graph's), hooks and errors are eager mode's by construction.
The other signatures of the same function (a mask passed as a NumPy constant, say) keep
their compiled plans. ``trace()``, ``source()`` and ``schedule()`` of such a signature raise
the trace's error, which names the line that broke the graph.
"""
from __future__ import annotations

from numgrad.compiler import pytree


class EagerPlan:
    """Stands in a ``PlanCache`` where a ``runtime.Plan`` would: ``run(leaves)`` calls the
    function eagerly with the call's arguments."""

    guard = None               # nothing traced, so nothing to re-check before a call
    weak = frozenset()         # no float traced as a value: the key holds each float
    graph_break = True

    def __init__(self, owner, tree, reason):
        self.owner = owner
        self.tree = tree
        self.reason = reason   # the DataDependentError of the trace, with the user's line
        if owner.verbose:
            print(f"[numgrad.jit] {getattr(owner.fn, '__name__', 'fn')}: graph break, this "
                  f"signature runs eagerly ({str(reason).splitlines()[0]})")

    def guard_ok(self):
        return True

    def run(self, leaves):
        args, kwargs = pytree.unflatten(self.tree, list(leaves))
        return self.owner.fn(*args, **kwargs)

    def _no_graph(self, *_):
        raise self.reason

    joint_graph = property(_no_graph)
    source = schedule = _no_graph

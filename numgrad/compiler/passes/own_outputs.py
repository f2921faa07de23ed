"""passes.own_outputs: a program never hands out one of its own constants.

Room: compiler. Run by ``pipeline.compile_graph`` on each graph a backend compiles (not
by ``optimize``: what ``trace()`` shows is unchanged).
"""
from __future__ import annotations

from numgrad.compiler.ir import Eqn


def own_outputs(graph):
    """The graph with every output that is one of its constants computed as a clone of it.

    Folding can leave a constant as an output: ``ng.ones(3)`` returned as it is, or the
    gradient of ``(2 * x).sum()``, which is an array of 2s. The caller owns what a call
    returns and may write to it (``g.mul_(0.1)``, ``b.add_(1)``); a constant handed out
    is the plan's own array, so the next call would return what the caller wrote. A
    clone is a kernel output like any other: a fresh array at every call."""
    consts = graph.consts
    if not any(v in consts for v in graph.outputs):
        return graph
    from numgrad.ops.elementwise import clone  # the registry's copy, lowered as "{0}"
    eqns, outputs, made = list(graph.eqns), [], {}
    for v in graph.outputs:
        if v in consts:
            if v not in made:
                made[v] = graph.new_var(v.shape, v.dtype, hint=v.hint)
                eqns.append(Eqn(clone, [v], {}, made[v]))
            v = made[v]
        outputs.append(v)
    return graph.copy(eqns=eqns, outputs=outputs)

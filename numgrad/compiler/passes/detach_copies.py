"""passes.detach_copies: uses of a ``detach`` result (or an identity cast) read its input.

Room: compiler. Run by the schedule builder (not by ``optimize``): the IR that
``trace()`` shows keeps its {detach} equations; only what the kernels run changes.
"""
from __future__ import annotations

from numgrad.compiler.ir import Eqn


def drop_detach_copies(graph):
    """The graph with uses of identity-at-run-time results (``detach``: its registry
    ``effects`` say it only stops the gradient) pointing at their inputs instead.

    A kernel writes every value that leaves it into an array of its own: a
    ``jit(value_and_grad)`` whose inputs are detached copied its weight matrix at every
    call before handing it to the matmul (docs/design-notes.md, "Detached inputs").
    A cast to the dtype its input has already goes the same way: what type promotion
    leaves of a traced Python float given its uses' dtype (``autodiff._narrow_weak_inputs``),
    which would otherwise be a kernel of its own, writing a one-element array."""
    from numgrad.ops.dispatch import to_dtype_prim  # the cast type promotion inserts
    cast = to_dtype_prim()
    outs = set(graph.outputs)
    rename, eqns = {}, []
    for e in graph.eqns:
        ins = [rename.get(v, v) for v in e.inputs]
        if e.out not in outs and ("stop_gradient" in e.prim.effects or (
                e.prim is cast and ins[0].dtype == e.out.dtype)):
            rename[e.out] = ins[0]
            continue
        eqns.append(e if ins == list(e.inputs) else Eqn(e.prim, ins, e.params, e.out, e.ann))
    return graph.copy(eqns=eqns) if rename else graph

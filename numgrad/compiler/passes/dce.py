"""dce: dead-code elimination — keep only equations an output (or a hook) depends on."""
from __future__ import annotations


def dce(graph):
    live = set(graph.outputs)
    keep = []
    for e in reversed(graph.eqns):
        if e.out in live or "calls_user" in e.prim.effects:
            keep.append(e)
            live.update(e.inputs)
    keep.reverse()
    consts = {v: a for v, a in graph.consts.items() if v in live}
    return graph.copy(eqns=keep, consts=consts)

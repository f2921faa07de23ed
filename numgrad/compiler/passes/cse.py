"""cse: common-subexpression elimination — one equation per (op, params, inputs)."""
from __future__ import annotations

import numpy as np

from numgrad.compiler.ir import Eqn


def _key(e, rename):
    params = tuple(sorted((k, _hashable(v)) for k, v in e.params.items()))
    return (e.name, tuple(rename.get(v, v).id for v in e.inputs), params)


def _hashable(v):
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    try:
        hash(v)
        return v
    except TypeError:
        return ("id", id(v))


def cse(graph):
    rename = {}
    seen = {}
    eqns = []
    for e in graph.eqns:
        ins = [rename.get(v, v) for v in e.inputs]
        if e.prim.effects or e.prim.random:
            eqns.append(Eqn(e.prim, ins, e.params, e.out, e.ann))
            continue
        k = _key(e, rename)
        prev = seen.get(k)
        if prev is not None and prev.shape == e.out.shape and prev.dtype == e.out.dtype:
            rename[e.out] = prev
            continue
        seen[k] = e.out
        eqns.append(Eqn(e.prim, ins, e.params, e.out, e.ann))
    outputs = [rename.get(v, v) for v in graph.outputs]
    return graph.copy(eqns=eqns, outputs=outputs)

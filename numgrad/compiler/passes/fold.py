"""fold: constant folding — run equations whose inputs are all constants at compile time."""
from __future__ import annotations

import numpy as np

from numgrad.ops.dispatch import run_impl

_MAX_FOLD = 1 << 16  # elements: larger results stay computed, not baked into the kernel
# Broadcasts are not folded: a kernel reads a broadcast scalar as a literal, where the
# folded array would be read from memory, and its size would make the kernel's source
# depend on the shape (a shape-generic plan then could not be reused across sizes).


def fold(graph):
    consts = dict(graph.consts)
    eqns = []
    for e in graph.eqns:
        if (not e.prim.effects and not e.prim.random and e.inputs
                and all(v in consts for v in e.inputs)
                and e.out.size <= _MAX_FOLD
                and not (e.prim.broadcasts and e.out.size > 1)):
            consts[e.out] = np.asarray(run_impl(e.prim, [consts[v] for v in e.inputs], e.params))
            # Computed from a shape's constant (a seed of 1 over a mean's count): one too.
            e.out.from_shape = any(v.from_shape for v in e.inputs)
            continue
        eqns.append(e)
    return graph.copy(eqns=eqns, consts=consts)

"""compiler.passes: pure ``Graph -> Graph`` rewrites, run in this order.

| pass  | what it does |
|-------|--------------|
| fold  | evaluates equations whose inputs are all constants (constant folding) |
| transpose | computes ``(A @ B).T`` as ``B.T @ A.T``, so gradients come out C-contiguous |
| cse   | merges equations that compute the same thing from the same inputs |
| dce   | drops equations nothing reads (hooks are kept: they have side effects) |

Fusion is planned after these, by ``compiler.schedule`` (which also runs
``detach_copies``, a rewrite of what kernels run, not of what ``trace()`` shows);
``pipeline.compile_graph`` first runs ``own_outputs``, so that no program hands out one
of its constants.
Set ``NUMGRAD_DEBUG_PASSES=1`` to print the graph after each pass.
"""
from __future__ import annotations


import numgrad.config as config
from numgrad.compiler.passes.fold import fold
from numgrad.compiler.passes.cse import cse
from numgrad.compiler.passes.dce import dce
from numgrad.compiler.passes.transpose import transpose

PIPELINE = [fold, transpose, cse, dce]


def optimize(graph, verbose=False):
    debug = verbose or config.get("NUMGRAD_DEBUG_PASSES")
    for p in PIPELINE:
        graph = p(graph)
        if debug:
            print(f"-- after {p.__name__} ({len(graph.eqns)} equations)\n{graph}")
    graph.verify()
    return graph

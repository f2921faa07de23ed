"""backends.cuda.one_op: the programs of eager CUDA ops, each one equation compiled alone.

Room: compiler. The eager CUDA runtime (``numgrad.cuda.eager``) sits below the ops and the
compiler; it loads this module on the first CUDA op that needs a kernel and asks it for
the op's program: the graph of that one equation, compiled with this backend (the same
renderer ``@ng.jit`` uses, not a second engine).
"""
from __future__ import annotations

import numpy as np

from numgrad.compiler.backends import cuda as backend
from numgrad.compiler import pipeline
from numgrad.compiler.ir import Eqn, Graph, Var
from numgrad.compiler.tracer import current_tracer
from numgrad.cuda.eager import _param_key
from numgrad.size import broadcast_shapes

_DTYPES = {}    # (op, input dtypes, params) -> an elementwise op's result dtype


def _abstract(prim, ins, params):
    if prim.kind in ("elementwise", "compare"):
        shape = broadcast_shapes(*[v.shape for v in ins]) if len(ins) > 1 else ins[0].shape
        key = (prim.name, tuple(v.dtype for v in ins), _param_key(params))
        dt = _DTYPES.get(key)
        if dt is None:
            probe = prim.impl(*[np.ones(1, v.dtype) for v in ins], **params)
            dt = _DTYPES[key] = np.asarray(probe).dtype
        return tuple(shape), dt
    shape, dt = prim.abstract(*ins, **params)
    return tuple(shape), np.dtype(dt)


def compile_op(prim, datas, params):
    """The CUDA program running ``prim`` on payloads shaped as ``datas``."""
    ins = [Var(i, d.shape, d.dtype) for i, d in enumerate(datas)]
    shape, dtype = _abstract(prim, ins, params)
    out = Var(len(ins), shape, dtype)
    graph = Graph(ins, [Eqn(prim, ins, params, out)], [out], name=prim.name)
    return pipeline.compile_graph(graph, backend,
                                  pipeline.Options(name=f"eager_{prim.name}", role="op"))


def traced(prim, datas, params):
    """The traced result where this thread's trace derives a gradient (the engine inside
    ``@ng.jit``) from host and CUDA constants, else None (eager mode refuses the mix)."""
    tracer = current_tracer()
    if tracer is not None and tracer.backward:
        return tracer.process(prim, datas, params)
    return None

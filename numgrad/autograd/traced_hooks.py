"""autograd.traced_hooks: a hook that reads several gradients at once, inside an ``@ng.jit`` plan.

Room: autograd. A traced backward hands Python one gradient at a time: the ``hook``
equation (``ops.structural``) calls a function with one gradient and takes what it returns
in its place. A node pre-hook on a node of several outputs, a node post-hook (which sees
``grad_inputs`` and ``grad_outputs`` together) and a module's full backward hooks need all
of a node's gradients in one call, so ``annotate`` records a short run of ``hook``
equations the plan runs in graph order, one per gradient:

    store g0        keeps g0 for this call (the identity on g0)
    store g1        ...
    fire  g2        keeps g2, calls the user's hooks with (g0, g1, g2), keeps their results
    take  g0        the result for slot 0 (the identity where the hooks replaced nothing)
    take  g1        ...

so the user's function is called once per backward, at the point eager mode calls it,
with the real gradients, and may replace the ones it is allowed to. The equations are
ordinary ``hook`` equations (never folded, merged or dropped), so every backend that runs
a tensor hook runs these, CUDA included. Nothing here imports the compiler: the tracer is
reached through the gradient's interpreter (``wrap_hook``), as ``node_hooks`` does.
"""
from __future__ import annotations

import threading

import numgrad.tracing_hook as tracing_hook


def _tracer_of(g):
    """The tracer recording ``g``'s payload, or None (a value, or one ``vmap`` batches:
    hooks are called on those directly)."""
    if g is None or tracing_hook.concrete(g._data):
        return None
    interp = getattr(g._data, "_ng_interpreter", None)
    return interp if hasattr(interp, "wrap_hook") else None


def is_traced(gs) -> bool:
    """Some gradient in ``gs`` is a traced value (the backward is being traced)."""
    return any(_tracer_of(g) is not None for g in gs)


def annotate(grads, writable, run, name="hook"):
    """Record, in the plan being traced, a call ``run(values)`` made at run time with the real
    gradients ``values`` (one per entry of ``grads``, None where ``grads`` has None); ``run``
    returns a list of the same length whose entries at the positions ``writable`` replace
    those gradients (None: keep). Returns ``grads`` with the writable entries replaced by
    the traced results."""
    n = len(grads)
    live = [k for k, g in enumerate(grads) if g is not None]
    if not live:
        return list(grads)
    wrap = next(t for t in map(_tracer_of, grads) if t is not None).wrap_hook
    writable = [k for k in writable if grads[k] is not None]
    state = threading.local()  # one backward's gradients and results (plans are shared)
    last = live[-1]

    def store(k):
        def fn(g):
            if k == live[0]:
                state.values = [None] * n
            state.values[k] = g
            if k != last:
                return None
            state.results = list(run(list(state.values)))
            state.values = None
            return state.results[k] if k in writable else None
        fn.__name__ = name
        return fn

    def take(k):
        def fn(g):
            return state.results[k]
        fn.__name__ = name
        return fn

    out = list(grads)
    for k in live:
        r = wrap(grads[k], store(k))(grads[k])
        if k == last and k in writable:
            out[k] = r
    for k in writable:
        if k != last:
            out[k] = wrap(grads[k], take(k))(grads[k])
    return out

"""compiler.pipeline: how a traced function becomes running code, as the code that does it.

Room: compiler. ``lower`` calls these stages, in this order (``STAGES``)::

    trace      guards.scan + autodiff.trace   the user's function -> joint graph (IR),
                                               and the guard that says when to retrace
    autodiff   autodiff.partition             joint graph -> forward and backward graphs,
                                               and what the forward saves for the backward
    passes     passes.optimize                fold, transpose, cse, dce (Graph -> Graph)
    schedule   schedule.build                 a graph -> the fusion plan (Schedule)
    render     backend.render                 a Schedule -> source text
    build      backend.build                  source -> compiled code (Numba or llvmlite,
                                               tiers, disk cache, fallback)
    load       backend.load                   compiled code + host steps -> a Program

The last four run once per graph (``compile_graph``: forward, then backward). A backend
is what ``backends.get_backend`` returns (``backends.Backend``); ``Options`` is every
knob ``ng.jit`` passes down to it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from numgrad.profiler import recorder
from numgrad.compiler.options import Options  # noqa: F401  (pipeline.Options)


@dataclass(frozen=True, kw_only=True)
class Lowered:
    """What ``lower`` gives a plan: the trace, its guard, the graphs after the passes and
    their programs."""
    traced: object          # autodiff.Traced
    guard: object           # guards.build's check (None: nothing to check)
    grad: bool              # something requires grad: there is a backward
    fwd_graph: object
    bwd_graph: object       # None without a backward
    n_saved: int            # values the forward saves for the backward
    fwd: object             # Programs (called with the input arrays)
    bwd: object             # None without a backward
    backend: object


# ------------------------------------------------------------------ the stages
def trace(fn, args, kwargs, grad_mode, name, weak=frozenset()):
    """``(traced, guard)``: ``fn`` run on tracers, with the guard scan around it (what the
    trace read that a later call must find unchanged); ``weak``: leaf positions of Python
    floats traced as values (``autodiff.trace``)."""
    import numgrad.compiler.autodiff as _autodiff
    import numgrad.compiler.guards as guards
    scan = guards.scan(fn, args, kwargs)
    tr = _autodiff.trace(fn, args, kwargs, grad_mode, name,
                         reachable={i: t for i, (t, _) in scan.tensors.items()}, weak=weak)
    # Captured tensors are inputs after the arguments' tensors; the guard checks that
    # each is still the one its path reaches, and everything else the trace read.
    guard = guards.build(scan, tr.captures + [t for t, _ in tr.constants], tr.constants,
                         tr.grad_reads, tr.executed, name)
    return tr, guard


def autodiff(traced, grad, remat, extra_outputs):
    """``(forward, backward or None, n_saved)``; ``extra_outputs``: values the forward
    also returns (in-place writebacks)."""
    import numgrad.compiler.autodiff as _autodiff
    if grad:
        fwd, bwd, n_saved = _autodiff.partition(traced, remat=remat)
    else:
        fwd, bwd, n_saved = _autodiff.forward_only(traced), None, 0
    return fwd.copy(outputs=fwd.outputs + list(extra_outputs)), bwd, n_saved


def passes(graph):
    """The graph after the passes (None stays None: no backward)."""
    from numgrad.compiler.passes import optimize
    return optimize(graph) if graph is not None else None


def schedule(graph, backend, options):
    """The fusion plan a backend renders (the graph itself for one that interprets it)."""
    if not backend.SCHEDULED:
        return graph
    import numgrad.compiler.schedule as _schedule
    return _schedule.build(graph, options if backend.SHAPE_GENERIC
                           else options.but(generic=False),
                           shape_inputs=backend.SHAPE_CONSTANT_INPUTS)


def render(sched, backend, options):
    return backend.render(sched, options)


def build(rendered, backend, options):
    return backend.build(rendered, options)


def load(built, backend, options):
    return backend.load(built, options)


STAGES = tuple(stage.__name__ for stage in (trace, autodiff, passes, schedule, render, build,
                                            load))


def _profiled(stage):
    # Each stage is one event (jit::trace, jit::build...) in ng.profiler's record.
    @functools.wraps(stage)
    def timed(*args, **kwargs):
        t0 = recorder.now()
        try:
            return stage(*args, **kwargs)
        finally:
            recorder.add(f"jit::{stage.__name__}", "jit", t0)
    return timed


trace, autodiff, passes, schedule, render, build, load = map(
    _profiled, (trace, autodiff, passes, schedule, render, build, load))


# ------------------------------------------------------------------ the driver
def compile_graph(graph, backend, options):
    """One graph -> a Program: schedule, render, build, load."""
    from numgrad.compiler.passes.own_outputs import own_outputs
    options = Options.of(options)
    sched = schedule(own_outputs(graph), backend, options)
    return load(build(render(sched, backend, options), backend, options), backend, options)


def lower(fn, args, kwargs, *, grad_mode, remat, options, backend_for, weak=frozenset()):
    """``fn`` called with ``args`` -> runnable programs, every stage in order.
    ``backend_for(captures)``: the backend, once the trace knows which tensors the
    function captured (their device chooses it too); ``weak``: see ``trace``."""
    options = Options.of(options)
    traced, guard = trace(fn, args, kwargs, grad_mode, options.name, weak)
    # Tensors the function made on a device count as where its values live, as captures do.
    backend = backend_for(traced.captures + traced.device_constants)
    grad = any(v is not None for v in traced.grads)
    fwd, bwd, n_saved = autodiff(traced, grad, remat, [v for _, v in traced.effects.writebacks])
    fwd_graph, bwd_graph = passes(fwd), passes(bwd)
    role = "fwd" if grad or not grad_mode else "fwd_nograd"
    fwd_prog = compile_graph(fwd_graph, backend, options.but(role=role))
    bwd_prog = compile_graph(bwd_graph, backend, options.but(role="bwd")) if grad else None
    return Lowered(traced=traced, guard=guard, grad=grad, fwd_graph=fwd_graph,
                   bwd_graph=bwd_graph, n_saved=n_saved, fwd=fwd_prog, bwd=bwd_prog,
                   backend=backend)

"""compiler.pipeline: how a traced function becomes running code, in one list.

Room: compiler. A plan (``runtime.Plan``) runs these stages, in this order::

    trace      autodiff.trace        the user's function -> joint graph (IR); the plan
                                     runs it, with the guard scan around it
    autodiff   autodiff.partition    joint graph -> forward and backward graphs
    partition  (same call)           what the forward saves for the backward
    passes     passes.optimize       fold, transpose, cse, dce (Graph -> Graph)
    schedule   schedule.build        a graph -> the fusion plan (Schedule)
    render     codegen.<backend>     a Schedule -> source text
    compile    backends.cpu.cache         source -> a module (Numba; disk cache), or
               backends.cpu.llvm.kernel   the schedule -> object code (llvmlite; disk cache)
    load       backends.cpu.program   the module's kernels + host steps -> a Program

``lower`` runs every stage after the trace, in this order; ``Options`` is every knob
they read.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

STAGES = ("trace", "autodiff", "partition", "passes", "schedule", "render", "compile",
          "load")


@dataclass(frozen=True)
class Options:
    """What ``ng.jit(...)`` passes down to the backends, plus per-graph facts."""
    parallel: object = "auto"     # "auto" | True | False
    fastmath: bool = False
    cache: bool = True            # read and write the disk cache
    verbose: bool = False
    vector_math: bool = True
    name: str = "fn"              # the function's name (kernel names derive from it)
    role: str = "fwd"             # "fwd" | "bwd" | "fwd_nograd"...
    generic: bool = False         # shape-generic: extents read at run time

    def but(self, **changes):
        """A copy with ``changes``."""
        return replace(self, **changes)

    @classmethod
    def of(cls, options):
        """``options`` as Options (a dict from older callers is accepted)."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in dict(options).items() if k in known})


@dataclass
class Lowered:
    """What ``lower`` gives a plan: the graphs after the passes and their programs."""
    fwd_graph: object
    bwd_graph: object       # None without a backward
    n_saved: int            # values the forward saves for the backward
    fwd: object             # Programs (called with the input arrays)
    bwd: object


def lower(traced, grad, grad_mode, remat, extra_outputs, backend, options):
    """A trace -> runnable programs: autodiff and partition (when ``grad``: something
    requires grad), passes, then schedule, render, compile and load (``backend.compile``:
    ``backends.cpu.renderer`` builds the schedule and renders it). ``extra_outputs``: values the
    forward also returns (in-place writebacks)."""
    from numgrad.compiler import autodiff
    from numgrad.compiler.passes import optimize
    options = Options.of(options)
    if grad:
        fwd, bwd, n_saved = autodiff.partition(traced, remat=remat)
    else:
        fwd, bwd, n_saved = autodiff.forward_only(traced), None, 0
    fwd = fwd.copy(outputs=fwd.outputs + list(extra_outputs))
    fwd_graph = optimize(fwd)
    bwd_graph = optimize(bwd) if bwd is not None else None
    role = "fwd" if grad or not grad_mode else "fwd_nograd"
    fwd_prog = backend.compile(fwd_graph, options.but(role=role))
    bwd_prog = backend.compile(bwd_graph, options.but(role="bwd")) if grad else None
    return Lowered(fwd_graph, bwd_graph, n_saved, fwd_prog, bwd_prog)

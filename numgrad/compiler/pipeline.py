"""compiler.pipeline: how a traced function becomes running code, in one list.

Room: compiler. A plan (``runtime.Plan``) runs these stages, in this order::

    trace      autodiff.trace        the user's function -> joint graph (IR)
    autodiff   autodiff.partition    joint graph -> forward and backward graphs
    partition  (same call)           what the forward saves for the backward
    passes     passes.optimize       fold, transpose, cse, dce (Graph -> Graph)
    schedule   schedule.build        a graph -> the fusion plan (Schedule)
    render     codegen.<backend>     a Schedule -> source text
    compile    codegen.cache         source -> a module (Numba; disk cache)
    load       codegen.cpu_program   the module's kernels + host steps -> a Program

``compile_graph`` runs the last five for one graph; ``Options`` is every knob
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


def compile_graph(graph, backend, options):
    """passes already run: schedule, render, compile and load ``graph`` on ``backend``
    (a module with ``compile(graph, options)``)."""
    return backend.compile(graph, Options.of(options))

"""compiler.options: ``Options``, what ``ng.jit(...)`` passes down to the stages.

Room: compiler (a leaf of it: imports nothing of numgrad). A module of its own because
both the pipeline (``compiler.pipeline``, which re-exports it) and the stages it drives
(``compiler.schedule``) read it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


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
        """``options`` as Options (None: the defaults); knobs are set with ``Options(...)``
        or ``options.but(...)``, one channel, never a dict."""
        if options is None:
            return cls()
        if not isinstance(options, cls):
            raise TypeError(f"options must be an Options, not {type(options).__name__}")
        return options

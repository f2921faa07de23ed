"""compiler.backends: what turns a graph into a runnable program, one package per target.

Room: compiler. ``compiler.pipeline`` drives a backend through three stages (after
``schedule.build``, when the backend renders a Schedule):

- ``render(schedule, options)``: source text (nothing compiled);
- ``build(rendered, options)``: compiled code (a module, object code, or a finished
  Program when the backend had to fall back);
- ``load(built, options)``: a Program, called with a flat list of input arrays; it returns
  the list of output arrays and exposes ``source`` (str) and ``kernels`` (int).

``reference`` interprets the graph with each op's NumPy impl (the oracle the fused
backends are tested against); ``cpu`` emits fused Numba (or llvmlite) kernels; ``cuda``
``numba.cuda`` kernels, chosen for a plan whose tensors are CUDA tensors. ``cpu`` and
``cuda`` never import each other; what both need lives here (``spelling``) or in the
registry (the scalar helpers: ``ops.registry.Helper`` rows).
"""
from __future__ import annotations

from typing import Protocol


class Backend(Protocol):
    """What ``compiler.pipeline`` needs of a backend: ``reference``, ``cpu.build`` and the
    ``cuda`` package are one each."""

    SCHEDULED: bool       # render reads a Schedule (False: the graph itself)
    SHAPE_GENERIC: bool   # may render shape-generic plans (extents read at run time)
    SHAPE_CONSTANT_INPUTS: bool  # a generic schedule passes constants computed from
    #                              shapes as kernel inputs (schedule.build)

    def render(self, sched, options): ...

    def build(self, rendered, options): ...

    def load(self, built, options): ...


def get_backend(name) -> Backend:
    if name == "numpy":
        from numgrad.compiler.backends import reference
        return reference
    if name == "cpu":
        from numgrad.compiler.backends.cpu import build
        return build
    if name == "cuda":
        from numgrad.compiler.backends import cuda
        return cuda
    raise ValueError(f"unknown backend {name!r}; expected 'cpu', 'cuda' or 'numpy'")

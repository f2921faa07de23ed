"""compiler.backends.cuda: the CUDA backend (``numba.cuda``), and CUDA tensors.

Room: compiler. ``device`` finds the GPU (or Numba's simulator), ``array`` is a CUDA
tensor's storage, ``eager`` runs eager ops on it by compiling one-op graphs, ``renderer``
spells a Schedule as ``numba.cuda`` kernels, ``program`` launches them, ``scalar`` holds
their device functions, ``ptx`` compiles them for a real GPU without one. The eager rooms
reach this package only through ``numgrad.devices``; nothing here imports
``backends.cpu``.
"""
from __future__ import annotations

SCHEDULED = True
SHAPE_GENERIC = False   # extents and strides are literals in every kernel


# The backend's stages (backends.Backend), imported when first called: ``numgrad.devices``
# imports ``device`` and ``array`` without the renderer.
def render(sched, options):
    from numgrad.compiler.backends.cuda import renderer
    return renderer.render(sched, options)


def build(rendered, options):
    return rendered  # numba.cuda compiles each kernel at its first launch (program.Program)


def load(built, options):
    from numgrad.compiler.backends.cuda.program import Program
    return Program(*built)

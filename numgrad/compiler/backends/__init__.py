"""compiler.codegen: backends that turn a Graph into a runnable program.

Room: compiler. A backend is ``compile(graph, options) -> Program`` (``options``: a
``pipeline.Options``) that renders ``schedule.build(graph, options)``, where a
Program is called with a flat list of input arrays and returns the list of
output arrays, and exposes ``source`` (str) and ``kernels`` (int). ``numpy``
is the reference (it runs each impl); ``cpu`` emits fused Numba kernels, ``cuda``
``numba.cuda`` kernels (chosen for a plan whose tensors are CUDA tensors).
"""
from __future__ import annotations


def get_backend(name):
    if name == "numpy":
        from numgrad.compiler.backends import reference
        return reference
    if name == "cpu":
        from numgrad.compiler.backends.cpu import renderer as cpu
        return cpu
    if name == "cuda":
        from numgrad.compiler.backends.cuda import renderer as cuda
        return cuda
    raise ValueError(f"unknown backend {name!r}; expected 'cpu', 'cuda' or 'numpy'")

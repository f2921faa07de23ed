"""backends.reference: the NumPy backend — runs the graph equation by equation.

Room: compiler. The semantic oracle for the fused backends, and a fallback for
debugging (``ng.jit(fn, backend="numpy")``).
"""
from __future__ import annotations


class Program:
    kernels = 0

    def __init__(self, graph):
        self.graph = graph
        self.source = f"# reference backend: the graph is interpreted\n{graph}"
        self.disk_hit = False

    def __call__(self, arrays):
        return self.graph.eval(*arrays)


def compile(graph, options=None):
    return Program(graph)

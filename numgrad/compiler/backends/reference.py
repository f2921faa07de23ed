"""backends.reference: the NumPy backend — runs the graph equation by equation.

Room: compiler. The semantic oracle for the fused backends, and a fallback for
debugging (``ng.jit(fn, backend="numpy")``).
"""
from __future__ import annotations

SCHEDULED = False
SHAPE_GENERIC = True
SHAPE_CONSTANT_INPUTS = False  # (nothing is scheduled)


class Program:
    kernels = 0

    def __init__(self, graph):
        self.graph = graph
        self.source = f"# reference backend: the graph is interpreted\n{graph}"
        self.disk_hit = False

    def __call__(self, arrays):
        return self.graph.eval(*arrays)


def render(graph, options=None):
    return graph  # nothing to render: the graph is what runs


def build(graph, options=None):
    return graph


def load(graph, options=None):
    return Program(graph)

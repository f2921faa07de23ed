"""viz: pictures of graphs as inline SVG, drawn by numgrad itself (no Graphviz needed).

Room: leaf. Imports nothing from the compiler or the engine; the pictures read
graphs by duck typing. ``graph(t)`` draws a tensor's eager backward graph (its
``grad_fn`` chain); ``graph(f.trace(x))`` draws a compiled function's IR.

>>> import numgrad as ng
>>> x = ng.ones(3, requires_grad=True)
>>> pic = ng.viz.graph((x * x).sum(), names={"x": x})
>>> "<svg" in pic.svg() and "MulBackward0" in pic.svg()
True
"""
from __future__ import annotations

from numgrad.viz.svg import Picture


def graph(obj, names=None, show_saved=True) -> Picture:
    """A picture of ``obj``: a tensor or list of tensors (their ``grad_fn`` graph), a
    backward node, or a compiled function's traced ``Graph``. ``names`` (``{"x": x}``)
    labels leaves and outputs with your variable names. In Jupyter the picture shows
    itself; ``str(pic)`` is the SVG text and ``pic.save("g.svg")`` writes it."""
    if hasattr(obj, "eqns") and hasattr(obj, "consts"):
        from numgrad.viz.ir_picture import ir_picture
        return ir_picture(obj)
    from numgrad.viz.autograd_picture import autograd_picture
    return autograd_picture(obj, names, show_saved)


__all__ = ["graph", "Picture"]

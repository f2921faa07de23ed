"""viz.ir_picture: a compiler ``Graph`` (what ``f.trace(...)`` returns) as a picture.

Room: viz. Reads the graph by duck typing (``inputs``, ``consts``, ``eqns``,
``outputs``, ``stages``), so it imports nothing from the compiler. One node per
equation, written as a formula of its inputs and constants (``u = 1.0 - c``,
``b = x ** 2``) over its primitive and type, and coloured by its annotation; inputs
are ellipses; equations of the derived backward (``ann["bwd"]``) sit in the lower
band, starting from the seed ``detach(ct)``, which a note under the legend
explains; equations a plan fused into one kernel share a tinted tile.
"""
from __future__ import annotations

from numgrad.viz.svg import Node, Picture


def _kind(e):
    if e.ann.get("hook"):
        return "hook"
    if e.ann.get("detach") or e.name == "detach":
        return "detach"
    if e.ann.get("grad") is False and not e.ann.get("bwd"):  # the backward is all no_grad
        return "no_grad"
    return "op"


def _literal(a):
    x = a.reshape(-1)[0].item()
    if isinstance(x, float):
        text = f"{x:.4g}"
        # 1.0, not 1: the listing's spelling, and it says the constant is a float
        return text if any(c in text for c in ".en") else text + ".0"
    return repr(x)


def param_text(v):
    """A parameter as the pictures show it: arrays by shape, functions by name."""
    shape = getattr(v, "shape", None)
    if shape is not None and getattr(v, "ndim", 0):
        return "array[" + ",".join(map(str, shape)) + "]"
    if callable(v):
        return getattr(v, "__name__", "fn")
    return str(v) if hasattr(v, "kind") and hasattr(v, "itemsize") else repr(v)  # a dtype


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}


def expression(e, consts):
    """The equation as a formula of its inputs' names and its constants: ``b = x ** 2``,
    ``u = 1.0 - c``, ``f = sum(e)``. Parameters left at ``None``/``False`` are left out."""
    args = [_literal(consts[v]) if v in consts and consts[v].size == 1 else v.name
            for v in e.inputs]
    params = {k: v for k, v in e.params.items()
              if not k.startswith("_") and v is not None and v is not False}
    if e.name in _INFIX and len(args) == 2 and not params:
        rhs = f"{args[0]} {_INFIX[e.name]} {args[1]}"
    elif e.name == "pow_scalar" and len(args) == 1 and set(params) == {"exponent"}:
        rhs = f"{args[0]} ** {params['exponent']!r}"
    elif e.name == "neg" and len(args) == 1 and not params:
        rhs = f"-{args[0]}"
    else:
        named = [f"{k}={param_text(v)}" for k, v in params.items()]
        rhs = f"{e.name}(" + ", ".join(args + named) + ")"
    return f"{e.out.name} = {rhs}"


SEED_NOTE = ("seed: a derived backward starts from {ct}, the gradient of the output "
             "(1.0 for loss.backward()); it enters as detach({ct}), a plain value the "
             "backward's own graph does not differentiate.")


def ir_picture(graph) -> Picture:
    consts = graph.consts
    users = {}
    for e in graph.eqns:
        for v in e.inputs:
            users.setdefault(v, []).append(e)
    outputs = set(graph.outputs)
    nodes, edges, node_of, cotangents = [], [], {}, set()
    for v in graph.inputs:
        us = users.get(v, [])
        # A cotangent (the incoming gradient) is read by the backward only.
        band = 1 if us and all(e.ann.get("bwd") for e in us) else 0
        kind = "input" if v.requires_grad else "value"
        label = v.name if band == 0 else f"{v.name} (cotangent)"
        if band:
            cotangents.add(v)
        nodes.append(Node(f"v{v.id}", label, v.type_str(), kind, band, "ellipse",
                          v in outputs))
        node_of[v] = f"v{v.id}"
    for v, a in consts.items():
        if a.size == 1:
            continue  # shown inside the equations that use it
        us = users.get(v, [])
        band = 1 if us and all(e.ann.get("bwd") for e in us) else 0
        nodes.append(Node(f"v{v.id}", f"const {v.name}", v.type_str(), "const", band, "ellipse",
                          pull=True))
        node_of[v] = f"v{v.id}"
    seeded = []
    for e in graph.eqns:
        ann = e.annotations() if hasattr(e, "annotations") else []
        kind = _kind(e)
        if e.out in outputs and e.ann.get("bwd"):
            kind = "grad" if kind == "op" else kind
        tip = e.format(consts) if hasattr(e, "format") else repr(e)
        sub = f"{e.name} {e.out.type_str()}" + (" {" + ",".join(ann) + "}" if ann else "")
        if e.name == "detach" and e.ann.get("bwd") and any(v in cotangents for v in e.inputs):
            kind, sub = "seed", f"seed {e.out.type_str()}"
            seeded += [v.name for v in e.inputs if v in cotangents]
        nid = f"v{e.out.id}"
        nodes.append(Node(nid, expression(e, consts), sub, kind, 1 if e.ann.get("bwd") else 0,
                          "box", e.out in outputs, tip))
        node_of[e.out] = nid
        for v in e.inputs:
            if v in node_of:
                edges.append((node_of[v], nid, kind == "no_grad"))
    groups = {}
    stages = getattr(graph, "stages", None) or {}
    for e in graph.eqns:
        label = stages.get(e.out)
        if label is not None:
            groups.setdefault(label, []).append(node_of[e.out])
    name = getattr(graph, "name", "fn")
    return Picture(nodes, edges, {k: v for k, v in groups.items() if len(v) > 1},
                   ("forward", "backward (derived)"), f"numgrad graph of {name}",
                   (SEED_NOTE.format(ct=", ".join(seeded)),) if seeded else ())

"""viz.autograd_picture: the eager backward graph of tensors (``grad_fn`` and
``next_functions``) as a picture, the graph PyTorch builds and the article describes.

Room: viz. Reads nodes by duck typing (``name()``, ``next_functions``, ``_saved``,
``_pre_hooks``, ``variable``), so it imports neither the engine nor the compiler.
Leaves (``AccumulateGrad``) are drawn as ellipses named after the tensors passed
in ``names``; a node shows its constants (``exponent=3``); tensors a node saved for
its backward hang off it as small yellow nodes (grey once freed, red once modified),
named by ``names`` or by the op that made them; hooks are marked and coloured.
"""
from __future__ import annotations

import re

from numgrad.viz.ir_picture import param_text
from numgrad.viz.svg import Node, Picture


def _shape(t):
    data = getattr(t, "_data", None)
    shape = getattr(data, "shape", None)
    return "[" + ",".join(map(str, shape)) + "]" if shape is not None else ""


def _n_hooks(node):
    pre = getattr(node, "_pre_hooks", None) or {}
    n = sum(len(h) for h in pre.values())
    var = getattr(node, "variable", None)
    if var is not None:
        n += len(getattr(var, "_hooks", None) or {})
    return n


def _op(node):
    """``PowBackward0`` -> ``pow``: the op that made a tensor, as a user writes it."""
    name = node.name() if callable(getattr(node, "name", None)) else type(node).__name__
    return re.sub(r"Backward\d*$", "", name).lower() or name


def _params(node):
    """The node's constants (``exponent=3``): what tells ``x ** 2`` from ``x ** 3``.
    Parameters left at ``None``/``False`` (``keepdim=False``) are left out."""
    params = getattr(node, "_params", None)
    if not isinstance(params, dict):
        return ""
    return ", ".join(f"{k}={param_text(v)}" for k, v in params.items()
                     if not k.startswith("_") and v is not None and v is not False)


def _saved(node):
    """``[(tensor or None, state, is the node's own output)]`` of what the node keeps for
    its backward; state is the shape, ``index``, ``freed`` or ``modified: ...``."""
    saved = getattr(node, "_saved", None)
    out = []
    if isinstance(saved, dict):
        for s in saved.values():
            for one in s if isinstance(s, list) else [s]:
                # (an eager node keeps a saved input as (tensor, version): Node._as_saved)
                one = node._as_saved(one) if hasattr(node, "_as_saved") else one
                if not hasattr(one, "_vc"):  # a saved index (autograd.graph.SavedParam)
                    out.append((None, "freed" if one._freed else "index", False))
                    continue
                data = one._data if one._tensor is None else getattr(one._tensor, "_data", None)
                if one._freed:
                    # by a backward without retain_graph; the input it held keeps its name
                    was = one._was() if one._was is not None else None
                    out.append((was, "freed", one._was is None))
                    continue
                elif one._vc.value != one._version:
                    state = f"modified: v{one._vc.value}, saved v{one._version}"
                else:
                    state = "[" + ",".join(map(str, data.shape)) + "]"
                out.append((one._tensor, state, one._tensor is None))
    elif isinstance(saved, (list, tuple)):   # a compiled call's saved arrays
        for a in saved:
            out.append((None, "[" + ",".join(map(str, getattr(a, "shape", ()))) + "]", False))
    return out


def _saved_label(node, tensor, own_output, state, label_of, named):
    """What a saved tensor is called: the user's name where ``names`` gave one, else what
    made it (never the derivative rule's parameter name, which the user never wrote); a
    freed one keeps that name, marked ``(freed)``."""
    if state == "index":
        return "saved: index"
    if state == "freed":
        if tensor is None and not own_output:
            return "saved tensor (freed)"  # its tensor is gone too: nothing names it
        return _saved_label(node, tensor, own_output, None, label_of, named) + " (freed)"
    if own_output:
        return f"saved {named[id(node)]}" if id(node) in named else f"saved: {_op(node)} output"
    if tensor is None:
        return "saved: array"   # a compiled call's: the arrays its backward reads
    if id(tensor) in label_of:
        return f"saved {label_of[id(tensor)]}"
    fn = getattr(tensor, "grad_fn", None)
    if fn is not None:
        return f"saved {named[id(fn)]}" if id(fn) in named else f"saved: {_op(fn)} output"
    if getattr(tensor, "requires_grad", False):
        return "saved: leaf"
    data = getattr(tensor, "_data", None)
    if getattr(data, "size", 0) == 1:   # a Python number the op was given (``x * 2``)
        return f"saved: constant {data.reshape(-1)[0].item():.4g}"
    return "saved: input (no grad)"


def autograd_picture(roots, names=None, show_saved=True) -> Picture:
    """Draw the graph behind ``roots`` (tensors or nodes); ``names`` maps a label to a
    tensor (``{"x": x}``) so leaves and roots are named as in your code."""
    if not isinstance(roots, (list, tuple)):
        roots = [roots]
    label_of = {id(t): k for k, t in (names or {}).items()}
    # A named non-leaf tensor (``x_clone``) is written under the node that made it.
    made = {id(t.grad_fn): k for k, t in (names or {}).items()
            if getattr(t, "grad_fn", None) is not None and not any(t is r for r in roots)}
    # ... and a saved tensor is named after the user's name for it, roots included.
    named = {id(t.grad_fn): k for k, t in (names or {}).items()
             if getattr(t, "grad_fn", None) is not None}
    nodes, edges, ids = [], [], {}

    def nid(node):
        if id(node) not in ids:
            ids[id(node)] = f"n{len(ids)}"
        return ids[id(node)]

    stack, seen = [], set()
    for i, r in enumerate(roots):
        fn = getattr(r, "grad_fn", None) if hasattr(r, "_data") else r
        if hasattr(r, "_data"):  # a tensor: draw it as the output at the right
            tid = f"t{i}"
            label = label_of.get(id(r), "output" if len(roots) == 1 else f"output {i}")
            if fn is None:
                kind = "input" if getattr(r, "requires_grad", False) else "value"
                nodes.append(Node(tid, label, _shape(r) + (" leaf" if kind == "input" else ""),
                                  kind, 0, "ellipse", True))
                continue
            nodes.append(Node(tid, label, _shape(r), "value", 0, "ellipse", True))
            edges.append((nid(fn), tid, False))
        if fn is not None:
            stack.append(fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        me = nid(node)
        var = getattr(node, "variable", None)
        hooks = _n_hooks(node)
        if var is not None:   # AccumulateGrad: a leaf
            label = label_of.get(id(var), "leaf")
            sub = _shape(var) + (f" +{hooks} hook" if hooks else "")
            nodes.append(Node(me, label, sub, "hook" if hooks else "input", 0, "ellipse",
                              title=f"{label}: AccumulateGrad (grad goes to .grad)"))
        else:
            name = node.name() if callable(getattr(node, "name", None)) else type(node).__name__
            sub = " · ".join(x for x in (_params(node),
                                       f"→ {made[id(node)]}" if id(node) in made else "",
                                       f"{hooks} hook{'s' if hooks > 1 else ''}" if hooks
                                       else "") if x)
            nodes.append(Node(me, name, sub, "hook" if hooks else "op", 0, "box", title=name))
            if show_saved:
                for k, (tensor, state, own) in enumerate(_saved(node)):
                    sid = f"{me}s{k}"
                    kind = "stale" if state.startswith("modified") else (
                        "freed" if state == "freed" else "saved")
                    nodes.append(Node(sid, _saved_label(node, tensor, own, state, label_of, named),
                                      state, kind, 0, "box",
                                      title=f"kept for {name}'s backward: {state}", pull=True))
                    edges.append((sid, me, True))
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is None:
                continue
            edges.append((nid(nxt), me, False))
            stack.append(nxt)
    # Nodes were named as they were first seen; keep ids consistent for edges made early.
    return Picture(nodes, edges, {}, ("autograd graph: forward reads left to right, "
                                      "gradients flow right to left",), "numgrad autograd graph")

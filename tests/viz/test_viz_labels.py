"""What the pictures say: saved tensors named after the user's names or the op that made
them (never a derivative rule's parameter name), every op's constants, formulas that
read as written (``1.0 - c``), the backward's seed explained, source in a monospace font."""

from __future__ import annotations

import re

from viz_geometry import Parsed

import numgrad as ng
from numgrad.viz.source import SourceText


def _texts(pic):
    """Each node's lines, by node id."""
    return {nid: [t.text for t in ts] for nid, (_, ts) in Parsed(pic.svg()).nodes.items()}


def _saved_labels(pic):
    return sorted(lines[0] for lines in _texts(pic).values() if lines[0].startswith("saved"))


def test_a_saved_tensor_is_named_by_the_user_or_by_what_made_it():
    x = ng.ones(4, requires_grad=True)
    x_clone = x.clone()
    r = (x_clone ** 2 + x_clone ** 3).sum()
    # PowBackward0's rule calls what it saves `x`; the user's name for it is x_clone.
    assert _saved_labels(ng.viz.graph(r, names={"x": x, "x_clone": x_clone})) == \
        ["saved x_clone", "saved x_clone"]
    assert _saved_labels(ng.viz.graph(r)) == ["saved: clone output", "saved: clone output"]


def test_no_label_is_a_rule_parameter_name():
    a = ng.ones(3, requires_grad=True)
    b = ng.full((3,), 2.0)              # needs no grad; the user never told viz its name
    r = (a.exp() * b + (a * 2).sigmoid()).sum()
    labels = _saved_labels(ng.viz.graph(r, names={"a": a}))
    assert labels == sorted(["saved: exp output", "saved: input (no grad)",
                             "saved: sigmoid output", "saved: constant 2"])
    for pic_names in ({}, {"a": a}):
        for label in _saved_labels(ng.viz.graph(r, names=pic_names)):
            assert not re.fullmatch(r"saved (x|y|self|other|out|result)\d*", label), label


def test_a_saved_output_takes_the_users_name():
    a = ng.ones(3, requires_grad=True)
    s = a.sigmoid()
    assert _saved_labels(ng.viz.graph(s, names={"s": s})) == ["saved s"]


def test_eager_nodes_show_their_constants():
    x = ng.ones(3, requires_grad=True)
    two, three = ng.viz.graph(x ** 2), ng.viz.graph(x ** 3)
    assert any("exponent=2" in ln for lines in _texts(two).values() for ln in lines)
    assert any("exponent=3" in ln for lines in _texts(three).values() for ln in lines)
    assert two.svg() != three.svg()


def _trace_labels(fn, *args):
    pic = ng.jit(fn, backend="numpy").trace(*args).picture()
    return [lines[0] for lines in _texts(pic).values()], pic


def test_trace_labels_are_formulas_with_their_constants():
    x = ng.ones(4, requires_grad=True)
    labels, _ = _trace_labels(lambda x: (x ** 2 + x ** 3 + (1.0 - x) + (x - 0.25)).sum(), x)
    rhs = {lab.split(" = ", 1)[1] for lab in labels if " = " in lab}
    assert "x ** 2" in rhs and "x ** 3" in rhs           # x² and x³ differ
    assert "1.0 - x" in rhs and "x - 0.25" in rhs        # the constant where it stands
    assert not any(lab.startswith(("sub ", "pow_scalar")) for lab in labels)


def test_the_backward_seed_is_labelled_and_explained():
    x = ng.ones(4, requires_grad=True)
    _, pic = _trace_labels(lambda x: x.tanh().sum(), x)
    svg = pic.svg()
    seeds = [nid for nid, lines in _texts(pic).items() if lines[0].endswith("detach(ct)")]
    assert len(seeds) == 1
    assert 'class="ng-node ng-seed"' in svg and _texts(pic)[seeds[0]][1].startswith("seed")
    notes = " ".join(t.text for t in Parsed(svg).free_texts)
    assert "backward's seed" in notes                     # in the legend
    assert "the gradient of the output" in notes and "ct" in notes


def test_a_forward_without_backward_has_no_seed_note():
    with ng.no_grad():
        _, pic = _trace_labels(lambda x: x.tanh().sum(), ng.ones(4))
    assert "seed" not in pic.svg()


def test_source_renders_in_a_monospace_font():
    html = SourceText([("forward program", "def f(x):\n    return x\n")])._repr_html_()
    styles = re.findall(r'<pre style="([^"]*)"', html)
    assert styles and all("font-family:" in s and "monospace" in s for s in styles)


def test_a_freed_saved_tensor_keeps_its_name():
    import numgrad as ng
    x = ng.tensor([1., 2.], requires_grad=True)
    y = x.sin()
    z = (y * x).sum()
    before = sorted(n.label for n in ng.viz.graph(z, names={"x": x, "y": y}).nodes
                    if n.kind == "saved")
    z.backward()  # frees what the nodes saved
    after = [n for n in ng.viz.graph(z, names={"x": x, "y": y}).nodes if n.kind == "freed"]
    assert sorted(n.label for n in after) == [f"{label} (freed)" for label in before]

"""The pictures' geometry, read back from the SVG: every text fits what holds it at a
monospace font's width (nothing clipped, nothing spilling out), and no edge runs under a
box it does not join, on the notebooks' graphs and on shapes made to provoke both."""

from __future__ import annotations

import pytest
from viz_geometry import Parsed, edges_under_boxes, text_overflows

import numgrad as ng
from numgrad.viz.svg import Node, Picture


def _loss(x, weight):
    h = x.sigmoid() * weight
    with ng.no_grad():
        scale = x.abs().mean()
    d = x.detach() * 0.5
    h.register_hook(lambda g: g)
    return ((h + d) * scale).sum()


def _clone_graph():
    x = ng.ones(10, requires_grad=True)
    x_clone = x.clone()
    r = (x_clone ** 2 + x_clone ** 3).sum()
    return ng.viz.graph(r, names={"x": x, "x_clone": x_clone, "r": r})


def _stale_graph():
    a = ng.arange(5.0, requires_grad=True)
    b = a ** 2
    a.detach().zero_()
    return ng.viz.graph(b, names={"a": a, "b": b})


def _hook_graph():
    x = ng.ones(3, requires_grad=True)
    h = x * 2
    h.register_hook(lambda g: g)
    return ng.viz.graph((h ** 2).sum(), names={"x": x})


def _traced_loss():
    x = ng.tensor([0.5, -1.0, 2.0, 0.25], requires_grad=True)
    w = ng.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    return ng.jit(_loss, backend="numpy").trace(x, w).picture()


def _traced_detached():
    f = ng.jit(lambda x: (x ** 2 + x.detach() ** 3).sum(), backend="numpy")
    return f.trace(ng.ones(10, requires_grad=True)).picture()


def _skip_edges():
    # a -> b -> c -> d, and a -> d, a -> c: the straight way from a to d is under b and c.
    nodes = [Node(i, i, "f32[4]") for i in "abcd"]
    edges = [("a", "b", False), ("b", "c", False), ("c", "d", False), ("a", "d", False),
             ("a", "c", True)]
    return Picture(nodes, edges)


def _long_texts():
    # Labels far wider than the smallest box, in boxes, ellipses and a fused group, a long
    # band name, a long note, and a character from outside ASCII.
    long = "a_rather_long_value_name = reduce(something, dim=(0, 1), keepdim=True)"
    nodes = [Node("i", "an_input_with_a_long_name", "f32[1024,1024] leaf", "input", 0, "ellipse",
                  True),
             Node("o", long, "modified: v3, saved v1 → x_clone", "stale", 0, "box", True),
             Node("p", "p = o * 2.0", "mul f32[4]", "op", 1),
             Node("q", "q", "", "grad", 1, "ellipse")]
    return Picture(nodes, [("i", "o", False), ("o", "p", False), ("p", "q", False)],
                   {"backward kernel 12 (a long stage name)": ["p", "q"]},
                   ("a forward band whose name is longer than the whole graph is wide",
                    "backward"), notes=("a note " * 40,))


PICTURES = {"clone": _clone_graph, "stale": _stale_graph, "hook": _hook_graph,
            "traced_loss": _traced_loss, "traced_detached": _traced_detached,
            "skip_edges": _skip_edges, "long_texts": _long_texts}


@pytest.fixture(scope="module", params=sorted(PICTURES))
def svg(request):
    return PICTURES[request.param]().svg()


def test_every_text_fits_its_box(svg):
    assert Parsed(svg).nodes  # the check read the picture's boxes
    assert text_overflows(svg) == []


def test_no_edge_runs_under_a_box_it_does_not_join(svg):
    assert Parsed(svg).edges  # the check read the picture's edges
    assert edges_under_boxes(svg) == []


def test_nothing_is_clipped():
    pic = _long_texts()
    texts = {t.text for _, ts in Parsed(pic.svg()).nodes.values() for t in ts}
    for n in pic.nodes:
        assert n.label in texts and (not n.sub or n.sub in texts)
    assert not any("…" in t for t in texts)


def test_the_checks_catch_what_they_look_for():
    # The checks themselves: a box too small for its text, and an edge through a box.
    svg = _skip_edges().svg()
    squeezed = svg.replace('font-size="11"', 'font-size="40"')
    assert text_overflows(squeezed)
    a, d = Parsed(svg).box("a"), Parsed(svg).box("d")
    ax, ay, dx, dy = a.x1, (a.y0 + a.y1) / 2, d.x0, (d.y0 + d.y1) / 2
    straight = (f'<path class="ng-edge" data-from="a" data-to="d" '
                f'd="M{ax:.1f},{ay:.1f} L{dx:.1f},{dy:.1f}"/></svg>')
    assert edges_under_boxes(svg.replace("</svg>", straight)) != []


def test_a_long_edge_takes_a_row_of_its_own():
    # The edge a -> d passes columns b and c on a row no box is on.
    p = Parsed(_skip_edges().svg())
    (_, _, pts), = [e for e in p.edges if e[:2] == ("a", "d")]
    for nid in "bc":
        box = p.box(nid)
        ys = [y for x, y in pts if box.x0 <= x <= box.x1]
        assert ys and all(y < box.y0 or y > box.y1 for y in ys)


def test_kernel_tiles_join_neighbours_each_carry_the_label_and_stay_inside():
    import re

    import numgrad as ng
    from numgrad.viz import svg as svg_mod

    def chain(x):
        return ((x * 2 + 1) * 3 - 4).exp().sum()   # one fused kernel, a row of neighbours

    g = ng.jit(chain).trace(ng.ones(5, requires_grad=True))
    text = g.picture().svg()
    width = float(re.search(r'<svg [^>]*width="([\d.]+)"', text).group(1))
    for group in re.findall(r'<g class="ng-stage"[^>]*>(.*?)</g>', text):
        rects = re.findall(r'<rect x="([\d.-]+)" y="[\d.-]+" width="([\d.]+)"', group)
        labels = re.findall(r"<text [^>]*>([^<]+)</text>", group)
        assert len(labels) == len(rects)   # every tile says which kernel it is
        for x, w in rects:
            assert float(x) >= 0 and float(x) + float(w) <= width
    fwd = re.search(r'<g class="ng-stage"[^>]*>(.*?)</g>', text).group(1)
    assert len(re.findall("<rect", fwd)) <= 2   # the row of five ops is one tile, not five
    # tile hues are not the node kinds' colours
    kinds = {stroke for _, stroke in svg_mod.PALETTE.values()}
    assert not kinds & set(svg_mod.KERNEL_HUES[:5])
    assert svg_mod.PALETTE["seed"][1] != svg_mod.PALETTE["detach"][1]


def test_notebooks_show_pictures_at_their_own_size():
    import numgrad as ng
    g = ng.jit(lambda x: x.sin().sum()).trace(ng.ones(3, requires_grad=True))
    html = g._repr_html_()
    assert 'overflow-x:auto' in html and 'style="max-width:none' in html

"""viz.svg: a layered, left-to-right drawing of a small DAG as one inline SVG string.

Room: leaf (standard library only). Both the eager graph (``grad_fn`` chains) and
the compiler's IR are drawn with it, so neither needs Graphviz or any package.

The layout is Sugiyama's in its simplest form: a node's column is the length of
the longest path reaching it; an edge that spans several columns passes through a
waypoint of its own in each column between (a "dummy node" that takes a row), so
it never runs under a box; nodes and waypoints of a column are ordered by the mean
row of their predecessors (one sweep); and each *band* (forward, backward) gets its
own rows, so the two read as two strips one above the other. Boxes and columns are
as wide as their text at a monospace font's width, so nothing is clipped. Groups
(fused stages) are drawn as tiles behind their members.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from html import escape

# Fill and stroke per node kind: one place for the palette of every picture.
PALETTE = {
    "input": ("#fff3bf", "#e8a33d"),      # an input or leaf that requires grad
    "value": ("#f1f3f5", "#868e96"),      # an input that needs no gradient
    "const": ("#ffffff", "#adb5bd"),
    "op": ("#d0ebff", "#4d8fcc"),         # an equation / a backward node
    "no_grad": ("#e9ecef", "#868e96"),
    "detach": ("#e5dbff", "#7950f2"),
    "seed": ("#e3fafc", "#0c8599"),       # where a derived backward starts: the cotangent
    "hook": ("#ffc9c9", "#e03131"),
    "grad": ("#d3f9d8", "#37b24d"),       # an AccumulateGrad sink / a gradient output
    "saved": ("#fff9db", "#f08c00"),
    "freed": ("#f8f9fa", "#ced4da"),
    "stale": ("#ffe3e3", "#c92a2a"),
}
LEGEND = {"input": "requires grad", "op": "op", "no_grad": "{no_grad}", "detach": "{detach}",
          "seed": "backward's seed", "hook": "{hook}", "grad": "gradient",
          "saved": "saved tensor", "freed": "freed by backward", "stale": "modified since saved"}

FONT = "Menlo, Consolas, 'DejaVu Sans Mono', monospace"
# Font sizes (a node's label, its sub-line, captions): drawn at these sizes, never scaled
# down (Jupyter gets the picture in a scrolling box), so the smallest text is 11 px.
LABEL_PX, SUB_PX, SMALL_PX = 13, 11, 11
# Width of one character as a fraction of the font size: monospace fonts are 0.6 em; a
# character outside ASCII may come from a fallback font, so it is counted a full em.
EM_ASCII, EM_OTHER = 0.62, 1.0
NODE_W, NODE_H, ELLIPSE_RY = 104, 40, 22   # smallest box; box height; ellipse half-height
ROW_H, GAP, PAD, TEXT_PAD = 66, 40, 14, 8  # row pitch, gap between columns, margins
LABEL_DY, SUB_DY = -3, 13                  # baselines of a two-line node's lines


def text_width(text, px):
    """A generous width of ``text`` at ``px`` in the picture's monospace font."""
    return sum(px * (EM_ASCII if ord(c) < 128 else EM_OTHER) for c in str(text))


@dataclass
class Node:
    id: str
    label: str                 # first line (bold): the op or the value's name
    sub: str = ""              # second line: type, shape or value
    kind: str = "op"           # a PALETTE key
    band: int = 0              # 0: forward strip, 1: backward strip
    shape: str = "box"         # "box" or "ellipse"
    output: bool = False       # drawn with a double border
    title: str = ""            # tooltip
    pull: bool = False         # a source drawn just before its first user, not in column 0

    def lines(self):
        """``[(text, font px, baseline offset from the centre)]``."""
        if self.sub:
            return [(self.label, LABEL_PX, LABEL_DY), (self.sub, SUB_PX, SUB_DY)]
        return [(self.label, LABEL_PX, 4)]

    def half_size(self):
        """Half the width and height of the node's shape: wide enough for its text."""
        if self.shape != "ellipse":
            w = max(text_width(t, px) for t, px, _ in self.lines()) + 2 * TEXT_PAD
            return max(NODE_W, w) / 2, NODE_H / 2
        # A line at height dy of an ellipse has sqrt(1 - (dy/ry)²) of its half-width.
        rx = NODE_W / 2
        for t, px, dy in self.lines():
            far = max(abs(dy - 0.8 * px), abs(dy + 0.25 * px)) + 1
            rx = max(rx, (text_width(t, px) / 2 + TEXT_PAD / 2) / (1 - (far / ELLIPSE_RY) ** 2)
                     ** 0.5)
        return rx, ELLIPSE_RY


@dataclass
class Picture:
    """A laid-out drawing: ``str()`` and ``_repr_svg_`` give the SVG text."""

    nodes: list
    edges: list                          # (src id, dst id, dashed)
    groups: dict = field(default_factory=dict)   # group label -> [node ids]
    bands: tuple = ("forward", "backward")
    title: str = ""
    notes: tuple = ()                    # lines under the legend that explain the picture

    def svg(self) -> str:
        return render(self)

    __str__ = svg

    def __repr__(self):
        return f"<numgrad picture: {len(self.nodes)} nodes, {len(self.edges)} edges>"

    def _repr_svg_(self):
        return self.svg()

    def _repr_html_(self):
        return html_box(self.svg())

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg())


def _columns(nodes, edges):
    """Each node's column: the longest path from a source (Kahn's order, no recursion)."""
    preds = {n.id: [] for n in nodes}
    succs = {n.id: [] for n in nodes}
    for s, d, _ in edges:
        if s in preds and d in preds:
            preds[d].append(s)
            succs[s].append(d)
    indeg = {i: len(p) for i, p in preds.items()}
    col = {i: 0 for i in preds}
    ready = [n.id for n in nodes if indeg[n.id] == 0]
    while ready:
        i = ready.pop()
        for d in succs[i]:
            col[d] = max(col[d], col[i] + 1)
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    # Pulled sources (saved tensors, constants) sit next to their first user.
    for n in nodes:
        if n.pull and not preds[n.id] and succs[n.id]:
            col[n.id] = max(0, min(col[d] for d in succs[n.id]) - 1)
    return col


@dataclass
class Layout:
    pos: dict          # node or waypoint id -> centre (x, y)
    half: dict         # node id -> (half width, half height)
    col_x: list        # each column's (left, right)
    col: dict          # node or waypoint id -> column
    routes: list       # (src, [waypoint ids], dst, dashed) per drawn edge
    band_y: dict       # band -> (top, bottom)
    rows_bottom: float  # y below the last band


def layout(pic: Picture) -> Layout:
    """Columns, rows, waypoints of long edges, and the position of everything."""
    by_id = {n.id: n for n in pic.nodes}
    col = _columns(pic.nodes, pic.edges)
    band = {n.id: n.band for n in pic.nodes}
    preds = {i: [] for i in by_id}
    routes, waypoint = [], {}
    for s, d, dashed in pic.edges:
        if s not in by_id or d not in by_id:
            continue
        chain, prev = [], s
        # One waypoint per column crossed, in the destination's band; an edge from the same
        # source through the same column shares it (the edges run together until they part).
        for c in range(col[s] + 1, col[d]):
            w = waypoint.get((s, c, band[d]))
            if w is None:
                w = waypoint[(s, c, band[d])] = f"{s}~{c}~{band[d]}"
                col[w], band[w], preds[w] = c, band[d], [prev]
            chain.append(w)
            prev = w
        preds[d].append(prev)
        routes.append((s, chain, d, dashed))
    by_col = {}
    for i in list(by_id) + list(waypoint.values()):
        by_col.setdefault((band[i], col[i]), []).append(i)
    row = {}
    # Order each column by its predecessors' mean row (the barycentre heuristic).
    for key in sorted(by_col, key=lambda k: (k[1], k[0])):
        def bary(i):
            ps = [row[p] for p in preds[i] if p in row]
            return sum(ps) / len(ps) if ps else 0.0
        members = sorted(by_col[key], key=bary)
        for r, i in enumerate(members):
            row[i] = r
    half = {i: n.half_size() for i, n in by_id.items()}
    n_cols = max(col.values(), default=0) + 1
    widths = [NODE_W] * n_cols
    for i, (hw, _) in half.items():
        widths[col[i]] = max(widths[col[i]], 2 * hw + 6)   # 6: an output's outer border
    col_x, x = [], PAD
    for w in widths:
        col_x.append((x, x + w))
        x += w + GAP
    bands = sorted({n.band for n in pic.nodes})
    heights = {b: max((len(v) for (bb, _), v in by_col.items() if bb == b), default=1)
               for b in bands}
    pos, band_y, y0 = {}, {}, PAD + 18
    for b in bands:
        band_y[b] = (y0 - 16, y0 + heights[b] * ROW_H)
        for i, r in row.items():
            if band[i] == b:
                left, right = col_x[col[i]]
                pos[i] = ((left + right) / 2, y0 + r * ROW_H + ROW_H / 2)
        y0 += heights[b] * ROW_H + 34
    return Layout(pos, half, col_x, col, routes, band_y, y0)


def edge_path(lay: Layout, s, chain, d):
    """The SVG path of one edge: out of ``s``'s right side, straight through each
    waypoint's column, curving only in the gaps between columns, into ``d``'s left side.
    Columns hold boxes; the gaps hold none, so the edge passes under no box."""
    (sx, sy), (dx, dy) = lay.pos[s], lay.pos[d]
    x, y = sx + lay.half[s][0], sy
    parts = [f"M{x:.1f},{y:.1f}"]

    def line_to(nx):
        nonlocal x
        if nx - x > 0.5:
            parts.append(f"L{nx:.1f},{y:.1f}")
            x = nx

    def curve_to(nx, ny):
        nonlocal x, y
        mid = (x + nx) / 2
        parts.append(f"C{mid:.1f},{y:.1f} {mid:.1f},{ny:.1f} {nx:.1f},{ny:.1f}")
        x, y = nx, ny

    line_to(lay.col_x[lay.col[s]][1])
    for w in chain:
        left, right = lay.col_x[lay.col[w]]
        curve_to(left, lay.pos[w][1])
        line_to(right)
    end = dx - lay.half[d][0]
    left = lay.col_x[lay.col[d]][0]
    if end - left > 0.5:
        curve_to(left, dy)
        line_to(end)
    else:
        curve_to(end, dy)
    return " ".join(parts)


def _text(x, y, text, px, extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{px}"{extra}>'
            f'{escape(str(text))}</text>')


def _legend_and_notes(pic, width):
    """``[(x, dy, svg)]`` rows of the legend (wrapped to ``width``), then the notes."""
    items = [k for k in LEGEND if any(n.kind == k for n in pic.nodes)]
    rows, x, out = 0, PAD, []
    for k in items:
        w = 16 + text_width(LEGEND[k], SUB_PX) + 14
        if x + w > width - PAD and x > PAD:
            rows, x = rows + 1, PAD
        out.append((x, rows, k))
        x += w
    n_rows = rows + 1 if items else 0
    chars = max(20, int((width - 2 * PAD) / (SUB_PX * EM_ASCII)))
    notes = [ln for note in pic.notes for ln in textwrap.wrap(note, chars)]
    return out, n_rows, notes


def render(pic: Picture) -> str:
    if not pic.nodes:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="140" height="30">'
                f'<text x="8" y="20" font-family="{FONT}" font-size="12">(empty graph)</text>'
                f'</svg>')
    lay = layout(pic)
    names = {b: pic.bands[b] if b < len(pic.bands) else f"band {b}" for b in lay.band_y}
    w = max([lay.col_x[-1][1] + PAD] +
            [8 + text_width(t, LABEL_PX) + PAD for t in names.values()])
    legend, legend_rows, notes = _legend_and_notes(pic, w)
    w = max([w] + [x + 16 + text_width(LEGEND[k], SUB_PX) + PAD for x, _, k in legend])
    y_legend = lay.rows_bottom - 12
    h = y_legend + 16 * legend_rows + 14 * len(notes) + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
           f'viewBox="0 0 {w:.0f} {h:.0f}" font-family="{FONT}" font-size="{LABEL_PX}">',
           '<defs><marker id="ng-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="#868e96"/></marker></defs>']
    if pic.title:
        out.append(f'<title>{escape(pic.title)}</title>')
    # Opaque, so the picture reads the same on a dark page (Jupyter's dark themes).
    out.append(f'<rect class="ng-background" width="{w:.0f}" height="{h:.0f}" fill="#ffffff"/>')
    for b, (y_top, y_bot) in sorted(lay.band_y.items()):
        fill = "#fbfcfe" if b == 0 else "#fdf8f6"
        out.append(f'<rect class="ng-band" x="2" y="{y_top:.0f}" width="{w - 4:.0f}" '
                   f'height="{y_bot - y_top + 10:.0f}" rx="6" fill="{fill}" stroke="#dee2e6"/>')
        out.append(_text(8, y_top + 12, names[b], LABEL_PX,
                         ' fill="#868e96" font-weight="bold"'))
    # A group (a fused kernel) is the union of tiles around its members: its members
    # need not form a rectangle, and a bounding box would cover other kernels' nodes.
    # Members side by side in one row share one tile, and every tile carries the kernel's
    # label, inside a column (edges bend only in the gaps between columns, so none
    # crosses it) and inside the band.
    for k, (label, ids) in enumerate(pic.groups.items()):
        cells = sorted((lay.pos[i][1], lay.col[i]) for i in ids if i in lay.pos)
        if not cells:
            continue
        hue = KERNEL_HUES[k % len(KERNEL_HUES)]
        tiles = []
        for y, c0, c1 in _row_runs(cells):
            x0 = max(lay.col_x[c0][0] - GAP / 2 + 2, 6)
            x1 = min(lay.col_x[c1][1] + GAP / 2 - 2, w - 6)
            tiles.append(f'<rect x="{x0:.0f}" y="{y - ROW_H / 2 + 1:.0f}" '
                         f'width="{x1 - x0:.0f}" height="{ROW_H - 2}" rx="3"/>')
            room = lay.col_x[c1][1] - lay.col_x[c0][0]
            tiles.append(_text(lay.col_x[c0][0] + 1, y - ROW_H / 2 + SMALL_PX + 1,
                               _fit(label, room), SMALL_PX,
                               f' fill="{hue}" fill-opacity="1"'))
        out.append(f'<g class="ng-stage" fill="{hue}" fill-opacity="0.13">{"".join(tiles)}'
                   '</g>')
    for s, chain, d, dashed in lay.routes:
        dash = ' stroke-dasharray="4,3"' if dashed else ""
        out.append(f'<path class="ng-edge" data-from="{escape(s)}" data-to="{escape(d)}" '
                   f'd="{edge_path(lay, s, chain, d)}" fill="none" stroke="#adb5bd" '
                   f'stroke-width="1.2"{dash} marker-end="url(#ng-arrow)"/>')
    for n in pic.nodes:
        out.extend(_node(n, lay.pos[n.id], lay.half[n.id]))
    for x, r, k in legend:
        fill, stroke = PALETTE[k]
        y = y_legend + 16 * r
        out.append(f'<rect x="{x:.0f}" y="{y - 9:.0f}" width="12" height="10" fill="{fill}" '
                   f'stroke="{stroke}"/>' + _text(x + 16, y, LEGEND[k], SUB_PX,
                                                   ' fill="#495057"'))
    y = y_legend + 16 * legend_rows
    for ln in notes:
        out.append(_text(PAD, y, ln, SUB_PX, ' class="ng-note" fill="#495057"'))
        y += 14
    out.append("</svg>")
    return "\n".join(out)


# Kernel tiles: hues unlike the node kinds' (no green of "gradient", no red of "{hook}",
# no cyan of the seed; the violet comes sixth, after five kernels).
KERNEL_HUES = ("#1c7ed6", "#e67700", "#c2255c", "#a05a2c", "#495057", "#5f3dc4")


def html_box(svg):
    """The SVG for a notebook: at its own size in a box that scrolls sideways, since
    notebooks shrink a wide picture to their width (and its text with it) otherwise."""
    return ('<div style="overflow-x:auto">'
            + svg.replace("<svg ", '<svg style="max-width:none" ', 1) + "</div>")


def _row_runs(cells):
    """``[(y, first column, last column)]``: sorted ``(y, column)`` cells joined where they
    are neighbours in one row."""
    runs = []
    for y, c in cells:
        if runs and runs[-1][0] == y and runs[-1][2] == c - 1:
            runs[-1][2] = c
        else:
            runs.append([y, c, c])
    return [tuple(r) for r in runs]


def _fit(label, width):
    """``label``, or its last words (``kernel 3``), or less, so that it fits ``width``."""
    words = label.split()
    for k in range(len(words)):
        text = " ".join(words[k:])
        if text_width(text, SMALL_PX) <= width:
            return text
    return words[-1]


def _node(n, centre, half):
    x, y = centre
    hw, hh = half
    fill, stroke = PALETTE.get(n.kind, PALETTE["op"])
    tip = f"<title>{escape(n.title or (n.label + ' ' + n.sub).strip())}</title>"
    out = [f'<g class="ng-node ng-{escape(n.kind)}" data-id="{escape(n.id)}">{tip}']
    if n.shape == "ellipse":
        out.append(f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{hw:.1f}" ry="{hh:.1f}" '
                   f'fill="{fill}" stroke="{stroke}"/>')
        if n.output:
            out.append(f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{hw + 3:.1f}" '
                       f'ry="{hh + 3:.1f}" fill="none" stroke="{stroke}"/>')
    else:
        out.append(f'<rect x="{x - hw:.1f}" y="{y - hh:.1f}" width="{2 * hw:.1f}" '
                   f'height="{2 * hh:.1f}" rx="4" fill="{fill}" stroke="{stroke}"/>')
        if n.output:
            out.append(f'<rect x="{x - hw - 3:.1f}" y="{y - hh - 3:.1f}" '
                       f'width="{2 * hw + 6:.1f}" height="{2 * hh + 6:.1f}" rx="6" '
                       f'fill="none" stroke="{stroke}"/>')
    for k, (text, px, dy) in enumerate(n.lines()):
        style = ' font-weight="bold"' if k == 0 else ' fill="#495057"'
        out.append(_text(x, y + dy, text, px, ' text-anchor="middle"' + style))
    out.append("</g>")
    return out

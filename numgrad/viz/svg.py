"""viz.svg: a layered, left-to-right drawing of a small DAG as one inline SVG string.

Room: leaf (standard library only). Both the eager graph (``grad_fn`` chains) and
the compiler's IR are drawn with it, so neither needs Graphviz or any package.

The layout is Sugiyama's in its simplest form: a node's column is the length of
the longest path reaching it, nodes of a column are ordered by the mean row of
their predecessors (one sweep), and each *band* (forward, backward) gets its own
rows, so the two read as two strips one above the other. Edges are cubic curves.
Groups (fused stages) are drawn as rounded boxes behind their members.
"""
from __future__ import annotations

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
    "hook": ("#ffc9c9", "#e03131"),
    "grad": ("#d3f9d8", "#37b24d"),       # an AccumulateGrad sink / a gradient output
    "saved": ("#fff9db", "#f08c00"),
    "freed": ("#f8f9fa", "#ced4da"),
    "stale": ("#ffe3e3", "#c92a2a"),
}
LEGEND = {"input": "requires grad", "op": "op", "no_grad": "{no_grad}", "detach": "{detach}",
          "hook": "{hook}", "grad": "gradient", "saved": "saved tensor",
          "freed": "freed by backward", "stale": "modified since saved"}

COL_W, ROW_H, NODE_W, NODE_H, PAD = 150, 50, 128, 36, 14
MAX_LABEL = 19


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


@dataclass
class Picture:
    """A laid-out drawing: ``str()`` and ``_repr_svg_`` give the SVG text."""

    nodes: list
    edges: list                          # (src id, dst id, dashed)
    groups: dict = field(default_factory=dict)   # group label -> [node ids]
    bands: tuple = ("forward", "backward")
    title: str = ""

    def svg(self) -> str:
        return render(self)

    __str__ = svg

    def __repr__(self):
        return f"<numgrad picture: {len(self.nodes)} nodes, {len(self.edges)} edges>"

    def _repr_svg_(self):
        return self.svg()

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
    by_id = {n.id: n for n in nodes}
    for i, n in by_id.items():
        if n.pull and not preds[i] and succs[i]:
            col[i] = max(0, min(col[d] for d in succs[i]) - 1)
    return col, preds


def layout(pic: Picture):
    """``{node id: (x, y)}`` (centres), the canvas size and each band's y range."""
    col, preds = _columns(pic.nodes, pic.edges)
    bands = sorted({n.band for n in pic.nodes})
    by_col = {}
    for n in pic.nodes:
        by_col.setdefault((n.band, col[n.id]), []).append(n)
    row = {}
    # Order each column by its predecessors' mean row (the barycentre heuristic).
    for key in sorted(by_col, key=lambda k: (k[1], k[0])):
        members = by_col[key]

        def bary(n):
            ps = [row[p] for p in preds[n.id] if p in row]
            return sum(ps) / len(ps) if ps else 0.0
        members.sort(key=bary)
        for r, n in enumerate(members):
            row[n.id] = r
    heights = {b: max((len(v) for (bb, _), v in by_col.items() if bb == b), default=1)
               for b in bands}
    pos, band_y, y0 = {}, {}, PAD + 18
    for b in bands:
        band_y[b] = (y0 - 16, y0 + heights[b] * ROW_H)
        for n in pic.nodes:
            if n.band == b:
                pos[n.id] = (PAD + col[n.id] * COL_W + NODE_W / 2,
                             y0 + row[n.id] * ROW_H + ROW_H / 2)
        y0 += heights[b] * ROW_H + 34
    width = PAD * 2 + (max(col.values(), default=0) + 1) * COL_W
    return pos, (width, y0 + 20), band_y


def _clip(text):
    text = str(text)
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL - 1] + "…"


def render(pic: Picture) -> str:
    if not pic.nodes:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="30">' \
               '<text x="8" y="20" font-family="monospace" font-size="12">(empty graph)</text></svg>'
    pos, (w, h), band_y = layout(pic)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
           f'viewBox="0 0 {w:.0f} {h:.0f}" font-family="Menlo, Consolas, monospace" '
           f'font-size="11">',
           '<defs><marker id="ng-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="#868e96"/></marker></defs>']
    if pic.title:
        out.append(f'<title>{escape(pic.title)}</title>')
    used_bands = sorted(band_y)
    for b in used_bands:
        y_top, y_bot = band_y[b]
        name = pic.bands[b] if b < len(pic.bands) else f"band {b}"
        fill = "#fbfcfe" if b == 0 else "#fdf8f6"
        out.append(f'<rect x="2" y="{y_top:.0f}" width="{w - 4:.0f}" height="{y_bot - y_top + 10:.0f}" '
                   f'rx="6" fill="{fill}" stroke="#dee2e6"/>')
        out.append(f'<text x="8" y="{y_top + 12:.0f}" fill="#868e96" font-weight="bold">'
                   f'{escape(name)}</text>')
    # A group (a fused kernel) is the union of padded tiles around its members: its members
    # need not form a rectangle, and a bounding box would cover other kernels' nodes.
    hues = ("#4dabf7", "#f59f00", "#20c997", "#cc5de8", "#ff6b6b", "#94d82d")
    for k, (label, ids) in enumerate(pic.groups.items()):
        pts = sorted(pos[i] for i in ids if i in pos)
        if not pts:
            continue
        hue = hues[k % len(hues)]
        tiles = "".join(
            f'<rect x="{x - NODE_W / 2 - 11:.0f}" y="{y - ROW_H / 2:.0f}" '
            f'width="{COL_W}" height="{ROW_H}" rx="2"/>'
            for x, y in pts)
        lx, ly = pts[0]
        out.append(f'<g class="ng-stage" fill="{hue}" fill-opacity="0.13">{tiles}'
                   f'<text x="{lx - NODE_W / 2 - 8:.0f}" y="{ly - NODE_H / 2 - 2:.0f}" '
                   f'fill="{hue}" fill-opacity="1" font-size="9">{escape(label)}</text></g>')
    for s, d, dashed in pic.edges:
        if s not in pos or d not in pos:
            continue
        (x1, y1), (x2, y2) = pos[s], pos[d]
        x1 += NODE_W / 2
        x2 -= NODE_W / 2
        if x2 <= x1:  # same column (a cross-band edge): leave from the bottom
            x1, y1 = pos[s][0], pos[s][1] + NODE_H / 2
            x2, y2 = pos[d][0], pos[d][1] - NODE_H / 2
        mid = (x1 + x2) / 2
        dash = ' stroke-dasharray="4,3"' if dashed else ""
        out.append(f'<path d="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} '
                   f'{x2:.1f},{y2:.1f}" fill="none" stroke="#adb5bd" stroke-width="1.2"{dash} '
                   f'marker-end="url(#ng-arrow)"/>')
    for n in pic.nodes:
        x, y = pos[n.id]
        fill, stroke = PALETTE.get(n.kind, PALETTE["op"])
        tip = f"<title>{escape(n.title or (n.label + ' ' + n.sub).strip())}</title>"
        out.append(f'<g class="ng-node ng-{escape(n.kind)}">{tip}')
        if n.shape == "ellipse":
            out.append(f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{NODE_W / 2:.0f}" '
                       f'ry="{NODE_H / 2:.0f}" fill="{fill}" stroke="{stroke}"/>')
            if n.output:
                out.append(f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{NODE_W / 2 + 3:.0f}" '
                           f'ry="{NODE_H / 2 + 3:.0f}" fill="none" stroke="{stroke}"/>')
        else:
            out.append(f'<rect x="{x - NODE_W / 2:.1f}" y="{y - NODE_H / 2:.1f}" width="{NODE_W}" '
                       f'height="{NODE_H}" rx="4" fill="{fill}" stroke="{stroke}"/>')
            if n.output:
                out.append(f'<rect x="{x - NODE_W / 2 - 3:.1f}" y="{y - NODE_H / 2 - 3:.1f}" '
                           f'width="{NODE_W + 6}" height="{NODE_H + 6}" rx="6" fill="none" '
                           f'stroke="{stroke}"/>')
        if n.sub:
            out.append(f'<text x="{x:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                       f'font-weight="bold">{escape(_clip(n.label))}</text>')
            out.append(f'<text x="{x:.1f}" y="{y + 11:.1f}" text-anchor="middle" fill="#495057" '
                       f'font-size="10">{escape(_clip(n.sub))}</text>')
        else:
            out.append(f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" '
                       f'font-weight="bold">{escape(_clip(n.label))}</text>')
        out.append("</g>")
    kinds = [k for k in LEGEND if any(n.kind == k for n in pic.nodes)]
    lx = PAD
    for k in kinds:
        fill, stroke = PALETTE[k]
        out.append(f'<rect x="{lx}" y="{h - 16:.0f}" width="12" height="10" fill="{fill}" '
                   f'stroke="{stroke}"/><text x="{lx + 16}" y="{h - 7:.0f}" fill="#495057" '
                   f'font-size="10">{escape(LEGEND[k])}</text>')
        lx += 26 + 7 * len(LEGEND[k])
    out.append("</svg>")
    return "\n".join(out)

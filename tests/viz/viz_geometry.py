"""Reading a numgrad picture back from its SVG text: boxes, edges and texts, and the two
checks every picture must pass (text fits its box; no edge runs under a box).

The widths here are this file's own, not the renderer's: a monospace font's character is
0.6 em (Menlo, Consolas and DejaVu Sans Mono all are), so 0.62 em is a safe bound for
ASCII; anything else may come from a fallback font and is counted a full em. A line's ink
is taken to reach 0.8 em above its baseline and 0.25 em below.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
EM_ASCII, EM_OTHER, ASCENT, DESCENT = 0.62, 1.0, 0.8, 0.25


def width(text, px):
    return sum(px * (EM_ASCII if ord(c) < 128 else EM_OTHER) for c in text)


class Shape:
    def __init__(self, el):
        self.kind = el.tag[len(NS):]
        f = {k: float(v) for k, v in el.attrib.items()
             if k in ("x", "y", "width", "height", "cx", "cy", "rx", "ry")}
        if self.kind == "rect":
            self.x0, self.y0 = f["x"], f["y"]
            self.x1, self.y1 = f["x"] + f["width"], f["y"] + f["height"]
        else:
            self.cx, self.cy, self.rx, self.ry = f["cx"], f["cy"], f["rx"], f["ry"]

    def area(self):
        return ((self.x1 - self.x0) * (self.y1 - self.y0) if self.kind == "rect"
                else 3.1416 * self.rx * self.ry)

    def contains(self, x, y, margin=0.0):
        """Whether (x, y) lies inside, at least ``margin`` from the border (a negative
        margin tests strictly inside a slightly shrunken shape)."""
        if self.kind == "rect":
            return (self.x0 + margin <= x <= self.x1 - margin
                    and self.y0 + margin <= y <= self.y1 - margin)
        rx, ry = self.rx - margin, self.ry - margin
        return ((x - self.cx) / rx) ** 2 + ((y - self.cy) / ry) ** 2 <= 1.0


class Text:
    def __init__(self, el, inherited_px):
        self.text = "".join(el.itertext())
        self.x, self.y = float(el.get("x")), float(el.get("y"))
        self.px = float(el.get("font-size", inherited_px))
        self.anchor = el.get("text-anchor", "start")

    def corners(self):
        w = width(self.text, self.px)
        left = {"start": self.x, "middle": self.x - w / 2, "end": self.x - w}[self.anchor]
        top, bottom = self.y - ASCENT * self.px, self.y + DESCENT * self.px
        return [(left, top), (left + w, top), (left, bottom), (left + w, bottom)]


class Parsed:
    """``nodes``: id -> (Shape, [Text]); ``edges``: [(from, to, [(x, y) samples])];
    ``free_texts``: texts outside nodes; ``size``: (width, height)."""

    def __init__(self, svg):
        root = ET.fromstring(svg)
        px = float(root.get("font-size", 11))
        self.size = (float(root.get("width")), float(root.get("height")))
        self.nodes, self.edges, self.free_texts = {}, [], []
        in_node = set()
        for g in root.iter(NS + "g"):
            if "ng-node" not in g.get("class", "").split():
                continue
            shapes = [Shape(el) for el in g if el.tag in (NS + "rect", NS + "ellipse")]
            texts = [Text(el, px) for el in g if el.tag == NS + "text"]
            in_node.update(id(el) for el in g if el.tag == NS + "text")
            self.nodes[g.get("data-id")] = (shapes, texts)
        for el in root.iter(NS + "text"):
            if id(el) not in in_node:
                self.free_texts.append(Text(el, px))
        for p in root.iter(NS + "path"):
            if "ng-edge" in p.get("class", "").split():
                self.edges.append((p.get("data-from"), p.get("data-to"), _samples(p.get("d"))))

    def box(self, node_id):
        """The node's shape (the inner one of a double-bordered output)."""
        return min(self.nodes[node_id][0], key=Shape.area)

    def outline(self, node_id):
        """Everything the node covers (an output's outer border included)."""
        return max(self.nodes[node_id][0], key=Shape.area)


def _samples(d, per_curve=32):
    """Points along an SVG path of absolute M, L and C commands."""
    tokens = re.findall(r"[MLC]|-?\d+(?:\.\d+)?", d)
    pts, cur, i = [], None, 0
    while i < len(tokens):
        cmd = tokens[i]
        nums = []
        i += 1
        while i < len(tokens) and tokens[i] not in "MLC":
            nums.append(float(tokens[i]))
            i += 1
        if cmd == "M":
            cur = (nums[0], nums[1])
            pts.append(cur)
        elif cmd == "L":
            (x0, y0), (x1, y1) = cur, (nums[0], nums[1])
            pts += [(x0 + (x1 - x0) * t / per_curve, y0 + (y1 - y0) * t / per_curve)
                    for t in range(1, per_curve + 1)]
            cur = (x1, y1)
        else:
            (x0, y0), (a, b, c, e, x1, y1) = cur, nums
            for k in range(1, per_curve + 1):
                t = k / per_curve
                u = 1 - t
                pts.append((u ** 3 * x0 + 3 * u * u * t * a + 3 * u * t * t * c + t ** 3 * x1,
                            u ** 3 * y0 + 3 * u * u * t * b + 3 * u * t * t * e + t ** 3 * y1))
            cur = (x1, y1)
    return pts


def text_overflows(svg):
    """``[(text, why)]`` for every text wider or taller than what holds it: a node's text
    must lie inside its shape, any other text inside the canvas."""
    pic = Parsed(svg)
    bad = []
    for nid in pic.nodes:
        box = pic.box(nid)
        for t in pic.nodes[nid][1]:
            if not all(box.contains(x, y, margin=1.0) for x, y in t.corners()):
                bad.append((t.text, f"outside its {box.kind} in node {nid}"))
    w, h = pic.size
    for t in pic.free_texts:
        if not all(0 <= x <= w and 0 <= y <= h for x, y in t.corners()):
            bad.append((t.text, "outside the canvas"))
    return bad


def edges_under_boxes(svg):
    """``[(edge from, edge to, node id)]`` for every edge that passes through a box other
    than the two it joins."""
    pic = Parsed(svg)
    bad = []
    for a, b, pts in pic.edges:
        for nid in pic.nodes:
            if nid in (a, b):
                continue
            shape = pic.outline(nid)
            if any(shape.contains(x, y, margin=0.5) for x, y in pts):
                bad.append((a, b, nid))
    return bad

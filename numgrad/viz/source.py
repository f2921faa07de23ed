"""viz.source: generated source as a ``str`` that Jupyter shows highlighted.

Room: leaf (standard library only). ``compiled.source(x)`` returns a
``SourceText``: a plain ``str`` (so ``print``, ``in`` and ``compile`` work as
before) whose ``_repr_html_`` shows each program (forward, backward) under its
own heading with minimal Python highlighting (no Pygments needed).
"""
from __future__ import annotations

import html
import keyword
import re

_TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>'[^'\n]*'|"[^"\n]*")
  | (?P<deco>^[ \t]*@\w+)
  | (?P<number>\b\d+(?:\.\d*)?(?:e[+-]?\d+)?\b)
  | (?P<word>\b[A-Za-z_]\w*\b)
""", re.VERBOSE | re.MULTILINE)
_COLOURS = {"comment": "#6a737d", "string": "#032f62", "deco": "#6f42c1", "number": "#005cc5",
            "keyword": "#d73a49", "def": "#6f42c1"}
_KW = set(keyword.kwlist)
# A page's stylesheet may give <pre> a proportional font: name a monospace one outright.
PRE_STYLE = ("font-family:Menlo,Consolas,'DejaVu Sans Mono',monospace;font-size:11px;"
             "line-height:1.35;background:#f6f8fa;padding:8px;overflow-x:auto")


def highlight(code: str) -> str:
    """HTML for ``code`` with comments, strings, numbers, keywords and names of defined
    functions coloured."""
    out, pos, after_def = [], 0, False
    for m in _TOKEN.finditer(code):
        out.append(html.escape(code[pos:m.start()]))
        kind, text = m.lastgroup, m.group()
        if kind == "word":
            if after_def:
                kind = "def"
            elif text in _KW:
                kind = "keyword"
            else:
                kind = None
            after_def = text == "def"
        if kind:
            style = f"color:{_COLOURS[kind]}" + (";font-style:italic" if kind == "comment" else "")
            out.append(f'<span style="{style}">{html.escape(text)}</span>')
        else:
            out.append(html.escape(text))
        pos = m.end()
    out.append(html.escape(code[pos:]))
    return "".join(out)


class SourceText(str):
    """The source of one or more programs; ``parts`` is ``[(title, source)]``."""

    def __new__(cls, parts):
        parts = [(str(t), str(s)) for t, s in parts]
        text = "\n\n".join(f"# ===== {t} =====\n{s}" if len(parts) > 1 else s for t, s in parts)
        obj = super().__new__(cls, text)
        obj.parts = parts
        return obj

    def _repr_html_(self):
        blocks = []
        for title, src in self.parts:
            blocks.append(
                f"<details open><summary><b>{html.escape(title)}</b></summary>"
                f'<pre style="{PRE_STYLE}">{highlight(src)}</pre></details>')
        return "\n".join(blocks)

"""The documentation runs: every ```python block in README.md and docs/*.md is executed.

Blocks of one file run in order in one namespace (a later block may use an earlier one's
names), in a fresh temporary directory, as a reader would paste them. A block that is not
meant to run is fenced as something else (```console, ```text). Each block's failure names
the file and the line where the block starts, so a broken example is found at once.

A block whose first line is ``# needs: X`` shows a feature that may be missing here (a GPU,
an optional extra, a part of numgrad still being written): it runs when X is available and
is otherwise only compiled (so its syntax cannot rot), with a warning naming it. ``NEEDS``
says how each X is probed; an X it does not know is an error, so a typo cannot skip a block.

Besides: the README stays short and keeps its two commands, its module map names every
file under ``numgrad/``, and every relative link in the docs reaches a file and heading.
"""
from __future__ import annotations

import importlib.util
import os
import re
import warnings
from pathlib import Path

import pytest

import numgrad as ng

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250
# The README's two commands, verbatim: what a new user pastes first.
README_COMMANDS = (
    'pip install -e . && python -m numgrad demo',
    'pip install -e ".[dev]" && python -m pytest',
)

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
_NEEDS = re.compile(r"\A#[ \t]*needs:[ \t]*([\w-]+)[ \t]*$", re.M)


def _cuda_available() -> bool:
    probe = getattr(getattr(ng, "cuda", None), "is_available", None)
    if probe is None:
        from numgrad.devices import cuda_is_available as probe
    return bool(probe())


NEEDS = {
    "training": lambda: hasattr(ng, "optim"),
    "distributed": lambda: (importlib.util.find_spec("distributed") is not None
                            and hasattr(ng, "distributed")),
    "cuda": _cuda_available,
}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text, each with the line its code starts on."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _FENCE.finditer(text)]


def needs(code: str) -> str | None:
    """The X of a block whose first line is ``# needs: X``, else None."""
    m = _NEEDS.match(code)
    return m.group(1) if m else None


def test_block_finder_sees_fences_and_only_python():
    text = "a\n```python\nx = 1\n```\n```console\n$ ls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (9, "y = 2\n")]


def test_needs_reads_only_the_first_line():
    assert needs("# needs: cuda\nx = 1\n") == "cuda"
    assert needs("#needs:training\n") == "training"
    assert needs("x = 1\n# needs: cuda\n") is None
    assert needs("# needs cuda\n") is None


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_python_blocks_run(path, tmp_path, monkeypatch):
    blocks = python_blocks(path.read_text())
    if not blocks:
        pytest.skip(f"{path.name} has no python blocks")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NUMGRAD_PROGRESS", os.environ.get("NUMGRAD_PROGRESS", "0"))
    namespace: dict = {"__name__": "__docs__"}
    for line, code in blocks:
        where = f"{path.relative_to(ROOT)}:{line}"
        compiled = compile(code, where, "exec")
        need = needs(code)
        if need is not None:
            assert need in NEEDS, (f"the python block at {where} needs {need!r}; known: "
                                   f"{sorted(NEEDS)} (add a probe to NEEDS in {__file__})")
            if not NEEDS[need]():
                warnings.warn(f"the python block at {where} was not run: {need} is not "
                              f"available here", UserWarning, stacklevel=1)
                continue
        try:
            exec(compiled, namespace)
        except Exception as exc:  # noqa: BLE001 - re-raised with where the block is
            raise AssertionError(
                f"the python block at {where} failed: {type(exc).__name__}: {exc}") from exc


def test_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text()
    lines = text.count("\n") + (not text.endswith("\n"))
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines, more than {README_MAX_LINES}: move detail to docs/")
    for command in README_COMMANDS:
        assert command in text, f"README.md lost the command {command!r}"


def module_map(text: str) -> set[str]:
    """The files the README's module map names, as paths under ``numgrad/``.

    Each line of the map's ```text block starts with paths separated by ", " (a
    ``dir/{a,b}.py`` spells several; a path ending in "/" opens a folder for the lines
    indented below it), then two spaces and what they hold.
    """
    block = text.split("## Module map", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    folders: dict[int, str] = {}
    files = set()
    for line in block.splitlines()[1:]:          # the first line is "numgrad/"
        indent = len(line) - len(line.lstrip())
        folders = {i: f for i, f in folders.items() if i < indent}
        prefix = "".join(folders[i] for i in sorted(folders))
        for item in re.split(r"\s{2,}", line.strip())[0].split(", "):
            if item.endswith("/"):
                folders[indent] = item
                continue
            m = re.fullmatch(r"(.*)\{(.*)\}(.*)", item)
            names = [m.group(1) + n + m.group(3) for n in m.group(2).split(",")] if m else [item]
            files.update(prefix + n for n in names)
    return files


def test_module_map_parser():
    text = ("## Module map\n```text\nnumgrad/\n  a.py, b/{c,d}.py  what\n  e/\n"
            "    f.py  g\n  h.py  i\n```\n")
    assert module_map(text) == {"a.py", "b/c.py", "b/d.py", "e/f.py", "h.py"}


def test_readme_module_map_names_every_file():
    package = ROOT / "numgrad"
    on_disk = {str(p.relative_to(package)) for p in package.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")}
    named = module_map(README.read_text())
    left_out, missing = sorted(on_disk - named), sorted(named - on_disk)
    assert not left_out, f"README.md's module map leaves out {left_out}"
    assert not missing, f"README.md's module map names files that do not exist: {missing}"


# Pages other parts of the project are writing; a link to one is fine until it exists.
PENDING_PAGES = {"docs/training.md", "docs/distributed.md"}
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*$", re.M)


def anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    outside_code = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {anchor(h) for h in _HEADING.findall(outside_code)}


def test_anchor_matches_github():
    assert anchor("`@ng.jit` and what it sees") == "ngjit-and-what-it-sees"
    assert anchor("The disk cache's security model") == "the-disk-caches-security-model"
    assert anchor("At scale: W2 from 1e3 to 1e8 elements") == "at-scale-w2-from-1e3-to-1e8-elements"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_links_resolve(path):
    text = path.read_text()
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue                                   # a web address: not checked offline
        file, _, frag = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if not dest.exists():
            if rel not in PENDING_PAGES:
                broken.append(f"{target} (no file {rel})")
            continue
        if frag and dest.suffix == ".md" and frag not in anchors(dest.read_text()):
            broken.append(f"{target} (no heading #{frag} in {rel})")
    assert not broken, f"{path.relative_to(ROOT)} links to what is not there: {broken}"

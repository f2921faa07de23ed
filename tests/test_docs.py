"""The documentation runs: every ```python block in README.md and docs/*.md is executed.

Blocks of one file run in order in one namespace (a later block may use an earlier one's
names), in a fresh temporary directory, as a reader would paste them. A block that is not
meant to run is fenced as something else (```console, ```text). Each block's failure names
the file and the line where the block starts, so a broken example is found at once.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text, each with the line its code starts on."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _FENCE.finditer(text)]


def test_block_finder_sees_fences_and_only_python():
    text = "a\n```python\nx = 1\n```\n```console\n$ ls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (9, "y = 2\n")]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_python_blocks_run(path, tmp_path, monkeypatch):
    blocks = python_blocks(path.read_text())
    if not blocks:
        pytest.skip(f"{path.name} has no python blocks")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NUMGRAD_PROGRESS", os.environ.get("NUMGRAD_PROGRESS", "0"))
    namespace: dict = {"__name__": "__docs__"}
    for line, code in blocks:
        try:
            exec(compile(code, f"{path.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - re-raised with where the block is
            raise AssertionError(
                f"the python block at {path.relative_to(ROOT)} line {line} failed: "
                f"{type(exc).__name__}: {exc}") from exc

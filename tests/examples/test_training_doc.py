"""docs/training.md shows only what runs: its numgrad code blocks execute, learn, and the
port differs from the PyTorch original only in the lines the page says."""
from __future__ import annotations

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "training.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def _numgrad_blocks():
    return [b for b in _blocks() if b.startswith("import numgrad")]


@pytest.mark.parametrize("index", range(2))
def test_numgrad_blocks_run_and_learn(index, capsys):
    scope = {"__name__": "training_doc"}
    exec(compile(_numgrad_blocks()[index], f"{DOC}:{index}", "exec"), scope)  # noqa: S102
    assert float(scope["loss"]) < 0.69  # below the loss of a coin flip between 2 classes
    if "accuracy" in scope:
        assert float(scope["accuracy"]) > 0.8
        assert "accuracy" in capsys.readouterr().out


def test_port_changes_only_the_imports_and_the_save():
    torch_src, ng_src = _blocks()[0].splitlines(), _numgrad_blocks()[0].splitlines()
    changed = [(a, b) for a, b in zip(torch_src, ng_src) if a != b]
    assert [b for _, b in changed] == ["import numgrad as torch", "from numgrad import nn",
                                       "from numgrad.utils.data import DataLoader, TensorDataset"]
    assert torch_src[len(ng_src):] == ['torch.save(model.state_dict(), "model.pt")']

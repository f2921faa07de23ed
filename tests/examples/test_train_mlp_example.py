"""examples/train_mlp.py trains for a few steps, eagerly and under @ng.jit: the loss falls,
the accuracy beats chance, and both modes follow the same path."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytest.importorskip("sklearn")
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def _load():
    spec = importlib.util.spec_from_file_location("train_mlp_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_mlp_example_learns_in_both_modes(capsys):
    results = _load().main(["--steps", "40", "--batch-size", "32", "--no-progress"])
    assert set(results) == {"eager", "jit"}
    for mode, r in results.items():
        losses = r["losses"]
        assert len(losses) == 40
        assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5, mode
        assert r["accuracy"] > 0.5, mode  # chance is 0.1 (ten digits)
    # the compiled loss is the eager loss: the same seeds give the same path
    eager, jit = results["eager"]["losses"], results["jit"]["losses"]
    assert jit == pytest.approx(eager, rel=1e-4)
    out = capsys.readouterr().out
    assert "test accuracy" in out and "jit:" in out and "eager:" in out
    # the compiles are timed apart from the steady steps, each line says which is which
    assert "jit: first 3 steps (trace + compile)" in out and "eager: first 3 steps" in out
    assert out.count("ms/step (median)") == 2 and "steady steps: jit" in out
    for r in results.values():
        assert 0 < r["step_seconds"] < r["seconds"] and r["first_seconds"] < r["seconds"]


def test_train_mlp_example_progress_lines_without_tqdm(monkeypatch, capsys):
    import builtins
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("no tqdm here")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    _load().main(["--eager", "--steps", "10"])
    out = capsys.readouterr().out
    assert "eager: step 10/10" in out and "test accuracy" in out

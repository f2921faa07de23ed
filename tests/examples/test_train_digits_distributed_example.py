"""examples/train_digits_distributed.py trains through ``dp.backward`` and ``opt.step()``
on a 2-worker cluster: the loss falls, the accuracy beats chance, and the path is the one
the same model takes trained eagerly in this process (``loss(...).backward()``), within
float32 rounding. In-process workers (threads) keep it fast; the example's own run
starts worker processes."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

pytest.importorskip("sklearn")
distributed = pytest.importorskip("distributed")

import numgrad as ng  # noqa: E402

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_digits_distributed.py"
STEPS = 30


def _load():
    spec = importlib.util.spec_from_file_location("train_digits_distributed_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod     # the loss pickles by reference to it
    spec.loader.exec_module(mod)
    return mod


class _Eager:
    """``dp.backward`` done in this process: the loss and its backward, eagerly."""

    def __init__(self, mod):
        self.mod = mod

    def backward(self, params, X, T):
        value = self.mod.loss(params, ng.tensor(X), ng.tensor(T))
        value.backward()
        return value.detach()


def test_distributed_training_follows_the_eager_path(capsys):
    mod = _load()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        got = mod.main(["--steps", str(STEPS)], client=client)
    losses = got["losses"]
    assert len(losses) == STEPS and got["last_step"]["shards"] == 2
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5
    assert got["accuracy"] > 0.5                        # chance is 0.1 (ten digits)
    eager, accuracy, _ = mod.train(_Eager(mod), STEPS, log=lambda line: None)
    assert losses == pytest.approx(eager, rel=1e-4)
    assert got["accuracy"] == pytest.approx(accuracy, abs=0.01)
    assert "test accuracy" in capsys.readouterr().out

"""Why a call traced again, said in words: ``verbose=True``, ``NUMGRAD_LOG_RECOMPILES=1``
and the ``numgrad.jit`` logger name the guard that failed with its old and new value (as
PyTorch's ``TORCH_LOGS=recompiles`` does)."""
from __future__ import annotations

import logging

import numgrad as ng

SCALE = 0.5


class Config:
    def __init__(self):
        self.gain = 2.0
        self.bias = ng.zeros(3)


CFG = Config()


@ng.jit(backend="numpy", verbose=True)
def loss(x):
    return (x * SCALE * CFG.gain + CFG.bias).sum()


def _reasons(out):
    return [ln.split("traced again: ", 1)[1] for ln in out.splitlines() if "traced again" in ln]


def test_verbose_names_the_changed_argument_global_attribute_and_grad_mode(capsys, monkeypatch):
    loss(ng.ones(3))
    loss(ng.ones(3, requires_grad=True))
    monkeypatch.setattr(__import__(__name__), "SCALE", 0.25)
    loss(ng.ones(3, requires_grad=True))
    monkeypatch.setattr(CFG, "gain", 3.0)
    loss(ng.ones(3, requires_grad=True))
    monkeypatch.setattr(CFG, "bias", ng.zeros(3, dtype=ng.float64))
    loss(ng.ones(3, requires_grad=True))
    with ng.no_grad():
        loss(ng.ones(3, requires_grad=True))
    reasons = _reasons(capsys.readouterr().out)
    assert reasons[0] == "argument 'x': was float32[3], now float32[3] requires_grad"
    assert reasons[1] == "SCALE: was 0.5, now 0.25"
    assert reasons[2] == "CFG.gain: was 2.0, now 3.0"
    assert reasons[3].startswith("CFG.bias: was tensor float32[3]")
    assert "now tensor float64[3]" in reasons[3]
    assert reasons[4] == "grad mode: was on, now off"
    assert len(reasons) == 5


def test_the_flag_prints_to_stderr_and_the_logger_always_hears(capsys, monkeypatch, caplog):
    @ng.jit(backend="numpy")
    def f(x):
        return x * 2

    f(ng.ones(2))
    with caplog.at_level(logging.INFO, logger="numgrad.jit"):
        f(ng.ones(5))
    assert capsys.readouterr().err == ""  # quiet by default
    assert [r.getMessage() for r in caplog.records] == [
        f"{f.__qualname__} traced again: argument 'x': was float32[2], now float32[5]"]
    monkeypatch.setenv("NUMGRAD_LOG_RECOMPILES", "1")
    f(ng.ones(2, 2))
    assert "traced again: argument 'x': was float32[5], now float32[2, 2]" in \
        capsys.readouterr().err


def test_a_layer_switched_to_eval_or_a_replaced_parameter_is_named(capsys):
    model = ng.nn.Sequential(ng.nn.Linear(2, 2), ng.nn.Dropout(0.5))

    @ng.jit(backend="numpy", verbose=True)
    def out(x):
        return model(x).sum()

    x = ng.ones(1, 2)
    out(x)
    model.eval()
    out(x)
    model[0].weight = ng.nn.Parameter(ng.ones(2, 2))
    out(x)
    reasons = _reasons(capsys.readouterr().out)
    assert reasons[0] == "model._modules['1'].training: was True, now False"
    assert reasons[1].startswith("model._modules['0'].weight: was tensor float32[2, 2]")
    assert reasons[1].endswith("(another object)")

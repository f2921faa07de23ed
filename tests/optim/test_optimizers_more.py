"""RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam against PyTorch: the same initial
values, the same loss, every step's parameters compared (float64 to 1e-10, float32 to
float tolerance), and the state_dict's layout and round trip (numgrad's state loaded into
a fresh PyTorch optimizer continues PyTorch's trajectory, and back)."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

CASES = [
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]
STEPS = 12


def _init(dtype):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((3, 2)).astype(dtype), rng.standard_normal(4).astype(dtype)]


def _loss(lib, params):
    w, b = params
    return (lib.tanh(w) ** 2).sum() + ((b - 0.5) ** 4).sum() + (w * w).sum() * b.sum()


def _pair(name, kw, dtype):
    arrays = _init(dtype)
    ps = [ng.nn.Parameter(ng.tensor(a)) for a in arrays]
    ts = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    return ps, getattr(ng.optim, name)(ps, **kw), ts, getattr(torch.optim, name)(ts, **kw)


def _step(opt, lib, params):
    opt.zero_grad()
    _loss(lib, params).backward()
    opt.step()


def _close(ps, ts, rtol, atol):
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
@pytest.mark.parametrize("dtype,rtol,atol", [(np.float64, 1e-10, 1e-12),
                                             (np.float32, 2e-5, 1e-6)])
def test_trajectory_matches_torch(name, kw, dtype, rtol, atol):
    ps, opt, ts, topt = _pair(name, kw, dtype)
    for _ in range(STEPS):
        _step(opt, ng, ps)
        _step(topt, torch, ts)
        _close(ps, ts, rtol, atol)


def _convert(obj, src, make):
    """A state dict with each ``src`` tensor rebuilt by ``make`` from its values."""
    if isinstance(obj, src):
        return make(obj.numpy())
    if isinstance(obj, dict):
        return {k: _convert(v, src, make) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_convert(v, src, make) for v in obj]
    return obj


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_layout_and_round_trip(name, kw):
    ps, opt, ts, topt = _pair(name, kw, np.float64)
    for _ in range(3):
        _step(opt, ng, ps)
        _step(topt, torch, ts)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert list(sd["state"]) == list(tsd["state"])
    for i, entry in sd["state"].items():
        tentry = tsd["state"][i]
        assert list(entry) == list(tentry)  # PyTorch's keys, in PyTorch's order
        for key, v in entry.items():
            assert v.dtype.name == str(tentry[key].dtype).split(".")[1]
            np.testing.assert_allclose(v.numpy(), tentry[key].numpy(), rtol=1e-10)
    assert list(sd["param_groups"][0].items()) == list(tsd["param_groups"][0].items())
    # numgrad's state continues in PyTorch and PyTorch's in numgrad.
    ps2, opt2, ts2, topt2 = _pair(name, kw, np.float64)
    for p2, p in zip(ps2, ps):
        p2.data = p.detach().clone()
    with torch.no_grad():
        for t2, p in zip(ts2, ps):
            t2.copy_(torch.tensor(p.detach().numpy()))
    topt2.load_state_dict(_convert(sd, ng.Tensor, torch.tensor))
    opt2.load_state_dict(_convert(tsd, torch.Tensor, ng.tensor))
    for _ in range(3):
        _step(opt2, ng, ps2)
        _step(topt2, torch, ts2)
        _close(ps2, ts2, 1e-10, 1e-12)


@pytest.mark.parametrize("name,kw,message", [
    ("RMSprop", dict(alpha=-1), "Invalid alpha value: -1"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value: -1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adamax", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(lr=-1), "Invalid learning rate: -1"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
])
def test_bad_hyperparameters_raise_torch_errors(name, kw, message):
    with pytest.raises(ValueError) as ours:
        getattr(ng.optim, name)([ng.nn.Parameter(ng.zeros(1))], **kw)
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(1))], **kw)
    assert str(ours.value) == str(theirs.value) == message


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_tensor_kernels_follow_the_same_path(name, kw, monkeypatch):
    # Off the CPU the updates run as numgrad tensor ops (kernels.TensorKernels); forcing
    # that kernel set on CPU tensors checks its spelling of each update against PyTorch.
    from numgrad.optim import kernels
    monkeypatch.setattr(kernels, "kernels_for", lambda t: kernels.TensorKernels)
    ps, opt, ts, topt = _pair(name, kw, np.float64)
    for _ in range(4):
        _step(opt, ng, ps)
        _step(topt, torch, ts)
    _close(ps, ts, 1e-10, 1e-12)

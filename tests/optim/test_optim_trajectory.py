"""Training trajectories against PyTorch: the same initial weights, the same data and the same
optimizer give the same losses and final parameters over 25 steps (float64, rtol 1e-9),
eagerly, with the loss under ``@ng.jit``, and with ``ng.jit(ng.value_and_grad(...))``.

The weights are copied into torch through ``state_dict``, so the key names are checked too.
One numgrad model serves every jitted case (its weights are reset in place by
``load_state_dict``), so each jitted loss compiles once for the whole module.
"""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn
from numgrad.nn import functional as F

torch = pytest.importorskip("torch")

STEPS = 25
RTOL = 1e-9

CASES = {
    "sgd": (dict(lr=0.1), dict(lr=0.1)),
    "sgd_momentum": (dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9)),
    "sgd_nesterov_wd": (dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2),
                        dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2)),
    "sgd_dampening_maximize": (dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True),
                               dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)),
    "adam": (dict(lr=0.01), dict(lr=0.01)),
    "adam_wd_amsgrad": (dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True),
                        dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    "adamw": (dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, weight_decay=0.1)),
}
OPTIMIZERS = {"sgd": ("SGD", "SGD"), "adam": ("Adam", "Adam"), "adamw": ("AdamW", "AdamW")}


def _classes(case):
    return OPTIMIZERS["adamw" if case.startswith("adamw") else case.split("_")[0]]


def _data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 5))
    y = rng.integers(0, 3, 16)
    return x, y


def _ng_model():
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def _torch_model():
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 3)).double()


def _initial_state():
    ng.manual_seed(3)
    return {k: v.numpy().copy() for k, v in _ng_model().state_dict().items()}


INIT = _initial_state()
X, Y = _data()
SHARED = _ng_model()  # the model every jitted loss captures


def _torch_run(case, groups=False):
    tm = _torch_model()
    tm.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in INIT.items()})
    cls, kwargs = getattr(torch.optim, _classes(case)[1]), CASES[case][1]
    params = _split(list(tm.parameters())) if groups else tm.parameters()
    opt = cls(params, foreach=False, **kwargs)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), {k: v.detach().numpy() for k, v in tm.state_dict().items()}


def _split(params):
    # two groups: the first layer at a tenth of the default rate
    return [{"params": params[:2], "lr": 0.01}, {"params": params[2:]}]


def _reset(model):
    model.load_state_dict({k: ng.from_numpy(v.copy()) for k, v in INIT.items()})
    return model


def _ng_optimizer(case, model, groups=False):
    cls, kwargs = getattr(ng.optim, _classes(case)[0]), CASES[case][0]
    params = _split(list(model.parameters())) if groups else model.parameters()
    return cls(params, **kwargs)


def _ng_loss(model):
    return lambda x, y: F.cross_entropy(model(x), y)


_JITTED = {}


def _jitted_loss():
    if "loss" not in _JITTED:
        _JITTED["loss"] = ng.jit(_ng_loss(SHARED))
    return _JITTED["loss"]


def _functional_loss(w1, b1, w2, b2, x, y):
    return F.cross_entropy(F.linear(ng.tanh(F.linear(x, w1, b1)), w2, b2), y)


def _jitted_value_and_grad():
    if "vg" not in _JITTED:
        _JITTED["vg"] = ng.jit(ng.value_and_grad(_functional_loss, argnums=(0, 1, 2, 3)))
    return _JITTED["vg"]


def _ng_run(case, mode, groups=False):
    model = _reset(SHARED if mode != "eager" else _ng_model())
    opt = _ng_optimizer(case, model, groups)
    x, y = ng.from_numpy(X.copy()), ng.from_numpy(Y.copy())
    loss_fn = _jitted_loss() if mode == "jit" else _ng_loss(model)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        if mode == "value_and_grad":
            params = list(model.parameters())
            loss, grads = _jitted_value_and_grad()(*params, x, y)
            for p, g in zip(params, grads):
                p.grad = g
        else:
            loss = loss_fn(x, y)
            loss.backward()
        opt.step()
        losses.append(float(loss))
    return np.array(losses), {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _check(ours, theirs):
    losses, params = ours
    t_losses, t_params = theirs
    np.testing.assert_allclose(losses, t_losses, rtol=RTOL, atol=0)
    assert list(params) == list(t_params)
    for k in params:
        np.testing.assert_allclose(params[k], t_params[k], rtol=RTOL, atol=1e-13, err_msg=k)
    assert t_losses[-1] != t_losses[0]  # the run moved


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["eager", "jit", "value_and_grad"])
def test_trajectory_matches_torch(case, mode):
    _check(_ng_run(case, mode), _torch_run(case))


@pytest.mark.parametrize("case", ["sgd_momentum", "adam"])
def test_param_groups_trajectory_matches_torch(case):
    _check(_ng_run(case, "eager", groups=True), _torch_run(case, groups=True))


def test_jitted_loss_compiled_once():
    # every jitted case above reused one plan: the optimizer's in-place updates are read
    # at each call, not frozen into the plan
    _ng_run("sgd_momentum", "jit")
    _ng_run("adam", "jit")
    assert _jitted_loss().stats.traces == 1


@pytest.mark.parametrize("case", ["sgd_momentum", "adam_wd_amsgrad"])
def test_resume_from_torch_optimizer_state(case):
    # 10 steps in torch, then its model and optimizer state_dicts (tensors converted) are
    # loaded into numgrad: both continue for 10 more steps along the same path.
    tm = _torch_model()
    tm.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in INIT.items()})
    topt = getattr(torch.optim, _classes(case)[1])(tm.parameters(), foreach=False,
                                                   **CASES[case][1])
    x, y = torch.from_numpy(X), torch.from_numpy(Y)

    def torch_step():
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(x), y)
        loss.backward()
        topt.step()
        return loss.item()
    for _ in range(10):
        torch_step()
    model = _ng_model()
    model.load_state_dict({k: ng.from_numpy(v.detach().numpy().copy())
                           for k, v in tm.state_dict().items()})
    opt = _ng_optimizer(case, model)
    sd = topt.state_dict()
    opt.load_state_dict({
        "state": {i: {k: ng.from_numpy(v.numpy().copy()) for k, v in s.items()}
                  for i, s in sd["state"].items()},
        "param_groups": sd["param_groups"]})
    nx, ny = ng.from_numpy(X.copy()), ng.from_numpy(Y.copy())
    ours, theirs = [], []
    for _ in range(10):
        opt.zero_grad()
        loss = F.cross_entropy(model(nx), ny)
        loss.backward()
        opt.step()
        ours.append(float(loss))
        theirs.append(torch_step())
    np.testing.assert_allclose(ours, theirs, rtol=RTOL)


def test_state_dict_layout_matches_torch():
    model = _reset(_ng_model())
    opt = _ng_optimizer("adam_wd_amsgrad", model)
    tm = _torch_model()
    topt = torch.optim.Adam(tm.parameters(), **CASES["adam_wd_amsgrad"][1])
    for o, m, x, y, lossf in ((opt, model, ng.from_numpy(X), ng.from_numpy(Y), F.cross_entropy),
                              (topt, tm, torch.from_numpy(X), torch.from_numpy(Y),
                               torch.nn.functional.cross_entropy)):
        lossf(m(x), y).backward()
        o.step()
    ours, theirs = opt.state_dict(), topt.state_dict()
    assert list(ours["state"]) == list(theirs["state"])
    for i in ours["state"]:
        assert list(ours["state"][i]) == list(theirs["state"][i])
        assert float(ours["state"][i]["step"]) == float(theirs["state"][i]["step"])
        assert str(ours["state"][i]["step"].dtype).split(".")[-1] == \
            str(theirs["state"][i]["step"].dtype).split(".")[-1]
    for og, tg in zip(ours["param_groups"], theirs["param_groups"]):
        assert og["params"] == tg["params"]
        for k, v in og.items():
            assert tg[k] == v, k

"""Optimizer API: construction errors (torch's own messages), param groups, zero_grad, the
closure, in-place updates and versions, state_dict round trips, schedulers' rates against
torch, and the TracingError a jitted step raises."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

torch = pytest.importorskip("torch")


def _messages(build_ours, build_theirs, exc=ValueError):
    with pytest.raises(exc) as ours:
        build_ours()
    with pytest.raises(exc) as theirs:
        build_theirs()
    return str(ours.value), str(theirs.value)


def _params(lib, n=2):
    return [lib.nn.Parameter(lib.ones(3)) for _ in range(n)]


@pytest.mark.parametrize("kind,kwargs", [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(lr=0.1, momentum=-0.5)),
    ("SGD", dict(lr=0.1, weight_decay=-1.0)), ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-0.1)), ("Adam", dict(eps=-1.0)), ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))), ("AdamW", dict(weight_decay=-0.1)),
])
def test_invalid_hyperparameters_match_torch(kind, kwargs):
    ours, theirs = _messages(lambda: getattr(ng.optim, kind)(_params(ng), **kwargs),
                             lambda: getattr(torch.optim, kind)(_params(torch), **kwargs))
    assert ours == theirs


def test_bad_params_match_torch():
    assert len(set(_messages(lambda: ng.optim.SGD([], lr=0.1),
                             lambda: torch.optim.SGD([], lr=0.1)))) == 1
    ours, theirs = _messages(lambda: ng.optim.SGD(ng.nn.Parameter(ng.ones(2)), lr=0.1),
                             lambda: torch.optim.SGD(torch.nn.Parameter(torch.ones(2)), lr=0.1),
                             TypeError)
    assert ours.replace("numgrad", "torch") == theirs
    assert len(set(_messages(
        lambda: ng.optim.SGD([ng.ones(2, requires_grad=True) * 2], lr=0.1),
        lambda: torch.optim.SGD([torch.ones(2, requires_grad=True) * 2], lr=0.1)))) == 1


def test_add_param_group_duplicates_and_defaults():
    ps, tps = _params(ng, 3), _params(torch, 3)
    opt, topt = ng.optim.SGD(ps[:2], lr=0.1, momentum=0.9), \
        torch.optim.SGD(tps[:2], lr=0.1, momentum=0.9)
    assert len(set(_messages(lambda: opt.add_param_group({"params": ps[1:]}),
                             lambda: topt.add_param_group({"params": tps[1:]})))) == 1
    opt.add_param_group({"params": [ps[2]], "lr": 0.5})
    g = opt.param_groups[1]
    assert g["lr"] == 0.5 and g["momentum"] == 0.9 and g["params"][0] is ps[2]
    with pytest.warns(UserWarning, match="duplicate parameters"):
        ng.optim.SGD([ps[0], ps[0]], lr=0.1)


def test_zero_grad_and_step_skip_params_without_grad():
    a, b = _params(ng)
    opt = ng.optim.Adam([a, b], lr=0.1)
    (a * 2).sum().backward()
    opt.step()
    assert b.tolist() == [1.0, 1.0, 1.0] and b not in opt.state
    assert a.tolist() != [1.0, 1.0, 1.0]
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and not a.grad.numpy().any()
    opt.zero_grad()
    assert a.grad is None


def test_step_is_in_place_and_bumps_version():
    p = nn.Parameter(ng.ones(3))
    storage = p.detach().numpy()
    opt = ng.optim.SGD([p], lr=0.5, momentum=0.9)
    (p * p).sum().backward()
    v = p._version
    opt.step()
    assert p._version > v
    assert np.shares_memory(storage, p.detach().numpy()) and storage.tolist() == [0.0] * 3
    # a graph that saved p before the step now refuses to backward, as in torch
    q = nn.Parameter(ng.ones(2))
    y = (q * q).sum()
    opt2 = ng.optim.SGD([q], lr=0.1)
    q.grad = ng.ones(2)
    opt2.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_closure_runs_with_grad_and_its_loss_is_returned():
    p = nn.Parameter(ng.tensor([2.0]))
    opt = ng.optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    with ng.no_grad():
        loss = opt.step(closure)
    assert float(loss) == 4.0 and p.tolist() == [1.0]


@pytest.mark.parametrize("kind,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(lr=0.1, amsgrad=True))])
def test_state_dict_round_trip_continues_identically(kind, kwargs):
    def run(resume_at=None):
        ng.manual_seed(0)
        m = nn.Linear(3, 1).double()
        opt = getattr(ng.optim, kind)(m.parameters(), **kwargs)
        x = ng.linspace(-1, 1, 12, dtype=ng.float64).reshape(4, 3)
        losses = []
        for i in range(8):
            if i == resume_at:  # a fresh model and optimizer from the saved states
                saved_m, saved_o = m.state_dict(), opt.state_dict()
                m = nn.Linear(3, 1).double()
                m.load_state_dict(saved_m)
                opt = getattr(ng.optim, kind)(m.parameters(), **kwargs)
                opt.load_state_dict(saved_o)
            opt.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        return losses
    assert run() == run(resume_at=4)


def test_load_state_dict_group_errors_match_torch():
    opt, topt = ng.optim.SGD(_params(ng), lr=0.1), torch.optim.SGD(_params(torch), lr=0.1)
    for sd in ({"state": {}, "param_groups": []},
               {"state": {}, "param_groups": [{"params": [0], "lr": 0.1}]}):
        assert len(set(_messages(lambda sd=sd: opt.load_state_dict(sd),
                                 lambda sd=sd: topt.load_state_dict(sd)))) == 1


def test_load_state_dict_copies_and_casts():
    p = nn.Parameter(ng.ones(3, dtype=ng.float64))
    opt = ng.optim.SGD([p], lr=0.1, momentum=0.9)
    buf = ng.ones(3, dtype=ng.float32)
    opt.load_state_dict({"state": {0: {"momentum_buffer": buf}},
                         "param_groups": [dict(opt.state_dict()["param_groups"][0])]})
    mine = opt.state[p]["momentum_buffer"]
    assert mine.dtype is ng.float64
    p.grad = ng.ones(3, dtype=ng.float64)
    opt.step()
    assert buf.tolist() == [1.0, 1.0, 1.0]  # the caller's tensor is not updated in place


# ------------------------------------------------------------------------ schedulers
def _lrs(lib, make, steps=35, lr=0.5):
    p = lib.nn.Parameter(lib.zeros(1))
    opt = lib.optim.SGD([p], lr=lr)
    sched = make(lib, opt)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return out, sched


@pytest.mark.parametrize("make", [
    lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=1),
    lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10),
    lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.05),
], ids=["step3", "step1", "cosine10", "cosine7_min"])
def test_scheduler_rates_match_torch(make):
    ours, sched = _lrs(ng, make)
    theirs, tsched = _lrs(torch, make)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-14, atol=0)
    state, tstate = sched.state_dict(), tsched.state_dict()
    for k in ("base_lrs", "last_epoch", "_step_count", "_last_lr"):
        assert state[k] == pytest.approx(tstate[k], rel=1e-14), k


def test_scheduler_state_dict_resumes():
    make = lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=6)  # noqa: E731
    full, _ = _lrs(ng, make, steps=10)
    half, sched = _lrs(ng, make, steps=4)
    p = nn.Parameter(ng.zeros(1))
    opt = ng.optim.SGD([p], lr=sched.optimizer.param_groups[0]["lr"])
    opt.param_groups[0]["initial_lr"] = 0.5
    resumed = ng.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6, last_epoch=3)
    resumed.load_state_dict(sched.state_dict())
    opt.param_groups[0]["lr"] = sched.get_last_lr()[0]
    rest = []
    for _ in range(6):
        opt.step()
        resumed.step()
        rest.append(resumed.get_last_lr())
    np.testing.assert_allclose(np.array(half + rest), np.array(full), rtol=1e-14)


# -------------------------------------------------------------------------- under jit
def test_step_inside_jit_raises_tracing_error_and_changes_nothing():
    m = nn.Linear(3, 1).double()
    opt = ng.optim.SGD(m.parameters(), lr=0.1)
    x = ng.ones(2, 3, dtype=ng.float64)
    (m(x) ** 2).mean().backward()
    grad = m.weight.grad.numpy().copy()
    w = m.weight.detach().numpy().copy()

    @ng.jit
    def bad_step(x):
        loss = (m(x) ** 2).mean()
        opt.step()
        return loss
    with pytest.raises(ng.TracingError) as info:
        bad_step(x)
    text = str(info.value)
    assert "optimizer.step()" in text and "test_optim_api.py" in text
    assert "step eagerly" in text and "value_and_grad" in text
    np.testing.assert_array_equal(m.weight.detach().numpy(), w)
    np.testing.assert_array_equal(m.weight.grad.numpy(), grad)

    @ng.jit
    def bad_zero(x):
        opt.zero_grad()
        return (m(x) ** 2).mean()
    with pytest.raises(ng.TracingError, match=r"optimizer\.zero_grad\(\)"):
        bad_zero(x)
    assert m.weight.grad is not None


def test_adam_resumes_from_a_plain_number_step():
    # older PyTorch checkpoints hold 'step' as a number: the same update as a tensor step
    def after(step_value):
        p = nn.Parameter(ng.ones(2, dtype=ng.float64))
        opt = ng.optim.Adam([p], lr=0.1)
        opt.load_state_dict({"state": {0: {"step": step_value,
                                           "exp_avg": ng.full((2,), 0.5, dtype=ng.float64),
                                           "exp_avg_sq": ng.full((2,), 0.25,
                                                                 dtype=ng.float64)}},
                             "param_groups": opt.state_dict()["param_groups"]})
        p.grad = ng.ones(2, dtype=ng.float64)
        opt.step()
        return p.tolist(), float(opt.state[p]["step"])
    assert after(3) == after(ng.tensor(3.0)) and after(3)[1] == 4.0

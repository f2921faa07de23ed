"""LambdaLR, MultiStepLR, ExponentialLR, LinearLR, SequentialLR, ReduceLROnPlateau and
OneCycleLR against PyTorch: the same optimizer and schedule in both, the rates (and
OneCycleLR's momentum) after every step equal to the bit, the state_dict PyTorch's, and
step(epoch) (closed forms) equal."""
from __future__ import annotations

import math

import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

STEPS = 12


def _halve(epoch):
    return 0.5 ** (epoch // 3)


def _optimizers(opt_name="SGD", **kw):
    kw = kw or {"lr": 0.1, "momentum": 0.9}
    return (getattr(ng.optim, opt_name)([ng.nn.Parameter(ng.zeros(2))], **kw),
            getattr(torch.optim, opt_name)([torch.nn.Parameter(torch.zeros(2))], **kw))


def _make(lib, opt, name):
    S = lib.optim.lr_scheduler
    if name == "lambda":
        return S.LambdaLR(opt, _halve)
    if name == "multistep":
        return S.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3)
    if name == "exponential":
        return S.ExponentialLR(opt, gamma=0.7)
    if name == "linear":
        return S.LinearLR(opt, start_factor=0.25, end_factor=0.9, total_iters=6)
    if name == "sequential":
        return S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=3),
                                    S.ExponentialLR(opt, gamma=0.8),
                                    S.MultiStepLR(opt, milestones=[2], gamma=0.5)],
                              milestones=[3, 7])
    if name == "onecycle":
        return S.OneCycleLR(opt, max_lr=1.0, total_steps=STEPS + 1, pct_start=0.4)
    if name == "onecycle3":
        return S.OneCycleLR(opt, max_lr=[0.5], epochs=2, steps_per_epoch=7,
                            anneal_strategy="linear", three_phase=True)
    raise AssertionError(name)


NAMES = ["lambda", "multistep", "exponential", "linear", "sequential", "onecycle",
         "onecycle3"]


def _momentum(opt):
    group = opt.param_groups[0]
    return group["betas"][0] if "betas" in group else group["momentum"]


def _plain(state):
    return {k: v for k, v in state.items() if k not in ("_get_lr_called_within_step",)}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_rates_match_torch(name, opt_name):
    opt, topt = _optimizers(opt_name, lr=0.1)
    sched, tsched = _make(ng, opt, name), _make(torch, topt, name)
    assert sched.get_last_lr() == tsched.get_last_lr()
    for _ in range(STEPS):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert opt.param_groups[0]["lr"] == topt.param_groups[0]["lr"]
        assert _momentum(opt) == _momentum(topt)


@pytest.mark.parametrize("name", ["multistep", "exponential", "linear", "onecycle"])
def test_state_dict_is_pytorchs_and_resumes(name):
    opt, topt = _optimizers()
    sched, tsched = _make(ng, opt, name), _make(torch, topt, name)
    for _ in range(4):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    ours, theirs = sched.state_dict(), tsched.state_dict()
    assert set(ours) <= set(theirs)
    for key, value in ours.items():
        assert value == theirs[key], key
    # A fresh scheduler given the state continues where the first left off.
    opt2, _ = _optimizers()
    sched2 = _make(ng, opt2, name)
    opt2.load_state_dict(opt.state_dict())  # PyTorch's resume order: build, then load
    sched2.load_state_dict(theirs)
    for _ in range(4):
        opt2.step()
        topt.step()
        sched2.step()
        tsched.step()
        assert sched2.get_last_lr() == tsched.get_last_lr()


def test_lambda_and_sequential_state_dicts_match_torch():
    for name in ("lambda", "sequential"):
        opt, topt = _optimizers()
        sched, tsched = _make(ng, opt, name), _make(torch, topt, name)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        ours, theirs = sched.state_dict(), tsched.state_dict()
        if name == "lambda":
            assert ours["lr_lambdas"] == theirs["lr_lambdas"] == [None]
        else:
            assert [set(s) <= set(t) for s, t in zip(ours["_schedulers"],
                                                     theirs["_schedulers"])] == [True] * 3
            assert ours["_milestones"] == theirs["_milestones"]
            assert ours["last_epoch"] == theirs["last_epoch"]


@pytest.mark.parametrize("name", ["multistep", "exponential", "linear"])
def test_step_with_epoch_uses_the_closed_form(name):
    opt, topt = _optimizers()
    sched, tsched = _make(ng, opt, name), _make(torch, topt, name)
    for epoch in (3, 7, 4):
        sched.step(epoch)
        with pytest.warns(UserWarning):
            tsched.step(epoch)
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-15)


@pytest.mark.parametrize("kw", [
    dict(), dict(mode="max", factor=0.5, patience=1, cooldown=1, threshold_mode="abs",
                 threshold=0.01, min_lr=0.02)])
def test_reduce_lr_on_plateau_matches_torch(kw):
    opt, topt = _optimizers(lr=1.0)
    sched = ng.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kw)
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.9, 0.9, 0.5] * 3
    for i, m in enumerate(metrics):
        value = ng.tensor(m) if i % 2 else m  # a 0-d tensor works as the metric too
        sched.step(value)
        tsched.step(m)
        assert sched.get_last_lr() == tsched.get_last_lr()
    theirs = tsched.state_dict()
    for key, value in sched.state_dict().items():
        assert value == theirs[key] or (math.isinf(value) and value == theirs[key]), key


@pytest.mark.parametrize("make,message", [
    (lambda S, o: S.LinearLR(o, start_factor=0), "Starting multiplicative factor expected to "
                                                 "be greater than 0 and less or equal to 1."),
    (lambda S, o: S.LinearLR(o, end_factor=2), "Ending multiplicative factor expected to be "
                                               "between 0 and 1."),
    (lambda S, o: S.LambdaLR(o, [_halve, _halve]), "Expected 1 lr_lambdas, but got 2"),
    (lambda S, o: S.ReduceLROnPlateau(o, factor=1.0), "Factor should be < 1.0."),
    (lambda S, o: S.ReduceLROnPlateau(o, mode="up"), "mode up is unknown!"),
    (lambda S, o: S.OneCycleLR(o, max_lr=1.0), "You must define either total_steps OR "
                                               "(epochs AND steps_per_epoch)"),
    (lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=5, anneal_strategy="exp"),
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda S, o: S.SequentialLR(o, [S.ExponentialLR(o, 0.5)], milestones=[1]),
     "Sequential Schedulers expects number of schedulers provided to be one more than the "
     "number of milestone points, but got number of schedulers 1 and the number of "
     "milestones to be equal to 1"),
])
def test_bad_arguments_raise_torch_errors(make, message):
    opt, topt = _optimizers()
    with pytest.raises(ValueError) as ours:
        make(ng.optim.lr_scheduler, opt)
    with pytest.raises(ValueError) as theirs:
        make(torch.optim.lr_scheduler, topt)
    assert str(ours.value) == str(theirs.value) == message


def test_one_cycle_refuses_steps_past_its_length():
    opt, _ = _optimizers()
    sched = ng.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of "
                                         "total steps is 2"):
        sched.step()

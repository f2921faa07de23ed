"""Differential fuzzing of the nn and optim surfaces: random ``nn`` stacks (Linear, the
activations, LayerNorm, Identity) with a random loss and optimizer step for a few steps,
run eagerly, with the loss under ``@ng.jit``, and in PyTorch from the same initial weights;
the parameters must agree after every step. ``pytest --long N`` runs N fresh seeds.

Seeds that found bugs are kept in FOUND with what they found.
"""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import numgrad as ng
from conftest import TOL

torch = pytest.importorskip("torch")

# (seed, what it found)
FOUND = [
    (8, "cross_entropy with label_smoothing=-0.1: numgrad smoothed, torch runs it as 0"),
    (9, "SGD momentum over [p, p]: numgrad moved one buffer where torch starts two"),
    (1019, "cross_entropy label_smoothing with ignore_index: the smoothing term counted the "
           "ignored rows"),
]
FRESH = [202, 303]
ACTIVATIONS = ["ReLU", "Tanh", "Sigmoid", "GELU", "GELU_tanh", "Identity"]


def make_case(seed):
    """A picklable description of one case: layers, loss, optimizer, dtype, data."""
    rng = random.Random(seed)
    width = [rng.randint(2, 5) for _ in range(rng.randint(2, 4))]
    layers = []
    for a, b in zip(width, width[1:]):
        layers.append(("Linear", a, b, rng.random() < 0.8))
        if rng.random() < 0.3:
            layers.append(("LayerNorm", b, rng.random() < 0.5))
        layers.append((rng.choice(ACTIVATIONS),))
    loss = rng.choice([("mse", rng.choice(["mean", "sum"])),
                       ("ce", rng.choice(["mean", "sum"]), rng.choice([0.0, 0.2, -0.1]),
                        rng.choice([-100, 0]))])
    if loss[0] == "ce":
        layers.append(("Linear", width[-1], rng.randint(2, 4), True))
    opt = rng.choice([
        ("SGD", dict(lr=0.1, momentum=rng.choice([0.0, 0.9]), weight_decay=rng.choice([0, 0.01]),
                     dampening=0.0, nesterov=False)),
        ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
        ("Adam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=rng.choice([0, 0.01]),
                      amsgrad=rng.random() < 0.5)),
        ("AdamW", dict(lr=0.01, weight_decay=0.05)),
    ])
    repeat = rng.random() < 0.2  # the first parameter listed twice
    dtype = rng.choice(["float32", "float64"])
    return dict(seed=seed, layers=layers, loss=loss, opt=opt, repeat=repeat, dtype=dtype,
                batch=rng.randint(1, 4), steps=3)


def _build(lib, case):
    nn = lib.nn
    mods = []
    for spec in case["layers"]:
        name = spec[0]
        if name == "Linear":
            mods.append(nn.Linear(spec[1], spec[2], bias=spec[3]))
        elif name == "LayerNorm":
            mods.append(nn.LayerNorm(spec[1], elementwise_affine=spec[2]))
        elif name == "GELU_tanh":
            mods.append(nn.GELU(approximate="tanh"))
        else:
            mods.append(getattr(nn, name)())
    model = nn.Sequential(*mods)
    return model.double() if case["dtype"] == "float64" else model


def _loss(lib, case, out, y):
    F = lib.nn.functional
    if case["loss"][0] == "mse":
        return F.mse_loss(out, y, reduction=case["loss"][1])
    _, reduction, smoothing, ignore = case["loss"]
    return F.cross_entropy(out, y, reduction=reduction, label_smoothing=smoothing,
                           ignore_index=ignore)


def _data(case, n_out):
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((case["batch"], case["layers"][0][1])).astype(case["dtype"])
    if case["loss"][0] == "mse":
        y = rng.standard_normal((case["batch"], n_out)).astype(case["dtype"])
    else:
        y = rng.integers(0, n_out, case["batch"])
        y[0] = max(int(y[0]), 1) if case["loss"][3] == 0 else y[0]  # one row not ignored
    return x, y


def _optimizer(lib, case, model):
    params = list(model.parameters())
    if case["repeat"]:
        params = [params[0]] + params
    name, kw = case["opt"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn about a repeated parameter
        return getattr(lib.optim, name)(params, **kw)


def run_case(case, jit=True):
    """Step the three runs side by side (two without ``jit``); assert they agree after
    every step."""
    ref = _build(torch, case)
    state = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}
    models = {}
    modes = ("eager", "jit") if jit else ("eager",)
    for mode in modes:
        m = _build(ng, case)
        m.load_state_dict({k: ng.tensor(v) for k, v in state.items()})
        models[mode] = m
    n_out = [s for s in case["layers"] if s[0] == "Linear"][-1][2]
    x, y = _data(case, n_out)
    opts = {"torch": _optimizer(torch, case, ref)}
    opts.update({mode: _optimizer(ng, case, m) for mode, m in models.items()})
    jitted = jit and ng.jit(lambda xx, yy: _loss(ng, case, models["jit"](xx), yy))
    tol = TOL[case["dtype"]]
    for step in range(case["steps"]):
        losses = {}
        for mode, opt in opts.items():
            opt.zero_grad()
            if mode == "torch":
                loss = _loss(torch, case, ref(torch.tensor(x)), torch.tensor(y))
            elif mode == "eager":
                loss = _loss(ng, case, models["eager"](ng.tensor(x)), ng.tensor(y))
            else:
                loss = jitted(ng.tensor(x), ng.tensor(y))
            loss.backward()
            opt.step()
            losses[mode] = float(loss.item())
        for mode in modes:
            np.testing.assert_allclose(losses[mode], losses["torch"], **tol,
                                       err_msg=f"seed {case['seed']} step {step} {mode} loss")
            got = models[mode].state_dict()
            for k, v in ref.state_dict().items():
                np.testing.assert_allclose(got[k].detach().numpy(), v.detach().numpy(),
                                           rtol=tol["rtol"] * 10, atol=tol["atol"] * 10,
                                           err_msg=f"seed {case['seed']} step {step} {mode} {k}"
                                                   f"\n{case}")


@pytest.mark.parametrize("seed", [s for s, _ in FOUND], ids=[f"found{s}" for s, _ in FOUND])
def test_seeds_that_found_bugs(seed):
    # Each was an eager bug (the jitted loss traces the same code): no compile, for time.
    run_case(make_case(seed), jit=False)


@pytest.mark.parametrize("seed", FRESH)
def test_fresh_seeds(seed):
    run_case(make_case(seed))


def test_long_campaign(request):
    n = request.config.getoption("--long")
    if not n:
        pytest.skip("pytest --long N runs N fresh seeds")
    base = random.randrange(10 ** 6)
    for seed in range(base, base + n):
        run_case(make_case(seed))

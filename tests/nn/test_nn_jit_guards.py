"""nn modules under @ng.jit: what a layer reads from its own state (``training``, a
Dropout's ``p``, a LayerNorm's ``eps``, its parameters, children and hooks) is guarded,
so a change between calls retraces and the compiled call keeps giving eager's results.

Eager mode is the oracle: each compiled result is compared with the same module run
eagerly under the same seed (dropout draws its mask from numgrad's generator at run time,
in both modes). ``backend="numpy"`` runs the same tracer, guards and runtime without a
Numba compile per plan.
"""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn


def _mlp():
    ng.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(16, 2)).double()


def _x():
    return ng.randn(4, 3, dtype=ng.float64)


def _same(got, want):
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def _run(f, *args, seed=7):
    ng.manual_seed(seed)    # the same dropout mask for the compiled and the eager call
    return f(*args)


def test_jit_sees_a_later_train_eval_switch():
    ng.manual_seed(0)
    seq = nn.Sequential(nn.Linear(3, 64), nn.Dropout(0.5)).eval()
    compiled = ng.jit(seq, backend="numpy")
    x = ng.randn(4, 3)
    compiled(x)
    seq.train()
    assert (compiled(x).detach().numpy() == 0).any()


@pytest.mark.parametrize("first", ["train", "eval"])
def test_switching_modes_retraces_and_matches_eager_for_a_jitted_module(first):
    model, x = _mlp(), _x()
    compiled = ng.jit(model, backend="numpy")
    modes = [first, "eval" if first == "train" else "train", first]
    for k, mode in enumerate(modes):
        getattr(model, mode)()
        _same(_run(compiled, x), _run(model, x))
        # One plan per signature: a failed guard replaces it, so going back retraces too.
        assert compiled.stats.traces == k + 1
    model.eval()
    _same(compiled(x), model(x))     # eval: dropout is the identity, no seed needed


@pytest.mark.parametrize("first", ["train", "eval"])
def test_switching_modes_retraces_for_a_jitted_loss_that_calls_the_model(first):
    model, x = _mlp(), _x()
    y = ng.randn(4, 2, dtype=ng.float64)
    loss_fn = nn.MSELoss()

    @ng.jit(backend="numpy")
    def loss(x, y):
        return loss_fn(model(x), y)

    for mode in (first, "eval" if first == "train" else "train"):
        getattr(model, mode)()
        model.zero_grad()
        got = _run(loss, x, y)
        got.backward()
        jit_grads = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        want = _run(lambda a, b: loss_fn(model(a), b), x, y)
        want.backward()
        _same(got, want)
        for g, p in zip(jit_grads, model.parameters()):
            np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-13, atol=1e-15)
    assert loss.stats.traces == 2


def test_a_user_module_reading_self_training_retraces():
    class Noisy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            y = self.fc(x)
            return y * 2.0 if self.training else y

    ng.manual_seed(0)
    m = Noisy().double()
    compiled, x = ng.jit(m, backend="numpy"), _x()
    _same(compiled(x), m(x))
    m.eval()
    _same(compiled(x), m(x))
    assert compiled.stats.traces == 2


def test_children_iterated_from_a_module_list_are_guarded():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 8), nn.Dropout(0.5)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    ng.manual_seed(0)
    m = Stack().double().eval()
    compiled, x = ng.jit(m, backend="numpy"), _x()
    _same(compiled(x), m(x))
    m.train()
    _same(_run(compiled, x), _run(m, x))
    assert compiled.stats.traces == 2


def test_a_layer_deep_inside_nested_containers_is_guarded():
    ng.manual_seed(0)
    inner = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5))
    for _ in range(5):
        inner = nn.Sequential(inner)
    model = inner.double().eval()
    compiled, x = ng.jit(model, backend="numpy"), _x()
    _same(compiled(x), model(x))
    model.train()
    _same(_run(compiled, x), _run(model, x))
    deep = model[0][0][0][0][0][0]
    deep.weight = nn.Parameter(ng.ones(8, 3, dtype=ng.float64))
    _same(_run(compiled, x), _run(model, x))
    assert compiled.stats.traces == 3


def test_changing_dropout_p_or_layernorm_eps_retraces():
    ng.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8), nn.Dropout(0.25)).double()
    compiled, x = ng.jit(model, backend="numpy"), _x()
    _same(_run(compiled, x), _run(model, x))
    model[2].p = 0.75
    _same(_run(compiled, x), _run(model, x))
    assert compiled.stats.traces == 2
    model.eval()
    model[1].eps = 10.0     # large enough to change every output visibly
    before = compiled(x)
    _same(before, model(x))
    model[1].eps = 1e-5
    _same(compiled(x), model(x))
    assert not np.allclose(before.detach().numpy(), model(x).detach().numpy())
    assert compiled.stats.traces == 4    # p; eval with eps=10; eps back to 1e-5


def test_a_parameter_replaced_by_a_new_parameter_is_seen():
    model, x = _mlp(), _x()
    model.eval()
    compiled = ng.jit(model, backend="numpy")
    compiled(x)
    new = nn.Parameter(ng.randn(2, 16, dtype=ng.float64))
    model[3].weight = new
    got = compiled(x)
    _same(got, model(x))
    got.sum().backward()
    assert new.grad is not None        # the gradient reaches the new parameter
    assert compiled.stats.traces == 2


def test_a_later_forward_hook_or_child_retraces():
    model, x = _mlp(), _x()
    model.eval()
    compiled = ng.jit(model, backend="numpy")
    compiled(x)
    handle = model[3].register_forward_hook(lambda mod, args, out: out * 3.0)
    _same(compiled(x), model(x))
    handle.remove()
    _same(compiled(x), model(x))
    model.append(nn.Tanh())
    _same(compiled(x), model(x))
    assert compiled.stats.traces == 4   # hook added; hook removed; child appended


def test_a_steady_training_loop_traces_once():
    def run(jit):
        model = _mlp()
        opt = ng.optim.Adam(model.parameters(), lr=1e-2)
        loss_fn = nn.MSELoss()
        step = (ng.jit(lambda x, y: loss_fn(model(x), y), backend="numpy") if jit
                else (lambda x, y: loss_fn(model(x), y)))
        ng.manual_seed(1)
        x, y = _x(), ng.randn(4, 2, dtype=ng.float64)
        for i in range(10):
            opt.zero_grad()
            _run(step, x, y, seed=i).backward()
            opt.step()
        return step, [p.detach().numpy().copy() for p in model.parameters()]

    step, got = run(jit=True)
    _, want = run(jit=False)
    assert step.stats.traces == 1
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)

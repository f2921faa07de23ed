"""compiler.speculate: `loss = f(x); loss.backward()` runs the joint program once the plan
has seen a backward seeded with 1, and every other backward keeps the ordinary path. The
checks shared with the CUDA run are in ``speculate_cases``."""
import numpy as np
import pytest
import torch

import numgrad as ng
import speculate_cases as S

W2 = S.W2(50)


def test_habit_path_runs_the_joint_program_with_the_ordinary_bits(monkeypatch):
    f, x, y, _, gx = S.habit_path(W2, monkeypatch)
    S.accumulates(f, x, y, gx)


def test_other_cotangents_retain_graph_and_create_graph_take_the_ordinary_backward(
        monkeypatch):
    f, x, y = S.armed(W2)
    # A cotangent of 2.5: the speculated gradients (for 1) are not used.
    S.explicit_cotangents(W2, f, x, y, (2.5,), monkeypatch)
    S.retain_graph_and_create_graph(W2, f, x, y)


def test_an_input_modified_before_the_backward_still_raises():
    S.input_modified_before_the_backward(W2)


def test_calls_without_their_backward_stop_the_speculation():
    S.calls_without_their_backward(W2)


def test_a_hook_inside_the_function_keeps_the_ordinary_path():
    S.hook_inside(W2)


def test_matmul_plan_with_saved_values_and_int_targets(monkeypatch):
    """An MLP step (matmuls on the host between kernels, saved activations, an int64
    input): the speculated gradients are the ordinary backward's bits."""
    F = ng.nn.functional

    def loss(w1, b1, w2, X, T):
        h = F.relu(F.linear(X, w1, b1))
        return F.nll_loss(F.log_softmax(h @ w2.T, dim=1), T)
    rng = np.random.default_rng(5)
    data = [rng.standard_normal(s).astype(np.float32) for s in ((16, 12), (16,), (4, 16))]
    X = ng.tensor(rng.standard_normal((8, 12)).astype(np.float32))
    T = ng.tensor(rng.integers(0, 4, 8))

    def grads(f, times):
        ps = [ng.tensor(d, requires_grad=True) for d in data]
        for _ in range(times):
            for p in ps:
                p.grad = None
            out = f(*ps, X, T)
            out.backward()
        return out.item(), [p.grad.numpy() for p in ps]
    fast = ng.jit(loss)
    val, got = grads(fast, 3)
    assert S.plan(fast).spec.joint is not None
    monkeypatch.setenv("NUMGRAD_SPECULATE", "0")
    ref_val, want = grads(ng.jit(loss), 2)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    assert val == pytest.approx(ref_val, rel=1e-6)
    tp = [torch.tensor(d, requires_grad=True) for d in data]
    tl = torch.nn.functional.nll_loss(torch.log_softmax(
        torch.relu(torch.nn.functional.linear(torch.tensor(X.numpy()), tp[0], tp[1]))
        @ tp[2].T, dim=1), torch.tensor(T.numpy()))
    tl.backward()
    for a, p in zip(got, tp):
        np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-4, atol=1e-6)

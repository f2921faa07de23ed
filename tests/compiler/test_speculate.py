"""compiler.speculate: `loss = f(x); loss.backward()` runs the joint program once the plan
has seen a backward seeded with 1, and every other backward keeps the ordinary path."""
import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.compiler import speculate


def w2(lib, x, y):
    return (lib.tanh(x * y + lib.sin(x)) * lib.exp(-y * y)).sum()


def w2_ng(x, y):
    return w2(ng, x, y)


XS = np.linspace(-2.0, 2.0, 50)
YS = np.linspace(1.5, -1.0, 50)


def _torch_grads(scale=1.0, times=1):
    tx = torch.tensor(XS, requires_grad=True)
    ty = torch.tensor(YS, requires_grad=True)
    out = w2(torch, tx, ty)
    for _ in range(times):
        out.backward(torch.tensor(scale, dtype=torch.float64), retain_graph=True)
    return out.item(), tx.grad.numpy(), ty.grad.numpy()


def _plan(f):
    (plan,) = list(f._fast.values())
    return plan


def _leaves():
    return ng.tensor(XS, requires_grad=True), ng.tensor(YS, requires_grad=True)


def test_habit_path_runs_the_joint_program_with_the_ordinary_bits():
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()
    ordinary = (x.grad.numpy().copy(), y.grad.numpy().copy())
    spec = _plan(f).spec
    assert spec.on and spec.joint is None  # armed by a backward seeded with 1
    val, gx, gy = _torch_grads()
    for _ in range(2):
        x.grad = y.grad = None
        loss = f(x, y)
        assert spec.joint is not None and loss.grad_fn._spec is not None
        loss.backward()
        assert np.array_equal(x.grad.numpy(), ordinary[0])
        assert np.array_equal(y.grad.numpy(), ordinary[1])
        np.testing.assert_allclose(loss.item(), val, rtol=1e-13)
        np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(y.grad.numpy(), gy, rtol=1e-12, atol=1e-14)
    # Accumulation into an existing .grad, as eager does.
    f(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * gx, rtol=1e-12, atol=1e-14)


def test_other_cotangents_retain_graph_and_create_graph_take_the_ordinary_backward():
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()
    assert _plan(f).spec.on
    # A cotangent of 2.5: the speculated gradients (for 1) are not used.
    x.grad = y.grad = None
    f(x, y).backward(ng.tensor(2.5, dtype=ng.float64))
    _, gx, gy = _torch_grads(2.5)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-14)
    # retain_graph: the second backward recomputes; .grad never aliases the first's array.
    x.grad = y.grad = None
    loss = f(x, y)
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    loss.backward()
    _, gx, gy = _torch_grads(1.0, times=2)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), gy, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(first * 2, gx, rtol=1e-12, atol=1e-14)
    # create_graph: a differentiable backward (second derivative against torch).
    x.grad = y.grad = None
    (gxs,) = ng.autograd.grad(f(x, y), [x], create_graph=True)
    gxs.sum().backward()
    tx = torch.tensor(XS, requires_grad=True)
    (tg,) = torch.autograd.grad(w2(torch, tx, torch.tensor(YS)), [tx], create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-11, atol=1e-13)


def test_an_input_modified_before_the_backward_still_raises():
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()
    loss = f(x, y)
    assert loss.grad_fn._spec is not None
    with ng.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_calls_without_their_backward_stop_the_speculation():
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()
    spec = _plan(f).spec
    for _ in range(speculate.MAX_PENDING + 1):
        f(x, y)  # evaluation with grad enabled: no backward follows
    assert spec.off and not spec.on
    x.grad = None
    f(x, y).backward()
    assert not spec.on and f(x, y).grad_fn._spec is None
    _, gx, _ = _torch_grads()
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-14)


def test_a_hook_inside_the_function_keeps_the_ordinary_path():
    seen = []

    def hooked(x, y):
        h = x * y
        h.register_hook(lambda g: seen.append(1))
        return (h.tanh() * y).sum()
    f = ng.jit(hooked)
    x, y = _leaves()
    f(x, y).backward()
    assert _plan(f).spec is None
    f(x, y).backward()
    assert len(seen) == 2


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
    assert _plan(fast).spec.joint is not None
    monkeypatch.setattr(speculate, "ENABLED", False)
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

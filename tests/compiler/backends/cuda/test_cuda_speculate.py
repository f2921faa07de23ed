"""``loss = f(x); loss.backward()`` on CUDA plans (Numba's simulator): once a backward
seeded by ``backward()`` itself has been seen, a call runs the joint program and the
backward hands its gradients over, with no read of the device's cotangent. Every other
backward keeps the ordinary path, as on the CPU (tests/compiler/test_speculate.py):
hooks, a second backward (``retain_graph``), ``create_graph``, an explicit cotangent
(even an explicit 1, which only a read of the device could tell), evaluation calls
without a backward, and the version-counter error. Gradients are compared with the
ordinary backward's bits and with torch's values."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from cuda_cases import require_simulator
from numgrad.autograd import engine
from numgrad.compiler import speculate

XS = np.linspace(-2.0, 2.0, 12)
YS = np.linspace(1.5, -1.0, 12)


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def w2(lib, x, y):
    return (lib.tanh(x * y + lib.sin(x)) * lib.exp(-y * y)).sum()


def w2_ng(x, y):
    return w2(ng, x, y)


def _leaves():
    return (ng.tensor(XS, device="cuda", requires_grad=True),
            ng.tensor(YS, device="cuda", requires_grad=True))


def _torch(scale=1.0, times=1):
    tx = torch.tensor(XS, requires_grad=True)
    ty = torch.tensor(YS, requires_grad=True)
    out = w2(torch, tx, ty)
    for _ in range(times):
        out.backward(torch.tensor(scale, dtype=torch.float64), retain_graph=True)
    return out.item(), tx.grad.numpy(), ty.grad.numpy()


def _host(t):
    return t.detach().cpu().numpy()


def _plan(f):
    (plan,) = list(f._plans.values())
    return plan


def _count_ordinary(plan, monkeypatch):
    """How many times the plan's ordinary backward program runs."""
    runs = []
    real = plan.bwd

    def bwd(args):
        runs.append(1)
        return real(args)
    monkeypatch.setattr(plan, "bwd", bwd)
    return runs


def test_habit_path_runs_the_joint_program_with_the_ordinary_bits(monkeypatch):
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()   # the ordinary backward, seeded by backward() itself: arms it
    ordinary = (_host(x.grad), _host(y.grad))
    spec = _plan(f).spec
    assert spec.on and spec.joint is None
    runs = _count_ordinary(_plan(f), monkeypatch)
    val, gx, gy = _torch()
    for _ in range(2):
        x.grad = y.grad = None
        loss = f(x, y)
        assert loss.grad_fn._spec is not None and loss.device.type == "cuda"
        loss.backward()
        assert x.grad.device.type == "cuda"
        assert np.array_equal(_host(x.grad), ordinary[0])
        assert np.array_equal(_host(y.grad), ordinary[1])
        np.testing.assert_allclose(loss.item(), val, rtol=1e-13)
        np.testing.assert_allclose(_host(x.grad), gx, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(_host(y.grad), gy, rtol=1e-12, atol=1e-14)
    assert runs == []   # the joint program's gradients, never the backward program
    # The joint program's seed: one device array for the plan, not one per call.
    seed = spec._seed
    assert type(seed).__name__ == "CudaArray" and seed.shape == ()
    f(x, y).backward()  # accumulates into the existing .grad, as eager does
    assert spec._seed is seed
    np.testing.assert_allclose(_host(x.grad), 2 * gx, rtol=1e-12, atol=1e-14)


def test_explicit_cotangents_take_the_ordinary_backward(monkeypatch):
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()
    plan = _plan(f)
    runs = _count_ordinary(plan, monkeypatch)
    for scale in (2.5, 1.0):  # an explicit 1 too: telling it would mean reading the device
        x.grad = y.grad = None
        loss = f(x, y)
        assert loss.grad_fn._spec is not None
        loss.backward(ng.tensor(scale, dtype=ng.float64, device="cuda"))
        _, gx, gy = _torch(scale)
        np.testing.assert_allclose(_host(x.grad), gx, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(_host(y.grad), gy, rtol=1e-12, atol=1e-14)
    assert len(runs) == 2 and plan.spec.on
    assert not engine.is_implicit_seed(ng.tensor(1.0, dtype=ng.float64, device="cuda")._data)


def test_retain_graph_second_backward_and_create_graph():
    f = ng.jit(w2_ng)
    x, y = _leaves()
    f(x, y).backward()
    assert _plan(f).spec.on
    x.grad = y.grad = None
    loss = f(x, y)
    loss.backward(retain_graph=True)
    first = x.grad
    loss.backward()  # the ordinary backward; .grad never aliases the first's array
    _, gx, gy = _torch(1.0, times=2)
    np.testing.assert_allclose(_host(x.grad), gx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_host(y.grad), gy, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_host(first) * 2, gx, rtol=1e-12, atol=1e-14)
    x.grad = y.grad = None
    (gxs,) = ng.autograd.grad(f(x, y), [x], create_graph=True)
    gxs.sum().backward()
    tx = torch.tensor(XS, requires_grad=True)
    (tg,) = torch.autograd.grad(w2(torch, tx, torch.tensor(YS)), [tx], create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(_host(x.grad), tx.grad.numpy(), rtol=1e-11, atol=1e-13)


def test_hooks_inside_and_on_the_output():
    seen = []

    def hooked(x, y):
        h = x * y
        h.register_hook(lambda g: seen.append(g.device.type))
        return (h.tanh() * y).sum()
    f = ng.jit(hooked)
    x, y = _leaves()
    f(x, y).backward()
    assert _plan(f).spec is None   # the hook must run in the backward: never speculated
    f(x, y).backward()
    assert seen == ["cuda", "cuda"]
    # A hook on the returned loss: one that returns nothing leaves the seed as it is (the
    # joint program's gradients serve); one that scales it gets the ordinary backward.
    g = ng.jit(w2_ng)
    g(x, y).backward()
    _, gx, _ = _torch()
    for scale in (None, 3.0):
        x.grad = None
        loss = g(x, y)
        assert loss.grad_fn._spec is not None
        calls = []

        def hook(t, s=scale, seen=calls):
            seen.append(1)
            return None if s is None else t * s
        loss.register_hook(hook)
        loss.backward()
        assert calls == [1]
        np.testing.assert_allclose(_host(x.grad), gx * (scale or 1.0), rtol=1e-12, atol=1e-14)


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
    _, gx, _ = _torch()
    np.testing.assert_allclose(_host(x.grad), gx, rtol=1e-12, atol=1e-14)


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


def test_the_engine_seed_is_never_written_by_a_plan():
    """A hook may pass the seed to a jitted function that updates its argument in place:
    the seed tensor is rebound (as eager CUDA in-place ops are), the shared seed keeps 1."""
    inc = ng.jit(lambda t: t.add_(1.0))

    def poke(g):
        with ng.no_grad():
            inc(g)
    x, _ = _leaves()
    loss = (x * 2.0).sum()
    loss.register_hook(poke)
    loss.backward()
    np.testing.assert_array_equal(_host(x.grad), np.full(XS.shape, 4.0))  # as torch: 2 * (1+1)
    for seed in [a for k, a in engine._ONES.items() if len(k) == 3]:
        assert seed.shape == () or seed.size == 1
        assert float(seed._ng_host().reshape(-1)[0]) == 1.0


def test_grad_takes_a_result_only_when_nothing_else_holds_its_memory():
    """The engine takes a compiled backward's fresh device result as ``.grad`` without a
    copy (``CudaArray._ng_exclusive``), never memory something else can reach."""
    x = ng.tensor(XS, device="cuda")
    fresh = (x * 2.0)._data
    assert fresh._ng_exclusive()
    view = ng.Tensor._make(fresh).reshape(3, 4)._data   # a reshape shares the block
    assert view.block is fresh.block
    assert not fresh._ng_exclusive() and not view._ng_exclusive()
    del view
    assert fresh._ng_exclusive()
    held = fresh.buf  # a device-array view someone keeps
    assert not fresh._ng_exclusive()
    del held
    assert fresh._ng_exclusive()
    src = x * 3.0

    class Exporter:   # another library's device array, wrapped without a copy
        __cuda_array_interface__ = src.__cuda_array_interface__
    imported = ng.as_tensor(Exporter())._data
    assert imported.owner is not None and not imported._ng_exclusive()
    shared = ng.Tensor._make(fresh)
    loss = (shared.requires_grad_() * 1.0).sum()
    loss.backward()
    assert shared.grad._data is not fresh    # a leaf's own payload: copied, never taken

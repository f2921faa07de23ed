"""The speculation tests' workload and the checks the CPU and the CUDA runs share
(tests/compiler/test_speculate.py, tests/compiler/backends/cuda/test_cuda_speculate.py).

``loss = f(x); loss.backward()`` on W2 once the plan is armed (``armed``): the habit path
runs the joint program and gives the ordinary backward's bits; an explicit cotangent, a
second backward (``retain_graph``), ``create_graph``, a hook inside the function, calls
without their backward and an input modified before the backward keep the ordinary
path. Values are compared with torch's (``W2.torch``).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.compiler import speculate


def w2(lib, x, y):
    return (lib.tanh(x * y + lib.sin(x)) * lib.exp(-y * y)).sum()


def w2_ng(x, y):
    return w2(ng, x, y)


class W2:
    """W2's inputs at ``n`` points, as leaves on ``device``, and torch's results for them."""

    def __init__(self, n, device="cpu"):
        self.xs = np.linspace(-2.0, 2.0, n)
        self.ys = np.linspace(1.5, -1.0, n)
        self.device = device

    def leaves(self):
        return (ng.tensor(self.xs, device=self.device, requires_grad=True),
                ng.tensor(self.ys, device=self.device, requires_grad=True))

    def torch(self, scale=1.0, times=1):
        """``(loss, x.grad, y.grad)`` after ``times`` backwards of the cotangent ``scale``."""
        tx = torch.tensor(self.xs, requires_grad=True)
        ty = torch.tensor(self.ys, requires_grad=True)
        out = w2(torch, tx, ty)
        for _ in range(times):
            out.backward(torch.tensor(scale, dtype=torch.float64), retain_graph=True)
        return out.item(), tx.grad.numpy(), ty.grad.numpy()


def host(t):
    """A NumPy copy of ``t``'s values, wherever they live."""
    return np.array(t.detach().cpu().numpy())


def plan(f):
    (p,) = list(f._plans.values())
    return p


def armed(case, fn=w2_ng):
    """``(f, x, y)``: ``ng.jit(fn)`` after one ``f(x, y).backward()`` seeded by
    ``backward()`` itself, which arms the plan's speculation where it can speculate."""
    f = ng.jit(fn)
    x, y = case.leaves()
    f(x, y).backward()
    return f, x, y


def count_ordinary(p, monkeypatch):
    """The list a run of plan ``p``'s ordinary backward program appends to."""
    runs = []
    real = p.bwd

    def bwd(args):
        runs.append(1)
        return real(args)
    monkeypatch.setattr(p, "bwd", bwd)
    return runs


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ the shared checks
def habit_path(case, monkeypatch):
    """Armed, the plan's next calls run the joint program (never the backward program) and
    give the ordinary backward's bits, which are torch's values; then a call accumulates
    into the existing ``.grad``. Returns ``(f, x, y, spec, torch's x.grad)``."""
    f, x, y = armed(case)
    ordinary = (host(x.grad), host(y.grad))
    spec = plan(f).spec
    assert spec.on and spec.joint is None  # armed by a backward seeded with 1
    runs = count_ordinary(plan(f), monkeypatch)
    val, gx, gy = case.torch()
    for _ in range(2):
        x.grad = y.grad = None
        loss = f(x, y)
        assert spec.joint is not None and loss.grad_fn._spec is not None
        assert loss.device.type == case.device
        loss.backward()
        assert x.grad.device.type == case.device
        assert np.array_equal(host(x.grad), ordinary[0])
        assert np.array_equal(host(y.grad), ordinary[1])
        np.testing.assert_allclose(loss.item(), val, rtol=1e-13)
        close(host(x.grad), gx)
        close(host(y.grad), gy)
    assert runs == []   # the joint program's gradients, never the backward program
    return f, x, y, spec, gx


def accumulates(f, x, y, gx):
    """A habit-path call accumulates into the existing ``.grad``, as eager does."""
    f(x, y).backward()
    close(host(x.grad), 2 * gx)


def explicit_cotangents(case, f, x, y, scales, monkeypatch):
    """An explicit cotangent (even an explicit 1, which only a read of the value could tell
    from the implicit one) takes the ordinary backward, and the plan stays armed."""
    runs = count_ordinary(plan(f), monkeypatch)
    for scale in scales:
        x.grad = y.grad = None
        loss = f(x, y)
        assert loss.grad_fn._spec is not None
        loss.backward(ng.tensor(scale, dtype=ng.float64, device=case.device))
        _, gx, gy = case.torch(scale)
        close(host(x.grad), gx)
        close(host(y.grad), gy)
    assert len(runs) == len(scales) and plan(f).spec.on


def retain_graph_and_create_graph(case, f, x, y):
    """A second backward (``retain_graph``) recomputes, and ``.grad`` never aliases the
    first's array; ``create_graph`` gives a differentiable backward (second derivative
    against torch's)."""
    assert plan(f).spec.on
    x.grad = y.grad = None
    loss = f(x, y)
    loss.backward(retain_graph=True)
    first = host(x.grad)
    loss.backward()
    _, gx, gy = case.torch(1.0, times=2)
    close(host(x.grad), gx)
    close(host(y.grad), gy)
    close(first * 2, gx)
    x.grad = y.grad = None
    (gxs,) = ng.autograd.grad(f(x, y), [x], create_graph=True)
    gxs.sum().backward()
    tx = torch.tensor(case.xs, requires_grad=True)
    (tg,) = torch.autograd.grad(w2(torch, tx, torch.tensor(case.ys)), [tx], create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-11, atol=1e-13)


def input_modified_before_the_backward(case):
    """The version counter's error is raised on the habit path too."""
    f, x, y = armed(case)
    loss = f(x, y)
    assert loss.grad_fn._spec is not None
    with ng.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def calls_without_their_backward(case):
    """Calls with grad enabled that no backward follows turn the speculation off; the
    ordinary backward then serves."""
    f, x, y = armed(case)
    spec = plan(f).spec
    for _ in range(speculate.MAX_PENDING + 1):
        f(x, y)  # evaluation with grad enabled: no backward follows
    assert spec.off and not spec.on
    x.grad = None
    f(x, y).backward()
    assert not spec.on and f(x, y).grad_fn._spec is None
    _, gx, _ = case.torch()
    close(host(x.grad), gx)


def hook_inside(case):
    """A hook inside the function must run in the backward: never speculated; it runs
    at every backward, with the gradient on the device."""
    seen = []

    def hooked(x, y):
        h = x * y
        h.register_hook(lambda g: seen.append(g.device.type))
        return (h.tanh() * y).sum()
    f, x, y = armed(case, hooked)
    assert plan(f).spec is None
    f(x, y).backward()
    assert seen == [case.device] * 2
    return x, y

"""Tensor hooks (register_hook): order, replacement, removal, leaves and non-leaves,
interaction with retain_graph, retain_grad and autograd.grad. torch is the oracle."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close, to_numpy  # noqa: E402

HOOK_MSG = "cannot register a hook on a tensor that doesn't require gradient"
DATA = [1.0, -2.0, 3.0]


def test_hooks_run_in_registration_order_and_chain():
    def run(m):
        x = m.tensor(DATA, requires_grad=True)
        seen = []
        x.register_hook(lambda g: (seen.append(("h1", g.tolist())), g * 2)[1])
        x.register_hook(lambda g: (seen.append(("h2", g.tolist())), None)[1])
        x.register_hook(lambda g: (seen.append(("h3", g.tolist())), g + 1)[1])
        (x * x).sum().backward()
        return x, seen

    x, seen = run(ng)
    tx, tseen = run(torch)
    assert [s[0] for s in seen] == ["h1", "h2", "h3"]
    assert len(seen) == len(tseen)
    for (n1, g1), (n2, g2) in zip(seen, tseen):
        assert n1 == n2
        np.testing.assert_allclose(g1, g2)
    assert_close(x.grad, tx.grad)


def test_hook_replaces_gradient():
    def run(m):
        x = m.tensor(DATA, requires_grad=True)
        x.register_hook(lambda g: m.ones_like(g) * 7)
        (x ** 2).sum().backward()
        return x

    x = run(ng)
    assert_close(x.grad, run(torch).grad)
    np.testing.assert_array_equal(to_numpy(x.grad), [7.0, 7.0, 7.0])


def test_hook_returning_none_keeps_gradient():
    calls = []
    x = ng.tensor(DATA, requires_grad=True)
    x.register_hook(lambda g: calls.append(to_numpy(g)))
    (x ** 2).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(calls[0], 2 * np.array(DATA, dtype=np.float32))
    np.testing.assert_array_equal(to_numpy(x.grad), 2 * np.array(DATA, dtype=np.float32))


def test_hook_receives_tensor():
    got = []
    x = ng.tensor(DATA, requires_grad=True)
    x.register_hook(lambda g: got.append(g))
    (x * 3).sum().backward()
    assert isinstance(got[0], ng.Tensor)
    assert tuple(got[0].shape) == (3,) and got[0].dtype == ng.float32


def test_handle_remove():
    def run(m):
        x = m.tensor(DATA, requires_grad=True)
        calls = []
        h1 = x.register_hook(lambda g: (calls.append(1), g * 10)[1])
        x.register_hook(lambda g: (calls.append(2), g + 1)[1])
        h1.remove()
        (x * 2).sum().backward()
        return x, calls

    x, calls = run(ng)
    tx, tcalls = run(torch)
    assert calls == tcalls == [2]
    assert_close(x.grad, tx.grad)


def test_remove_after_first_backward():
    x = ng.tensor(DATA, requires_grad=True)
    h = x.register_hook(lambda g: g * 0)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [0.0, 0.0, 0.0])
    h.remove()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [2.0, 2.0, 2.0])


def test_hook_on_non_leaf_changes_upstream_gradient():
    def run(m):
        x = m.tensor(DATA, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * 10)
        (y * y).sum().backward()
        return x

    assert_close(run(ng).grad, run(torch).grad)


def test_hook_on_non_leaf_used_twice_sees_summed_gradient():
    def run(m):
        calls = []
        x = m.tensor(DATA, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: calls.append(g.tolist()))
        z = y * y + y
        z.sum().backward()
        return x, calls

    x, calls = run(ng)
    tx, tcalls = run(torch)
    assert len(calls) == len(tcalls) == 1
    np.testing.assert_allclose(calls[0], tcalls[0])
    assert_close(x.grad, tx.grad)


def test_hooks_called_on_each_backward_with_retain_graph():
    def run(m):
        calls = []
        x = m.tensor(DATA, requires_grad=True)
        y = x.exp()
        y.register_hook(lambda g: calls.append("y"))
        x.register_hook(lambda g: calls.append("x"))
        z = (y * 2).sum()
        z.backward(retain_graph=True)
        z.backward()
        return x, calls

    x, calls = run(ng)
    tx, tcalls = run(torch)
    assert calls == tcalls == ["y", "x", "y", "x"]
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("order", ["hook_first", "retain_first"])
def test_retain_grad_sees_hook_modification(order):
    def run(m):
        x = m.tensor(DATA, requires_grad=True)
        y = x * 2
        if order == "hook_first":
            y.register_hook(lambda g: g * 3)
            y.retain_grad()
        else:
            y.retain_grad()
            y.register_hook(lambda g: g * 3)
        (y * y).sum().backward()
        return x, y

    x, y = run(ng)
    tx, ty = run(torch)
    assert_close(y.grad, ty.grad)
    assert_close(x.grad, tx.grad)


def test_leaf_hook_applies_to_autograd_grad_result():
    def run(m):
        x = m.tensor(DATA, requires_grad=True)
        x.register_hook(lambda g: g * 3)
        return m.autograd.grad((x * x).sum(), x)[0]

    assert_close(run(ng), run(torch))


def test_non_leaf_hook_during_autograd_grad():
    def run(m):
        calls = []
        x = m.tensor(DATA, requires_grad=True)
        y = x.sin()
        y.register_hook(lambda g: (calls.append(1), g * -1)[1])
        (g,) = m.autograd.grad((y * y).sum(), x)
        return g, calls, x

    g, calls, x = run(ng)
    tg, tcalls, tx = run(torch)
    assert_close(g, tg)
    assert calls == tcalls
    assert x.grad is None


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        ng.tensor(DATA).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        ng.tensor([1, 2]).register_hook(lambda g: g)
    x = ng.tensor(DATA, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        x.detach().register_hook(lambda g: g)
    with ng.no_grad():
        y = x * 2
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        y.register_hook(lambda g: g)


def test_hook_with_create_graph_sees_differentiable_grad():
    def run(m):
        x = m.tensor(DATA, dtype=m.float64, requires_grad=True)
        flags = []
        y = x ** 3
        y.register_hook(lambda g: (flags.append(g.requires_grad), g * x)[1])
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        return g, gg, flags

    g, gg, flags = run(ng)
    tg, tgg, tflags = run(torch)
    assert_close(g.detach(), tg.detach())
    assert_close(gg, tgg)
    assert flags == tflags


def test_leaf_hook_called_once_with_summed_gradient():
    def run(m):
        calls = []
        x = m.tensor(DATA, requires_grad=True)
        x.register_hook(lambda g: (calls.append(g.tolist()), g * 2)[1])
        (x * x + x.exp() + x).sum().backward()
        return x, calls

    x, calls = run(ng)
    tx, tcalls = run(torch)
    assert len(calls) == len(tcalls) == 1
    np.testing.assert_allclose(calls[0], tcalls[0], rtol=1e-6)
    assert_close(x.grad, tx.grad)

"""The eager recording and engine fast paths (ops.dispatch.OpNode's cached save plan, the
engine's in-place accumulation where gradients meet) keep PyTorch's semantics."""
import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.autograd import engine


def _both(f, *arrays):
    ns = [ng.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    f(ng, *ns).backward()
    f(torch, *ts).backward()
    for n, t in zip(ns, ts):
        np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    return ns


A, B = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])


def test_fan_out_gradients_add_up_as_torch():
    _both(lambda m, a: ((a * 2).exp() * (a * 2) + (a * 2) * 3).sum(), A)
    _both(lambda m, a, b: ((a * b).sin() + a + b * a).exp().sum(), A, B)
    _both(lambda m, a: ((a * 1) + (a * 1)).sum(), A)  # one vjp output reaches two inputs


def test_in_place_accumulation_leaves_what_others_hold_alone(monkeypatch):
    used = []
    orig = engine._added_in_place

    def spy(buf, i, g):
        used.append(orig(buf, i, g))
        return used[-1]
    monkeypatch.setattr(engine, "_added_in_place", spy)
    a = ng.tensor(A, requires_grad=True)
    b = a * 2
    kept = []
    c = b * 3
    # The hook sees (and keeps) the gradient of c after both contributions met.
    c.register_hook(lambda g: kept.append(g))
    post = []
    d1 = c * 1
    d1.grad_fn.register_hook(lambda gi, go: post.append(gi[0]))
    (d1 + c * 2).sum().backward()
    assert True in used  # the fast path ran at least once...
    np.testing.assert_allclose(kept[0].numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(post[0].numpy(), [1.0, 1.0, 1.0])  # ...not into a held one
    np.testing.assert_allclose(a.grad.numpy(), [18.0, 18.0, 18.0])


def test_a_user_gradient_is_never_written():
    g = ng.tensor([1.0, 1.0, 1.0])
    a = ng.tensor(A, requires_grad=True)
    b = a * 1
    (b + b).backward(g)
    np.testing.assert_allclose(g.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])


def test_create_graph_keeps_building_a_graph_where_gradients_meet():
    a = ng.tensor(A, requires_grad=True)
    (g,) = ng.autograd.grad((a * a * a).sum(), a, create_graph=True)
    (h,) = ng.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(h.numpy(), 6 * A)


def test_save_plan_is_per_inputs_requiring_grad():
    # mul saves y for x's rule and x for y's: the cached plan must follow which require grad.
    x, y = ng.tensor(A, requires_grad=True), ng.tensor(B)
    out = x * y
    y.add_(1)  # y was saved (x needs it): the backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    x2, y2 = ng.tensor(A), ng.tensor(B, requires_grad=True)
    out2 = x2 * y2
    y2.detach().add_(1)  # y is not saved when only y requires grad: fine
    out2.sum().backward()
    np.testing.assert_allclose(y2.grad.numpy(), A)
    x3 = ng.tensor(A, requires_grad=True)
    z = x3 * x3
    z.sum().backward(retain_graph=True)
    z.sum().backward()
    np.testing.assert_allclose(x3.grad.numpy(), 4 * A)
    with pytest.raises(RuntimeError, match="second time"):
        z.sum().backward()

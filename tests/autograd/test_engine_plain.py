"""backward()'s plain path (engine._execute_plain: one root, no hooks, no create_graph) gives
the gradients, the order and the errors of the general loop and of torch."""
import numpy as np
import pytest
import torch

import numgrad as ng
import numgrad.autograd.engine as engine

X = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]], np.float32)
W = np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.6]], np.float32)


def _grads(lib, retain=False):
    """A graph with fan-out, fan-in, a leaf reached twice and a multi-output node."""
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(W, requires_grad=True)
    h = (x @ w).relu()
    a, b = h.unbind(1)
    loss = (a * b + h.sum(1) * x.sum(1)).sum()
    loss.backward(retain_graph=retain)
    return loss, x, w


@pytest.mark.parametrize("retain", [False, True])
def test_plain_path_matches_torch(retain):
    ours, theirs = _grads(ng, retain), _grads(torch, retain)
    for o, t in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    if retain:  # a second backward accumulates, as torch's does
        ours[0].backward()
        theirs[0].backward()
        np.testing.assert_allclose(ours[1].grad.numpy(), theirs[1].grad.numpy(), rtol=1e-5)
    else:
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            ours[0].backward()


def test_plain_path_taken_and_agrees_with_general_loop(monkeypatch):
    taken = []
    plain = engine._execute_plain
    monkeypatch.setattr(engine, "_execute_plain", lambda *a: taken.append(1) or plain(*a))
    _, x1, w1 = _grads(ng)
    assert taken, "the plain path did not run for a hook-free backward()"
    monkeypatch.setattr(engine, "_execute_plain", lambda *a: False)
    _, x2, w2 = _grads(ng)
    assert np.array_equal(x1.grad.numpy(), x2.grad.numpy())
    assert np.array_equal(w1.grad.numpy(), w2.grad.numpy())


def test_a_hook_anywhere_sends_backward_to_the_general_loop():
    # A leaf hook sees the summed gradient once, as in torch; the plain path must not run it.
    seen = {}
    for lib in (ng, torch):
        x = lib.tensor(X, requires_grad=True)
        calls = []
        x.register_hook(lambda g: calls.append(g.clone()))
        ((x * 2).sum() + (x.exp() * x).sum()).backward()
        seen[lib] = (len(calls), calls[0].numpy(), x.grad.numpy())
    assert seen[ng][0] == seen[torch][0] == 1
    np.testing.assert_allclose(seen[ng][1], seen[torch][1], rtol=1e-5)
    np.testing.assert_allclose(seen[ng][2], seen[torch][2], rtol=1e-5)
    assert engine._plain_deps(((ng.ones(2, requires_grad=True) * 2).sum() * 1).grad_fn)
    y = ng.ones(2, requires_grad=True) * 2
    y.retain_grad()
    assert engine._plain_deps((y.sum() * 1).grad_fn) is None


def test_plain_path_reports_a_version_error():
    x = ng.tensor(X, requires_grad=True)
    h = x.exp()
    loss = (h * 2).sum() * (h ** 2).sum()
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()

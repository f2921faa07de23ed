"""The transpose pass: ``(A @ B).T`` is computed as ``B.T @ A.T``.

The backward of ``x @ w.T`` asks for ``(g.T @ x)``-shaped products written as
transposes of other products; the pass makes gradients come out C-contiguous (as
PyTorch's do) without changing their values. Products read elsewhere, batched
products and an output that is ``(x.T).T`` are left as they are.
"""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
import numgrad.compiler.passes as passes

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
X = RNG.standard_normal((6, 4)).astype(np.float32)
W = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def linear_loss(w, b, x):
    return ng.tanh(ng.nn.functional.linear(x, w, b)).sum()


def _torch_grads():
    tw = torch.tensor(W, requires_grad=True)
    tb = torch.tensor(B, requires_grad=True)
    torch.tanh(torch.nn.functional.linear(torch.tensor(X), tw, tb)).sum().backward()
    return tw.grad.numpy(), tb.grad.numpy()


def _products_read_only_by_a_transpose(graph):
    made = {e.out: e for e in graph.eqns}
    found = []
    for e in graph.eqns:
        if e.name == "permute" and tuple(e.params.get("dims", ())) == (1, 0):
            src = made.get(e.inputs[0])
            if src is not None and src.name == "matmul":
                found.append(e)
    return found


def test_weight_gradient_is_contiguous_and_equal_to_torch():
    f = ng.jit(ng.value_and_grad(linear_loss, argnums=(0, 1)))
    _, (gw, gb) = f(ng.tensor(W), ng.tensor(B), ng.tensor(X))
    assert gw.numpy().flags.c_contiguous
    want_w, want_b = _torch_grads()
    np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), want_b, rtol=1e-5, atol=1e-6)
    graph = f.trace(ng.tensor(W), ng.tensor(B), ng.tensor(X))
    assert not _products_read_only_by_a_transpose(graph)


def test_call_then_backward_gives_contiguous_grads_too():
    f = ng.jit(linear_loss)
    w = ng.tensor(W, requires_grad=True)
    b = ng.tensor(B, requires_grad=True)
    f(w, b, ng.tensor(X)).backward()
    assert w.grad.numpy().flags.c_contiguous
    np.testing.assert_allclose(w.grad.numpy(), _torch_grads()[0], rtol=1e-5, atol=1e-6)


def test_without_the_pass_the_gradient_was_a_transposed_view(monkeypatch):
    # What the pass is for: turn it off and the same program hands back a view.
    monkeypatch.setattr(passes, "PIPELINE", [p for p in passes.PIPELINE
                                             if p.__name__ != "transpose"])
    f = ng.jit(ng.value_and_grad(linear_loss, argnums=(0,)))
    _, (gw,) = f(ng.tensor(W), ng.tensor(B), ng.tensor(X))
    assert not gw.numpy().flags.c_contiguous
    np.testing.assert_allclose(gw.numpy(), _torch_grads()[0], rtol=1e-5, atol=1e-6)


def test_a_product_read_twice_is_left_alone():
    def fn(x, w):
        y = x @ w
        return y.t() * 2.0, y + 1.0

    f = ng.jit(fn)
    x, w = ng.tensor(X), ng.tensor(W.T.copy())
    got = f(x, w)
    y = X @ W.T
    np.testing.assert_allclose(got[0].numpy(), y.T * 2.0, rtol=1e-6)
    np.testing.assert_allclose(got[1].numpy(), y + 1.0, rtol=1e-6)
    graph = f.trace(x, w)
    assert len(_products_read_only_by_a_transpose(graph)) == 1


def test_double_transpose_output_and_batched_products():
    def fn(x, a, b):
        return x.t().t() * 1.0, x.t().t(), (a @ b).transpose(1, 2)

    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    f = ng.jit(fn)
    got = f(ng.tensor(X), ng.tensor(a), ng.tensor(b))
    np.testing.assert_array_equal(got[0].numpy(), X)
    np.testing.assert_array_equal(got[1].numpy(), X)
    np.testing.assert_allclose(got[2].numpy(), np.swapaxes(a @ b, 1, 2), rtol=1e-5)

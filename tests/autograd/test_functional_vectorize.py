"""jacobian / hessian with vectorize=True: every row from one vmap of the vjp (one batched
backward, never a loop over the rows), with torch's values and structures, create_graph
included, eagerly and under @ng.jit."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from numgrad.autograd import engine  # noqa: E402
from test_functional import NF, TF, X, Y, assert_same_tree, both  # noqa: E402


def f_two(x, y):
    return (y @ x).tanh(), (x * x).sum(), y[:, :1] * 0  # the last: no path to x


def f_scalar(x, y):
    return ((y @ x).tanh() * x[:2]).sum() + (x ** 3).sum()


@pytest.fixture
def grad_calls(monkeypatch):
    calls = []
    grad = engine.grad
    monkeypatch.setattr(engine, "grad", lambda *a, **k: calls.append(1) or grad(*a, **k))
    return calls


def test_vectorized_jacobian_is_one_backward_with_torchs_values(grad_calls):
    (x, y), (tx, ty) = both([X, Y])
    got = NF.jacobian(f_two, (x, y), vectorize=True)
    assert len(grad_calls) == 1  # every row of every output in one mapped vjp
    assert_same_tree(got, TF.jacobian(f_two, (tx, ty), vectorize=True))
    assert_same_tree(NF.jacobian(lambda a: a.sin() * a, x, vectorize=True),
                     TF.jacobian(lambda a: a.sin() * a, tx, vectorize=True))


def test_vectorized_hessian_and_create_graph_match_torch(grad_calls):
    (x, y), (tx, ty) = both([X, Y])
    x.requires_grad_(True)
    tx.requires_grad_(True)
    h = NF.hessian(f_scalar, (x, y), vectorize=True, create_graph=True)
    th = TF.hessian(f_scalar, (tx, ty), vectorize=True, create_graph=True)
    assert_same_tree(h, th)
    assert h[0][0].requires_grad and th[0][0].requires_grad
    n_outer = len(grad_calls)
    # Double backward through the vectorized Hessian (third derivatives).
    (h[0][0].sum() + h[1][0].sum()).backward()
    (th[0][0].sum() + th[1][0].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    # One backward for the gradient (the inner Jacobian of a scalar) and one mapped vjp for
    # all rows of the outer Jacobian.
    assert n_outer == 2


@ng.jit
def jitted_jacobian(x, y):
    return NF.jacobian(lambda a: (y @ a).tanh(), x, vectorize=True)


def test_vectorized_jacobian_under_jit_matches_torch():
    (x, y), (tx, ty) = both([X, Y])
    want = TF.jacobian(lambda a: (ty @ a).tanh(), tx, vectorize=True)
    assert_same_tree(jitted_jacobian(x, y), want)
    assert_same_tree(jitted_jacobian(x * 2, y), TF.jacobian(lambda a: (ty @ a).tanh(), tx * 2,
                                                           vectorize=True))

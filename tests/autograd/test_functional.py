"""ng.autograd.functional against torch.autograd.functional: values, output structures
(tuple vs single tensor), create_graph (double backward), strict mode and error texts."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import to_numpy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "func"))
from helpers import assert_same_tree, both  # noqa: E402

NF = ng.autograd.functional
TF = torch.autograd.functional
X = np.array([0.3, -1.2, 0.7])
Y = np.array([[0.5, 1.0, -0.4], [2.0, -0.1, 0.3]])


def lib(t):
    return torch if isinstance(t, torch.Tensor) else ng


def f_vec(x):
    return (x.sin() * x).exp()


def f_scalar(x):
    return (x ** 3).sum() + (x.tanh() * x).sum()


def f_two(x, y):
    return (y @ x).tanh(), (x * x).sum()


def f_two_scalar(x, y):
    return ((y @ x).tanh() * x[:2]).sum() + (x ** 3).sum()


def run(name, fn, arrays, *extra, **kw):
    (a, b) = both(arrays)
    def pack(t):
        return t if len(t) > 1 else t[0]
    ng_extra = [pack(both(e)[0]) if e is not None else None for e in extra]
    t_extra = [pack(both(e)[1]) if e is not None else None for e in extra]
    got = getattr(NF, name)(fn, pack(a), *ng_extra, **kw)
    want = getattr(TF, name)(fn, pack(b), *t_extra, **kw)
    assert_same_tree(got, want)
    return got


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_structures(vectorize):
    run("jacobian", f_vec, [X], vectorize=vectorize)
    run("jacobian", f_two, [X, Y], vectorize=vectorize)
    run("jacobian", lambda x: (x * 2,), [X], vectorize=vectorize)
    run("jacobian", lambda x, y: x * y[0], [X, Y], vectorize=vectorize)


def test_jacobian_forward_mode():
    run("jacobian", f_vec, [X], vectorize=True, strategy="forward-mode")
    run("jacobian", f_two, [X, Y], vectorize=True, strategy="forward-mode")


def test_hessian_structures():
    run("hessian", f_scalar, [X])
    run("hessian", f_two_scalar, [X, Y])
    run("hessian", f_scalar, [X], outer_jacobian_strategy="forward-mode", vectorize=True)


@pytest.mark.parametrize("name", ["vjp", "jvp"])
def test_products(name):
    run(name, f_vec, [X], [X * 0.5])
    run(name, f_two, [X, Y], [np.array([0.5, -1.0]), np.array(0.7)] if name == "vjp" else [X, Y])
    run(name, f_scalar, [np.array([0.4])], None) if name == "jvp" else \
        run(name, f_scalar, [X], None)


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hessian_products(name):
    run(name, f_scalar, [X], [X - 1])
    run(name, f_two_scalar, [X, Y], [X, Y * 2])


@pytest.mark.parametrize("name", ["vjp", "jvp", "hvp", "vhp"])
def test_create_graph_double_backward(name):
    """The product is differentiable w.r.t. the caller's inputs: its gradient matches torch's."""
    fn = f_scalar if name in ("hvp", "vhp") else f_vec
    v = X * 0.5
    grads = []
    for m in (ng, torch):
        x = m.tensor(X, requires_grad=True)
        _, r = getattr(m.autograd.functional, name)(fn, x, m.tensor(v), create_graph=True)
        assert r.requires_grad
        (g,) = m.autograd.grad((r * r).sum(), x)
        grads.append(g)
    np.testing.assert_allclose(to_numpy(grads[0]), to_numpy(grads[1]), rtol=1e-6)


def test_results_detached_without_create_graph():
    x = ng.tensor(X, requires_grad=True)
    out, g = NF.vjp(f_scalar, x)
    assert not out.requires_grad and not g.requires_grad
    assert NF.jacobian(f_vec, x).requires_grad is False


def test_hessian_matches_finite_differences():
    h = NF.hessian(f_scalar, ng.tensor(X)).numpy()
    eps = 1e-5
    fd = np.empty((3, 3))
    gx = lambda a: NF.vjp(f_scalar, ng.tensor(a))[1].numpy()  # noqa: E731
    for j in range(3):
        e = np.zeros(3)
        e[j] = eps
        fd[:, j] = (gx(X + e) - gx(X - e)) / (2 * eps)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-7)


def errors(fn, *args, **kw):
    """The (type, message) both libraries raise for the same call."""
    out = []
    for m, F in ((ng, NF), (torch, TF)):
        conv = [tuple(m.tensor(x) for x in a) if isinstance(a, tuple) else
                (m.tensor(a) if isinstance(a, np.ndarray) else a) for a in args]
        with pytest.raises(Exception) as info:
            getattr(F, fn)(*conv, **kw)
        out.append((type(info.value), str(info.value)))
    assert out[0] == out[1]


def test_error_texts():
    errors("vjp", lambda x: x * 2, X)                  # v=None on a non-scalar output
    errors("jvp", lambda x: x * 2, X)                  # v=None on a non-scalar input
    errors("vjp", lambda x: x * 2, X, np.ones(2))      # v of the wrong size
    errors("vjp", lambda x, y: (x, y), (X, X), (X,))   # v tuple of the wrong length
    errors("vjp", lambda x: x * 2, [1.0])              # inputs not tensors
    errors("hessian", lambda x: x * 2, X)              # not a single element
    errors("hvp", lambda x: (x.sum(), x.sum()), X, X)  # not a single tensor
    errors("jacobian", lambda x: x, X, strategy="sideways")
    errors("jacobian", lambda x: x, X, strategy="forward-mode")  # needs vectorize
    errors("jacobian", lambda x: x, X, strategy="forward-mode", vectorize=True,
           create_graph=True)
    errors("jacobian", lambda x: x, X, strict=True, vectorize=True)


def test_strict_mode_errors():
    errors("vjp", lambda x: ng.ones(3) if isinstance(x, ng.Tensor) else torch.ones(3), X, X,
           strict=True)
    errors("jacobian", lambda x, y: x * 2, (X, X), strict=True)
    errors("hessian", lambda x: x.sum(), X, strict=True)
    errors("jvp", lambda x, y: x * 2, (X, X), (X, X), strict=True)


@ng.jit
def jit_hessian(x):
    return NF.hessian(f_scalar, x)


@ng.jit
def jit_hvp(x, v):
    return NF.hvp(f_scalar, x, v)[1]


def test_under_jit():
    x = ng.tensor(X)
    assert_same_tree(jit_hessian(x), TF.hessian(f_scalar, torch.tensor(X)))
    assert_same_tree(jit_hvp(x, ng.tensor(X)),
                     TF.hvp(f_scalar, torch.tensor(X), torch.tensor(X))[1])


@ng.jit
def jit_jvp(x, v):
    return NF.jvp(f_vec, x, v)[1]


def test_jvp_under_jit():
    assert_same_tree(jit_jvp(ng.tensor(X), ng.tensor(X)),
                     TF.jvp(f_vec, torch.tensor(X), torch.tensor(X))[1])

"""ng.func's differentiating transforms against torch.func: values, output structures,
argnums/has_aux/pytrees, composition with each other, vmap and @ng.jit (one tiny CUDA
simulator case), functional_call / stack_module_state, and the error texts."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import to_numpy  # noqa: E402
from helpers import assert_same_error, assert_same_tree, both  # noqa: E402

F, TF = ng.func, torch.func
RNG = np.random.default_rng(2)
X = RNG.uniform(-1, 1, 3)
Y = RNG.uniform(-1, 1, (2, 3))


def lib(t):
    return torch if isinstance(t, torch.Tensor) else ng


def scalar2(x, y):
    return ((y @ x).tanh() * x[:2]).sum() + (x ** 3).sum() * y.exp().mean()


def vector2(x, y):
    return (y @ x).sin(), x * y[1]


def compare(transform, fn, arrays, *targs, **kw):
    a, b = both(arrays)
    got = getattr(F, transform)(fn, *targs, **kw)(*a)
    want = getattr(TF, transform)(fn, *targs, **kw)(*b)
    assert_same_tree(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
def test_grad_family(argnums):
    compare("grad", scalar2, [X, Y], argnums=argnums)
    compare("grad_and_value", scalar2, [X, Y], argnums=argnums)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacobians(transform, argnums):
    compare(transform, vector2, [X, Y], argnums=argnums)
    compare(transform, lambda x, y: (x * y).sum(0), [X, Y], argnums=argnums)


def test_jacobian_dict_output_and_chunks():
    compare("jacrev", lambda x: {"u": x * 2, "v": x.sum()}, [X])
    compare("jacrev", lambda x: x.exp(), [X], chunk_size=1)


def test_hessian():
    compare("hessian", scalar2, [X, Y])
    compare("hessian", scalar2, [X, Y], argnums=1)


def test_has_aux():
    def f(x):
        return (x ** 2).sum(), {"x2": x * 2}
    compare("grad", f, [X], has_aux=True)
    compare("grad_and_value", f, [X], has_aux=True)
    compare("jacrev", lambda x: (x.sin(), x.cos()), [X], has_aux=True)
    compare("jacfwd", lambda x: (x.sin(), x.cos()), [X], has_aux=True)


def test_pytree_arguments():
    def f(p, x):
        return ((x @ p["w"]).tanh() + p["b"]).sum()
    p = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
    got = F.grad(f)({k: ng.tensor(v) for k, v in p.items()}, ng.tensor(Y))
    want = TF.grad(f)({k: torch.tensor(v) for k, v in p.items()}, torch.tensor(Y))
    assert_same_tree(got, want)


def test_vjp_and_jvp():
    (a, b) = both([X, Y])
    out, fn = F.vjp(vector2, *a)
    tout, tfn = TF.vjp(vector2, *b)
    assert_same_tree(out, tout)
    ct = both([RNG.standard_normal(2), RNG.standard_normal(3)])
    assert_same_tree(fn(ct[0]), tfn(ct[1]))
    tang = both([X * 0.3, Y - 1])
    assert_same_tree(F.jvp(vector2, a, tang[0]), TF.jvp(vector2, b, tang[1]))
    assert_same_tree(F.jvp(lambda x: (x.sin(), x), (a[0],), (tang[0][0],), has_aux=True),
                     TF.jvp(lambda x: (x.sin(), x), (b[0],), (tang[1][0],), has_aux=True))


def test_compositions():
    f = lambda x: (x.sin() * x.exp()).sum()  # noqa: E731
    compare("grad", f, [X])
    a, b = both([X])
    assert_same_tree(F.grad(lambda x: F.grad(f)(x).sum())(*a),
                     TF.grad(lambda x: TF.grad(f)(x).sum())(*b))
    assert_same_tree(F.jacrev(F.jacrev(f))(*a), TF.jacrev(TF.jacrev(f))(*b))
    assert_same_tree(F.jacfwd(F.jacfwd(f))(*a), TF.hessian(f)(*b), rtol=1e-9)
    assert_same_tree(F.jacfwd(F.jacrev(F.grad(f)))(*a), TF.jacfwd(TF.jacrev(TF.grad(f)))(*b),
                     rtol=1e-9)
    ys, tys = both([Y])
    assert_same_tree(F.vmap(F.jacrev(lambda r: r.tanh() * r[0]))(*ys),
                     TF.vmap(TF.jacrev(lambda r: r.tanh() * r[0]))(*tys))
    assert_same_tree(F.vmap(F.hessian(lambda r: (r ** 3).sum()))(*ys),
                     TF.vmap(TF.hessian(lambda r: (r ** 3).sum()))(*tys))
    jv = lambda r, t: F.jvp(lambda q: q.exp() * q, (r,), (t,))[1]  # noqa: E731
    tjv = lambda r, t: TF.jvp(lambda q: q.exp() * q, (r,), (t,))[1]  # noqa: E731
    assert_same_tree(F.vmap(jv)(ys[0], ys[0]), TF.vmap(tjv)(tys[0], tys[0]))


def test_reverse_over_forward():
    """grad of a jvp (and an input that requires grad) differentiates the tangent too."""
    f = lambda x: (x.sin() * x.exp()).sum() * x  # noqa: E731
    a, b = both([X])
    g = lambda fn: lambda x: fn.jvp(f, (x,), (x * 0.5,))[1].sum()  # noqa: E731
    assert_same_tree(F.grad(g(F))(*a), TF.grad(g(TF))(*b))
    assert_same_tree(F.jacrev(lambda x: F.jvp(f, (x,), (x,))[1])(*a),
                     TF.jacrev(lambda x: TF.jvp(f, (x,), (x,))[1])(*b))


def test_grad_of_grad_matches_finite_differences():
    f = lambda x: (x.sin() * x.exp()).sum()  # noqa: E731
    g = lambda a: F.grad(f)(ng.tensor(a)).numpy()  # noqa: E731
    h = F.hessian(f)(ng.tensor(X)).numpy()
    eps = 1e-6
    fd = np.stack([(g(X + eps * e) - g(X - eps * e)) / (2 * eps) for e in np.eye(3)], 1)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)


def test_outer_autograd_sees_through():
    """A result of a transform on an input that requires grad stays in the caller's graph."""
    gs = []
    for m, fn in ((ng, F), (torch, TF)):
        x = m.tensor(X, requires_grad=True)
        h = fn.jacrev(lambda a: a.sin() * a)(x)
        gs.append(m.autograd.grad(h.sum(), x)[0])
    np.testing.assert_allclose(to_numpy(gs[0]), to_numpy(gs[1]), rtol=1e-9)


def mlp_loss(p, x, y):
    h = (x @ p["w1"] + p["b1"]).relu()
    out = h @ p["w2"] + p["b2"]
    return ((out - y) ** 2).mean()


P = {"w1": RNG.standard_normal((3, 4)), "b1": RNG.standard_normal(4),
     "w2": RNG.standard_normal((4, 2)), "b2": RNG.standard_normal(2)}
XB = RNG.standard_normal((5, 3))
YB = RNG.standard_normal((5, 2))


@ng.jit
def jit_per_sample(p, x, y):
    return F.vmap(F.grad(mlp_loss), in_dims=(None, 0, 0))(p, x, y)


@ng.jit
def jit_hessian(x, y):
    return F.hessian(scalar2)(x, y)


@ng.jit
def jit_jvp(x, y, t):
    return F.jvp(lambda a: vector2(a, y), (x,), (t,))


def test_under_jit():
    tp = {k: torch.tensor(v) for k, v in P.items()}
    want = TF.vmap(TF.grad(mlp_loss), in_dims=(None, 0, 0))(tp, torch.tensor(XB),
                                                           torch.tensor(YB))
    got = jit_per_sample({k: ng.tensor(v) for k, v in P.items()}, ng.tensor(XB), ng.tensor(YB))
    assert_same_tree(got, want)
    a, b = both([X, Y])
    assert_same_tree(jit_hessian(*a), TF.hessian(scalar2)(*b), rtol=1e-9)
    assert_same_tree(jit_jvp(*a, a[0]), TF.jvp(lambda q: vector2(q, b[1]), (b[0],), (b[0],)))


def test_functional_call_and_ensembles():
    models = [ng.nn.Linear(3, 2) for _ in range(3)]
    params, buffers = F.stack_module_state(models)
    assert params["weight"].shape == (3, 2, 3) and params["weight"].is_leaf
    assert params["weight"].requires_grad and buffers == {}
    x = ng.tensor(XB, dtype=ng.float32)
    out = F.vmap(lambda p, b: F.functional_call(models[0], (p, b), (x,)))(params, buffers)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    before = models[0].weight
    with pytest.raises(RuntimeError, match="Unexpected key"):
        F.functional_call(models[0], {"nope": ng.ones(1)}, (x,), strict=True)
    assert models[0].weight is before  # put back after the call, also on error
    new = {"weight": ng.zeros(2, 3), "bias": ng.ones(2)}
    np.testing.assert_array_equal(F.functional_call(models[0], new, x).numpy(), np.ones((5, 2)))


def test_reverse_mode_through_vmap():
    """Gradients flow out of a vmap to its mapped inputs and, summed over the examples, to
    the tensors it shares (the ensemble's stacked parameters, a captured weight)."""
    res = []
    for m, fn in ((ng, F), (torch, TF)):
        w = m.tensor(Y.T.copy(), requires_grad=True)
        x = m.tensor(XB, requires_grad=True)
        ws = m.tensor(np.stack([Y.T, 2 * Y.T]), requires_grad=True)
        out = fn.vmap(lambda r: (r @ w).tanh())(x).sum()
        out = out + fn.vmap(lambda wi: (x @ wi).sin().sum())(ws).sum()
        out = out + fn.grad(lambda v: fn.vmap(lambda r: (r * v).exp().sum())(x).sum())(w[:, 0]
                                                                                        ).sum()
        res.append(m.autograd.grad(out, (w, x, ws), create_graph=True))
        res.append(m.autograd.grad(res[-1][0].sum(), (w, x)))  # and double backward
    for a, b in ((res[0], res[2]), (res[1], res[3])):
        assert_same_tree(a, b)


def test_error_texts():
    def cases(m, fn, x):
        return [lambda: fn.grad(lambda a: a.sin())(x),
                lambda: fn.grad(lambda a: a.sum(), argnums=3)(x),
                lambda: fn.grad(lambda a: a.sum(), argnums=())(x),
                lambda: fn.grad(lambda a: a.sum(), has_aux=True)(x),
                lambda: fn.jvp(lambda a: a, x, (x,)),
                lambda: fn.vjp(lambda a: a * 2, x)[1](m.ones(3)),
                lambda: fn.vmap(lambda a: a.sum().backward())(m.ones(2, 2, requires_grad=True))]
    for a, b in zip(cases(ng, F, ng.ones(2)), cases(torch, TF, torch.ones(2))):
        assert_same_error(a, b)


def test_cuda_simulator_per_sample_grads():
    import numgrad.cuda.device as cuda_device
    if not (cuda_device.simulated() or cuda_device.available()):
        pytest.skip("neither a CUDA device nor Numba's simulator")
    w = ng.tensor(Y.T.astype(np.float32), device="cuda")
    x = ng.tensor(XB[:2].astype(np.float32), device="cuda")
    f = ng.jit(F.vmap(F.grad(lambda w, r: (r @ w).tanh().sum()), in_dims=(None, 0)))
    got = f(w, x).cpu().numpy()
    want = TF.vmap(TF.grad(lambda w, r: (r @ w).tanh().sum()), in_dims=(None, 0))(
        torch.tensor(Y.T.astype(np.float32)), torch.tensor(XB[:2].astype(np.float32)))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)

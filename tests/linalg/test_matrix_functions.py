"""numgrad.linalg's norms and products, the diagonal rows and torch's top-level linear
algebra names (functions and Tensor methods), against torch: values, gradients, errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import numgrad as ng
import numgrad.linalg as LA

TL = torch.linalg
RNG = np.random.default_rng(3)
M = RNG.standard_normal((2, 3, 4))
SQ = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
V = RNG.standard_normal((2, 3))


def _check(fn_ng, fn_torch, *arrays):
    xs = [ng.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn_ng(*xs), fn_torch(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-10)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-8)


ORDS = ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dim, keepdim", [((-2, -1), False), ((2, 0), True)])
def test_matrix_norm(ord, dim, keepdim):
    _check(lambda a: LA.matrix_norm(a, ord, dim, keepdim),
           lambda a: TL.matrix_norm(a, ord, dim, keepdim), M)


@pytest.mark.parametrize("ord", [2, 1, 3.5, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_vector_norm(ord, dim):
    _check(lambda a: LA.vector_norm(a, ord, dim), lambda a: TL.vector_norm(a, ord, dim), M)


def test_vector_norm_zero_counts_nonzeros():
    a = np.array([[0.0, 1.5], [-2.0, 0.0]])
    assert (LA.vector_norm(ng.tensor(a), 0, dim=1).tolist()
            == TL.vector_norm(torch.tensor(a), 0, dim=1).tolist())


@pytest.mark.parametrize("args", [dict(), dict(ord=2), dict(ord="nuc"), dict(dim=1),
                                  dict(ord=1, dim=(0, 1), keepdim=True)])
def test_norm_picks_vector_or_matrix(args):
    _check(lambda a: LA.norm(a, **args), lambda a: TL.norm(a, **args), M[0])


def test_vector_norm_zero_gradient_and_dtype():
    x = ng.zeros(3, requires_grad=True)
    LA.vector_norm(x).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    assert LA.vector_norm(ng.ones(2), dtype=ng.float64).dtype is ng.float64


def test_products():
    _check(lambda a, b, c: LA.multi_dot([a, b, c]), lambda a, b, c: TL.multi_dot([a, b, c]),
           V[0], M[0], M[1, 0])
    _check(lambda a, b: LA.multi_dot([a, b]), lambda a, b: TL.multi_dot([a, b]), M[0].T, V.T)
    W = V[::-1].copy()
    _check(lambda a, b: LA.vecdot(a, b, dim=0), lambda a, b: TL.vecdot(a, b, dim=0), V, W)
    _check(lambda a, b: LA.cross(a, b), lambda a, b: TL.cross(a, b), V, W)
    _check(lambda a, b: LA.cross(a, b, dim=0), lambda a, b: TL.cross(a, b, dim=0), SQ, SQ.T)
    _check(lambda a, b: LA.matmul(a, b), lambda a, b: TL.matmul(a, b), M, M[0].T)


def _write_diagonal(m, a):
    b = a * 2
    b.diagonal(1, 0, 2).mul_(m.diagonal(a, 1, 0, 2) ** 2)
    return b


def test_diagonals():
    _check(lambda a: LA.diagonal(a, offset=1), lambda a: TL.diagonal(a, offset=1), M)
    _check(lambda a: ng.diagonal(a, -1, 2, 0), lambda a: torch.diagonal(a, -1, 2, 0), M)
    _check(lambda a: ng.diag_embed(a, 1, 0, 2), lambda a: torch.diag_embed(a, 1, 0, 2), V)
    _check(lambda a: ng.diag(a, -1), lambda a: torch.diag(a, -1), V[0])
    _check(lambda a: ng.diag(a, 2), lambda a: torch.diag(a, 2), M[0])
    _check(lambda a: ng.trace(a), lambda a: torch.trace(a), M[0])
    # a view: writes reach the base, and the gradient flows as through torch's CopySlices
    _check(lambda a: _write_diagonal(ng, a), lambda t: _write_diagonal(torch, t), M)
    x = ng.zeros(2, 3)
    x.diagonal(1).fill_(5.0)
    assert x.tolist() == [[0.0, 5.0, 0.0], [0.0, 0.0, 5.0]]
    x = ng.tensor(M[0], requires_grad=True)  # every order is these two rows again
    assert ng.autograd.gradcheck(lambda a: ng.diag_embed(ng.diagonal(a, 1) ** 2), (x,))
    assert ng.autograd.gradgradcheck(lambda a: ng.diag_embed(ng.diagonal(a, 1) ** 2), (x,))


def test_diagflat_diagonal_scatter_fill_diagonal():
    _check(lambda a: ng.diagflat(a, -1), lambda t: torch.diagflat(t, -1), V)
    _check(lambda a, b: ng.diagonal_scatter(a, b, 1, 0, 2),
           lambda t, u: torch.diagonal_scatter(t, u, 1, 0, 2), M, M[0, :, :2].copy())
    _check(lambda a, b: a.diagonal_scatter(b), lambda t, u: t.diagonal_scatter(u), SQ, SQ[0])
    for shape, wrap in (((5, 3), True), ((5, 3), False), ((2, 4), False), ((2, 2, 2), False)):
        a = RNG.standard_normal(shape)
        _check(lambda x: (x * 2).fill_diagonal_(7.0, wrap),
               lambda t: (t * 2).fill_diagonal_(7.0, wrap), a)


@pytest.mark.parametrize("name, args", [
    ("det", ()), ("logdet", ()), ("inverse", ()), ("pinverse", ()), ("matrix_power", (2,)),
    ("trace", ()), ("diag", ()), ("diagonal", ()), ("diag_embed", ())])
def test_top_level_functions_and_methods(name, args):
    a = SQ @ SQ.T
    _check(lambda x: getattr(ng, name)(x, *args), lambda t: getattr(torch, name)(t, *args), a)
    _check(lambda x: getattr(x, name)(*args), lambda t: getattr(t, name)(*args), a)


def test_top_level_matrix_exp():
    _check(lambda x: ng.matrix_exp(x), lambda t: torch.matrix_exp(t), SQ / 4)
    _check(lambda x: x.matrix_exp(), lambda t: t.matrix_exp(), SQ / 4)


def test_top_level_svd_slogdet_cholesky():
    a = RNG.standard_normal((4, 3))
    for some in (True, False):
        U, S, V = ng.svd(ng.tensor(a), some=some)
        ref = torch.svd(torch.tensor(a), some=some)
        assert [tuple(p.shape) for p in (U, S, V)] == [tuple(p.shape) for p in ref]
        k = S.shape[0]
        np.testing.assert_allclose(((U[:, :k] * S) @ V[:, :k].mT).numpy(), a, atol=1e-12)
    zero = ng.tensor(a).svd(compute_uv=False)
    assert zero.U.abs().sum().item() == 0 and zero.V.shape == (3, 3)
    spd = a.T @ a + np.eye(3)
    _check(lambda x: ng.cholesky(x, True), lambda t: torch.cholesky(t, True), spd)
    _check(lambda x: x.cholesky(), lambda t: t.cholesky(), spd)
    _check(lambda x: ng.slogdet(x)[1], lambda t: torch.slogdet(t)[1], SQ)
    _check(lambda x: x.slogdet().logabsdet, lambda t: t.slogdet().logabsdet, SQ)
    want = type(torch.slogdet(torch.tensor(SQ))).__name__
    assert type(ng.slogdet(ng.tensor(SQ))).__name__ == want == "slogdet"
    assert math.isnan(ng.logdet(ng.tensor([[-1.0]])).item())
    assert ng.logdet(ng.zeros(2, 2)).item() == -math.inf


def test_cholesky_solve_and_inverse():
    low = np.linalg.cholesky(SQ @ SQ.T)
    b = RNG.standard_normal((2, 3, 2))
    for upper in (False, True):
        f = low.T.copy() if upper else low
        _check(lambda x, y: ng.cholesky_solve(x, y, upper), lambda x, y: torch.cholesky_solve(
            x, y, upper), b, f)
        _check(lambda y: ng.cholesky_inverse(y, upper),
               lambda y: torch.cholesky_inverse(y, upper), f)
    _check(lambda x, y: x.cholesky_solve(y), lambda x, y: x.cholesky_solve(y), b, low)
    _check(lambda y: y.cholesky_inverse(), lambda y: y.cholesky_inverse(), low)


def test_torch_cross_default_dim_warns():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    with pytest.warns(UserWarning, match="without specifying the dim"):
        got = ng.cross(ng.tensor(a), ng.tensor(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.cross(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    np.testing.assert_allclose(ng.tensor(a).cross(ng.tensor(b), dim=0).numpy(), want.numpy())


@pytest.mark.parametrize("fn, arrays", [
    (lambda m, a: m.linalg.matrix_norm(a), [np.ones(3)]),
    (lambda m, a: m.linalg.matrix_norm(a, ord=3), [np.ones((3, 3))]),
    (lambda m, a: m.linalg.matrix_norm(a, dim=(0, 1, 2)), [np.ones((3, 3))]),
    (lambda m, a: m.linalg.matrix_norm(a, dim=(0, 0)), [np.ones((3, 3))]),
    (lambda m, a: m.linalg.vector_norm(a), [np.ones(3, np.int64)]),
    (lambda m, a: m.linalg.vector_norm(a, ord="fro"), [np.ones(3)]),
    (lambda m, a: m.linalg.norm(a, ord=2), [np.ones((3, 3, 3))]),
    (lambda m, a: m.linalg.cross(a, a[:2]), [np.ones(3)]),
    (lambda m, a: m.linalg.cross(a, a[None]), [np.ones(3)]),
    (lambda m, a: m.linalg.cross(a, a.double()), [np.ones(3, np.float32)]),
    (lambda m, a: m.cross(a, a), [np.ones((4, 4))]),
    (lambda m, a: m.linalg.multi_dot([a]), [np.ones((3, 3))]),
    (lambda m, a: m.linalg.multi_dot([a, a[None]]), [np.ones((3, 3))]),
    (lambda m, a: m.linalg.multi_dot([a, a[:2]]), [np.ones((3, 3))]),
    (lambda m, a: m.diagonal(a, 0, 1, 1), [np.ones((3, 3))]),
    (lambda m, a: m.diagonal(a, 0, 1, 2), [np.ones((3, 3))]),
    (lambda m, a: m.trace(a), [np.ones((2, 2, 2))]),
    (lambda m, a: m.diag(a), [np.ones((2, 2, 2))]),
    (lambda m, a: m.cholesky_solve(a[0], a), [np.eye(2)]),
    (lambda m, a: m.cholesky_solve(a[:1], a), [np.eye(2)]),
    (lambda m, a: m.cholesky_solve(a.double(), a), [np.eye(2, dtype=np.float32)]),
    (lambda m, a: m.cholesky_inverse(a), [np.ones(3)]),
    (lambda m, a: m.diagonal_scatter(a, a[0, :2]), [np.ones((3, 3))]),
    (lambda m, a: a.fill_diagonal_(1), [np.ones((2, 3, 2))]),
    (lambda m, a: a.fill_diagonal_(1), [np.ones(3)]),
])
def test_errors_match_torch(fn, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as want:
            fn(torch, *[torch.tensor(a) for a in arrays])
        with pytest.raises(type(want.value)) as got:
            fn(ng, *[ng.tensor(a) for a in arrays])
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond(p):
    a = np.stack([SQ, SQ.T @ SQ])
    if p in (None, 2, -2):
        _check(lambda x: LA.cond(x, p), lambda t: TL.cond(t, p), a)
    else:  # (torch's own backward fails here: an in-place write to the inverse it saved)
        np.testing.assert_allclose(LA.cond(ng.tensor(a), p).numpy(),
                                   TL.cond(torch.tensor(a), p).numpy(), rtol=1e-12)
        assert ng.autograd.gradcheck(lambda x: LA.cond(x, p), (ng.tensor(SQ, requires_grad=True),))
    singular = LA.cond(ng.tensor([[1.0, 2.0], [2.0, 4.0]]), p).item()
    assert singular < 1e-6 if p == -2 else singular > 1e6  # inf, or rounding's huge value


def test_vander_tensorinv_tensorsolve():
    _check(lambda x: LA.vander(x), lambda t: TL.vander(t), V)
    _check(lambda x: LA.vander(x, N=4), lambda t: TL.vander(t, N=4), V[0])
    assert LA.vander(ng.tensor([1, 2])).tolist() == TL.vander(torch.tensor([1, 2])).tolist()
    a = RNG.standard_normal((4, 2, 2)) + 2 * np.eye(4).reshape(4, 2, 2)
    _check(lambda x: LA.tensorinv(x, ind=1), lambda t: TL.tensorinv(t, ind=1), a)
    b = RNG.standard_normal((2, 3, 6)) + 2 * np.eye(6).reshape(2, 3, 6)
    _check(lambda x, y: LA.tensorsolve(x, y), lambda t, u: TL.tensorsolve(t, u), b, V)
    _check(lambda x, y: LA.tensorsolve(x, y, dims=(0,)), lambda t, u: TL.tensorsolve(t, u, (0,)),
           b.transpose(2, 0, 1).copy(), V.reshape(3, 2).copy())


@pytest.mark.parametrize("fn, arrays", [
    (lambda m, a: m.linalg.cond(a, 1), [np.ones((2, 3))]),
    (lambda m, a: m.linalg.vander(a, N=1), [np.ones(3)]),
    (lambda m, a: m.linalg.tensorinv(a, ind=0), [np.ones((4, 2, 2))]),
    (lambda m, a: m.linalg.tensorinv(a, ind=1), [np.ones((4, 2, 3))]),
    (lambda m, a: m.linalg.tensorsolve(a, a[0]), [np.ones((2, 3, 2))]),
])
def test_derived_errors_match_torch(fn, arrays):
    test_errors_match_torch(fn, arrays)


def test_ex_variants_report_failures():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    a = np.stack([np.eye(2) * 2, singular, -np.eye(2)])
    for name, args in (("inv_ex", ()), ("cholesky_ex", ()), ("solve_ex", (np.ones((3, 2)),))):
        got = getattr(LA, name)(ng.tensor(a), *map(ng.tensor, args))
        want = getattr(TL, name)(torch.tensor(a), *map(torch.tensor, args))
        assert got.info.dtype is ng.int32
        assert got.info.tolist() == want.info.tolist(), name
        np.testing.assert_allclose(got[0][0].numpy(), want[0][0].numpy())  # the good one
        with pytest.raises(LA.LinAlgError):
            getattr(LA, name)(ng.tensor(a), *map(ng.tensor, args), check_errors=True)

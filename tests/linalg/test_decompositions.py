"""numgrad.linalg's LAPACK rows against torch.linalg: values, gradients (of losses that do
not depend on a decomposition's sign choices), gradcheck and gradgradcheck in float64 on
small well-conditioned matrices, named-tuple results and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
import numgrad.linalg as LA

TL = torch.linalg
RNG = np.random.default_rng(7)


def _square(*batch, n=3):
    return RNG.standard_normal(batch + (n, n)) + 3 * np.eye(n)


def _spd(*batch, n=3):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _check(fn_ng, fn_torch, *arrays, atol=1e-8):
    """Equal values and equal gradients of ``fn`` (a scalar loss) in numgrad and torch."""
    xs = [ng.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn_ng(*xs), fn_torch(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=atol)
    out.backward()
    ref.backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-7, rtol=1e-6)


W = RNG.standard_normal((3, 3))
B = RNG.standard_normal((2, 3, 2))
CASES = {
    "inv": (lambda m, a: (m.inv(a) * a.new_tensor(W)).sum(), [_square(2)]),
    "det": (lambda m, a: m.det(a).sum(), [_square(2)]),
    "slogdet": (lambda m, a: m.slogdet(a).logabsdet.sum() + m.slogdet(a)[0].sum(),
                [_square(2)]),
    "solve": (lambda m, a, b: (m.solve(a, b) ** 2).sum(), [_square(2), B]),
    "solve_broadcast": (lambda m, a, b: (m.solve(a, b) ** 2).sum(), [_square(), B]),
    "solve_batches_broadcast": (lambda m, a, b: (m.solve_triangular(a, b, upper=True) ** 2).sum()
                                + (m.solve(a, b) ** 2).sum(),
                                [_square(2, 1), RNG.standard_normal((4, 3, 2))]),
    "solve_vector": (lambda m, a, b: (m.solve(a, b) ** 2).sum(), [_square(2), B[..., 0]]),
    "solve_right": (lambda m, a, b: (m.solve(a, b, left=False) ** 2).sum(),
                    [_square(), B[0].T.copy()]),
    "cholesky": (lambda m, a: (m.cholesky(a) * a.new_tensor(W)).sum(), [_spd(2)]),
    "cholesky_upper": (lambda m, a: (m.cholesky(a, upper=True) * a.new_tensor(W)).sum(),
                       [_spd()]),
    "eigh": (lambda m, a: (m.eigh(a)[0] ** 3).sum() + (m.eigh(a).eigenvectors ** 4).sum(),
             [_square(2)]),
    "eigh_upper": (lambda m, a: (m.eigh(a, "U")[1] ** 4).sum(), [_square()]),
    "eigvalsh": (lambda m, a: (m.eigvalsh(a) ** 3).sum(), [_spd()]),
    "matrix_exp": (lambda m, a: (m.matrix_exp(a) * a.new_tensor(W)).sum(),
                   [RNG.standard_normal((3, 3, 3)) * np.array([0.1, 1.0, 8.0])[:, None, None]]),
    "matrix_power": (lambda m, a: (m.matrix_power(a, 3) ** 2).sum(), [_square(2)]),
    "matrix_power_negative": (lambda m, a: (m.matrix_power(a, -2) ** 2).sum(), [_square()]),
    "matrix_power_zero": (lambda m, a: (m.matrix_power(a, 0) * a).sum(), [_square()]),
}
for _shape in ((4, 3), (3, 3), (2, 4)):
    _m = RNG.standard_normal((2,) + _shape)
    CASES[f"qr{_shape}"] = (lambda m, a: (m.qr(a).Q ** 3).sum() + (m.qr(a)[1] ** 3).sum(), [_m])
    CASES[f"svd{_shape}"] = (lambda m, a: sum((p ** 4).sum() for p in m.svd(a, False)), [_m])
    # full_matrices: only the first min(m, n) columns are unique (and have gradients)
    CASES[f"svd_full{_shape}"] = (lambda m, a: (m.svd(a).S ** 3).sum(), [_m])
    CASES[f"svdvals{_shape}"] = (lambda m, a: (m.svdvals(a) ** 3).sum(), [_m])
    CASES[f"pinv{_shape}"] = (lambda m, a: (m.pinv(a) ** 3).sum(), [_m])
    CASES[f"lstsq{_shape}"] = (lambda m, a, b: (m.lstsq(a, b).solution ** 2).sum(),
                               [_m, RNG.standard_normal((2, _shape[0], 2))])
CASES["qr_complete"] = (lambda m, a: (m.qr(a, "complete").Q ** 3).sum(),
                        [RNG.standard_normal((2, 4))])
for _up in (True, False):
    for _left in (True, False):
        for _unit in (True, False):
            CASES[f"solve_triangular{(_up, _left, _unit)}"] = (
                lambda m, a, b, u=_up, le=_left, un=_unit: (m.solve_triangular(
                    a, b if le else b.mT, upper=u, left=le, unitriangular=un) ** 2).sum(),
                [_square(2), B])


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    fn, arrays = CASES[name]
    _check(lambda *xs: fn(LA, *xs), lambda *ts: fn(TL, *ts), *arrays)


# gradcheck and second order: each row's rule is numgrad ops (these rows included).
GRADCHECK = {
    "inv": (lambda a: LA.inv(a), _square(n=2)),
    "det": (lambda a: LA.det(a), _square(n=2)),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, _square(n=2)),
    "solve": (lambda a: LA.solve(a, a[..., :1] * 2 + 1), _square(n=2)),
    "solve_triangular": (lambda a: LA.solve_triangular(a, a * a, upper=False), _square(n=2)),
    "cholesky": (lambda a: LA.cholesky(a @ a.mT + ng.eye(2, dtype=ng.float64)), _square(n=2)),
    "qr": (lambda a: LA.qr(a).Q + LA.qr(a).R.sum(), RNG.standard_normal((3, 2))),
    "eigh": (lambda a: LA.eigh(a + a.mT).eigenvectors.abs() + LA.eigvalsh(a + a.mT).sum(),
             _square(n=2)),
    "svd": (lambda a: LA.svd(a, False).U.abs() + LA.svdvals(a).sum(),
            RNG.standard_normal((3, 2))),
    "pinv": (lambda a: LA.pinv(a), RNG.standard_normal((2, 3))),
    "matrix_exp": (lambda a: LA.matrix_exp(a), RNG.standard_normal((2, 2))),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_and_gradgradcheck(name):
    fn, a = GRADCHECK[name]
    x = ng.tensor(a, requires_grad=True)
    assert ng.autograd.gradcheck(fn, (x,))
    assert ng.autograd.gradgradcheck(fn, (x,))


def test_double_backward_matches_torch():
    a = _square(n=3)
    x, t = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    gx, = ng.autograd.grad(LA.det(x) + LA.svdvals(x).sum(), x, create_graph=True)
    gt, = torch.autograd.grad(TL.det(t) + TL.svdvals(t).sum(), t, create_graph=True)
    (gx ** 2).sum().backward()
    (gt ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_named_tuples_and_float32():
    a = _square(2).astype(np.float32)
    x = ng.tensor(a)
    U, S, Vh = LA.svd(x, full_matrices=False)
    assert LA.svd(x).Vh.shape == Vh.shape == (2, 3, 3) and S.dtype is ng.float32
    np.testing.assert_allclose((U * S.unsqueeze(-2) @ Vh).numpy(), a, atol=1e-5)
    assert LA.qr(x)._fields == ("Q", "R") and LA.eigh(x)._fields == ("eigenvalues",
                                                                        "eigenvectors")
    assert LA.slogdet(x)._fields == ("sign", "logabsdet")
    for fn in (LA.inv, LA.det, LA.cholesky, LA.pinv, LA.svdvals, LA.matrix_exp):
        arg = x @ x.mT + 3 * ng.eye(3) if fn is LA.cholesky else x
        assert fn(arg).dtype is ng.float32
    r = LA.qr(x, mode="r")
    assert r.Q.shape == (0,)
    np.testing.assert_allclose(np.abs(r.R.numpy()), np.abs(TL.qr(torch.tensor(a)).R.numpy()),
                               atol=1e-5)


def _same_error(fn, *arrays, cls=RuntimeError):
    """numgrad raises what torch raises: the class (LinAlgError for LinAlgError) and text."""
    with pytest.raises(Exception) as want:
        fn(TL, *[torch.tensor(a) for a in arrays])
    with pytest.raises(cls) as got:
        fn(LA, *[ng.tensor(a) for a in arrays])
    assert str(got.value) == str(want.value)
    linalg_error = isinstance(want.value, TL.LinAlgError)
    assert isinstance(got.value, LA.LinAlgError) == linalg_error
    return got.value


SINGULAR = np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]])
NOT_PD = np.array([[[1., 0.], [0., 1.]], [[1., 0.], [0., -1.]]])


@pytest.mark.parametrize("fn, arrays", [
    (lambda m, a: m.inv(a), [SINGULAR]),
    (lambda m, a: m.inv(a), [np.stack([np.eye(3), SINGULAR])]),
    (lambda m, a: m.inv(a), [np.zeros((3, 3))]),
    (lambda m, a: m.solve(a, a), [np.stack([SINGULAR, np.eye(3)])]),
    (lambda m, a: m.cholesky(a), [NOT_PD]),
    (lambda m, a: m.cholesky(a), [NOT_PD[1]]),
    (lambda m, a: m.inv(a), [np.ones((2, 3))]),
    (lambda m, a: m.det(a), [np.ones(3)]),
    (lambda m, a: m.eigh(a), [np.ones((2, 3))]),
    (lambda m, a: m.svd(a), [np.ones(3)]),
    (lambda m, a: m.qr(a, mode="x"), [np.ones((2, 2))]),
    (lambda m, a: m.eigh(a, UPLO="X"), [np.ones((2, 2))]),
    (lambda m, a: m.inv(a), [np.ones((3, 3), np.int64)]),
    (lambda m, a: m.cholesky(a), [np.ones((3, 3), np.int64)]),
    (lambda m, a, b: m.solve(a, b), [np.eye(3), np.ones(4)]),
    (lambda m, a, b: m.solve_triangular(a, b, upper=True), [np.eye(3), np.ones(3)]),
    (lambda m, a, b: m.solve_triangular(a, b, upper=True, left=False),
     [np.eye(3), np.ones((3, 2))]),
    (lambda m, a, b: m.lstsq(a, b), [np.ones((5, 3)), np.ones((4, 2))]),
    (lambda m, a, b: m.lstsq(a, b, driver="foo"), [np.ones((5, 3)), np.ones((5, 2))]),
    (lambda m, a: m.matrix_power(a, 2), [np.ones((2, 3))]),
    (lambda m, a: m.matrix_exp(a), [np.ones((2, 3))]),
    (lambda m, a: m.matrix_exp(a), [np.ones((3, 3), np.int64)]),
])
def test_errors_match_torch(fn, arrays):
    _same_error(fn, *arrays)


def test_eigh_of_integers_is_not_implemented():
    with pytest.raises(NotImplementedError, match="linalg_eigh_cpu"):
        LA.eigh(ng.ones(2, 2, dtype=ng.int64))


@pytest.mark.parametrize("fn, a", [
    (lambda m, a: m.qr(a, mode="r").R.sum(), RNG.standard_normal((3, 2))),
    (lambda m, a: m.qr(a, mode="complete").Q.sum(), RNG.standard_normal((3, 2))),
])
def test_backward_errors_match_torch(fn, a):
    t = torch.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError) as want:
        fn(TL, t).backward()
    x = ng.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError) as got:
        fn(LA, x).backward()
    assert str(got.value) == str(want.value)


def test_lstsq_fields_per_driver():
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 2))
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        got = LA.lstsq(ng.tensor(a), ng.tensor(b), driver=driver)
        want = TL.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        assert len(got) == len(want)
        for field in got._fields:
            g, w = getattr(got, field), getattr(want, field)
            assert tuple(g.shape) == tuple(w.shape), driver
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-10)


def test_matrix_rank_and_inv_ex():
    a = np.stack([np.eye(3), SINGULAR])
    got = LA.matrix_rank(ng.tensor(a))
    assert got.dtype is ng.int64 and got.tolist() == TL.matrix_rank(torch.tensor(a)).tolist()
    for kw in ({"atol": 1.5}, {"rtol": 0.2}, {"atol": 0.5, "rtol": 0.01}):
        assert (LA.matrix_rank(ng.tensor(a), **kw).tolist()
                == TL.matrix_rank(torch.tensor(a), **kw).tolist()), kw
    inv, info = LA.inv_ex(ng.tensor(a))
    assert info.dtype is ng.int32
    assert info.tolist() == TL.inv_ex(torch.tensor(a)).info.tolist()
    np.testing.assert_allclose(inv[0].numpy(), np.eye(3))
    with pytest.raises(LA.LinAlgError):
        LA.inv_ex(ng.tensor(a), check_errors=True)


@pytest.mark.parametrize("a, order", [
    (SINGULAR, 2), (np.stack([SINGULAR, 2 * np.eye(3)]), 2), (np.eye(3), 2),
    (np.zeros((3, 3)), 1), (np.diag([1.0, 0.0, 0.0]), 1)])
def test_det_gradient_of_singular_matrices_matches_torch(a, order):
    # PyTorch's cofactor matrix where det(A) == 0 (from an SVD), not an error or NaN; the
    # second order too where the rank is n - 1 (below that an SVD's repeated zeros give NaN).
    x, t = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    gx, = ng.autograd.grad(LA.det(x).sum(), x, create_graph=True)
    gt, = torch.autograd.grad(TL.det(t).sum(), t, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gt.detach().numpy(), atol=1e-12)
    if order == 2:
        (gx ** 2).sum().backward()
        (gt ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-10)


ORTHOGONAL = np.linalg.qr(RNG.standard_normal((3, 3)))[0]


@pytest.mark.parametrize("a", [np.eye(3), ORTHOGONAL, np.diag([2.0, 2.0, 1.0]), np.ones((4, 2))])
@pytest.mark.parametrize("fn", [
    lambda m, a: m.svdvals(a).sum(), lambda m, a: m.matrix_norm(a, "nuc"),
    lambda m, a: m.matrix_norm(a, 2),
    lambda m, a: (m.eigvalsh(a @ a.mT) ** 2).sum() + m.eigvalsh(a.mT @ a).sum()])
def test_values_only_gradients_at_repeated_values(a, fn):
    # Only the singular/eigen values are used: PyTorch's gradient exists at repeated values
    # (no division by their zero gaps), and so does numgrad's.
    _check(lambda x: fn(LA, x), lambda t: fn(TL, t), a)


@pytest.mark.parametrize("a, upper", [
    (np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 1.0, 3.0]]), False),
    (np.array([[0.0, 1.0], [0.0, 1.0]]), True)])
def test_solve_triangular_zero_diagonal_gives_torchs_inf_nan(a, upper):
    b = np.arange(1.0, a.shape[0] + 1)[:, None]
    got = LA.solve_triangular(ng.tensor(a), ng.tensor(b), upper=upper).numpy()
    want = TL.solve_triangular(torch.tensor(a), torch.tensor(b), upper=upper).numpy()
    np.testing.assert_array_equal(got, want)

"""The composites of ops.small_math against PyTorch: values (infinities, NaN, signed zeros,
integers), dtypes, gradients (rounding's is 0), error texts, and @ng.jit agreeing with eager."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

SPECIAL = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 2.5, -1.5, 0.49999999999999994,
                    -7.0, 1e300, 3.75])
UNARY = ["floor", "ceil", "trunc", "frac", "square", "reciprocal", "rsqrt", "isnan", "isinf",
         "isfinite"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_unary_matches_torch(name, dtype):
    with np.errstate(all="ignore"):
        a = (SPECIAL if dtype != "int64" else np.array([-3, 0, 2, 7])).astype(dtype)
        try:
            want = getattr(torch, name)(torch.tensor(a))
        except Exception as exc:  # (frac of integers)
            with pytest.raises(type(exc)) as got:
                getattr(ng, name)(ng.tensor(a))
            assert str(got.value) == str(exc)
            return
    got = getattr(ng, name)(ng.tensor(a))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))
    np.testing.assert_array_equal(getattr(ng.tensor(a), name)().numpy(), want.numpy())


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "frac", "square", "reciprocal",
                                  "rsqrt"])
def test_unary_gradients_match_torch(name):
    a = np.array([0.3, 2.5, 1.75, 4.0])
    x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    getattr(ng, name)(x).sum().backward()
    getattr(torch, name)(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)


def test_binary_and_ternary_match_torch():
    r = np.random.default_rng(0)
    a, b, c = (r.standard_normal(4) for _ in range(3))
    ns = [ng.tensor(v, requires_grad=True) for v in (a, b, c)]
    ts = [torch.tensor(v, requires_grad=True) for v in (a, b, c)]
    for fn in [lambda L, x, y, z: L.lerp(x, y, 0.3), lambda L, x, y, z: L.lerp(x, y, z),
               lambda L, x, y, z: L.addcmul(x, y, z, value=0.5),
               lambda L, x, y, z: L.addcdiv(x, y, z, value=-2),
               lambda L, x, y, z: L.dot(x, y) * z, lambda L, x, y, z: L.outer(x, y) @ z]:
        for t in ns + ts:
            t.grad = None
        got, want = fn(ng, *ns), fn(torch, *ts)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-14)
        (got * got).sum().backward()
        (want * want).sum().backward()
        for n, t in zip(ns, ts):
            assert (n.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), rtol=1e-13)


def test_errors_and_helpers_match_torch():
    cases = [("dot", (np.ones((2, 2)), np.ones(2))), ("dot", (np.ones(2), np.ones(3))),
             ("dot", (np.ones(2, np.float32), np.ones(2))),
             ("addcdiv", (np.ones(2), np.ones(2, np.int64), np.ones(2, np.int64)))]
    for name, arrays in cases:
        with pytest.raises(RuntimeError) as want:
            getattr(torch, name)(*map(torch.tensor, arrays))
        with pytest.raises(RuntimeError) as got:
            getattr(ng, name)(*map(ng.tensor, arrays))
        assert str(got.value) == str(want.value)
    assert ng.numel(ng.zeros(2, 3)) == torch.numel(torch.zeros(2, 3))
    assert ng.is_tensor(ng.zeros(1)) and not ng.is_tensor(np.zeros(1))
    assert not ng.detach(ng.ones(2, requires_grad=True)).requires_grad


def test_jit_agrees_with_eager():
    def f(x, y):
        return (ng.floor(x * 3) + ng.frac(y) * ng.rsqrt(y * y + 1) + ng.lerp(x, y, 0.25)
                + ng.where(ng.isfinite(x / y), ng.square(x), 0.0)).sum()

    a, b = np.array([0.3, -1.25, 2.0]), np.array([1.5, 0.0, -2.75])
    xe, ye = (ng.tensor(v, requires_grad=True) for v in (a, b))
    xj, yj = (ng.tensor(v, requires_grad=True) for v in (a, b))
    with np.errstate(all="ignore"):
        want = f(xe, ye)
        want.backward()
    got = ng.jit(f)(xj, yj)
    got.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-14)
    np.testing.assert_allclose(xj.grad.numpy(), xe.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(yj.grad.numpy(), ye.grad.numpy(), rtol=1e-14)

"""ng.autograd.forward_ad: the tangent of each primitive (written linear rules and the
transposed vjps) against torch's forward AD, the dual API and its error texts, and forward
mode under @ng.jit."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
import numgrad.autograd.forward_ad as fwad  # noqa: E402
import torch.autograd.forward_ad as tfwad  # noqa: E402
from helpers import assert_same_tree  # noqa: E402

RNG = np.random.default_rng(1)
X = RNG.uniform(0.2, 1.5, (2, 3))
T = RNG.standard_normal((2, 3))
W = RNG.standard_normal((3, 2))


def lib(t):
    return torch if isinstance(t, torch.Tensor) else ng


# One function per group of primitives (names from the registry), x of shape (2, 3).
CASES = {
    "unary": lambda x: x.exp() + x.log() + x.sqrt() + x.tanh() + x.sin() * x.cos()
    + x.sigmoid() + x.relu() + x.abs() + x.erf() + x.log1p() + x.expm1() - x.neg(),
    "binary": lambda x: x * x[0] / (x + 2) - x ** 3 + x ** x + lib(x).maximum(x, x[1])
    + lib(x).minimum(x, 0.5 * x[0]) + lib(x).hypot(x, x * 2) + x.clamp(0.4, 1.0)
    + x.remainder(0.3) + lib(x).fmod(x, 0.7),
    "layout": lambda x: x.T.reshape(3, 2).permute(1, 0).expand(2, 2, 3).sum(0)
    + x.clone(),
    "reductions": lambda x: x.sum(1, keepdim=True) * x.mean(0) + x.amax(1, keepdim=True)
    + x.amin(0) + x.prod(1, keepdim=True) + x.cumsum(1),
    "indexing": lambda x: lib(x).cat([x[:, 1:], x[:, :1] * 2], dim=1)
    + lib(x).stack([x[0], x[1]]) + x[:, [2, 0, 1]] + x.gather(1, lib(x).tensor([[0, 1, 2],
                                                                                [2, 1, 0]])),
    "linalg": lambda x: x @ lib(x).tensor(W) @ x[:, :2].T,
    "where_detach": lambda x: lib(x).where(x > 0.8, x * x, x.detach() * x),
    "softmax_max": lambda x: lib(x).nn.functional.log_softmax(x, dim=1)
    + x.max(dim=1).values[:, None],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangent_matches_torch(name):
    fn = CASES[name]
    with fwad.dual_level():
        got = fwad.unpack_dual(fn(fwad.make_dual(ng.tensor(X), ng.tensor(T))))
    with tfwad.dual_level():
        want = tfwad.unpack_dual(fn(tfwad.make_dual(torch.tensor(X), torch.tensor(T))))
    assert_same_tree(tuple(got), tuple(want), rtol=1e-9, atol=1e-12)


def test_tangent_matches_finite_differences():
    fn = CASES["binary"]
    with fwad.dual_level():
        t = fwad.unpack_dual(fn(fwad.make_dual(ng.tensor(X), ng.tensor(T)))).tangent.numpy()
    eps = 1e-6
    fd = (fn(ng.tensor(X + eps * T)).numpy() - fn(ng.tensor(X - eps * T)).numpy()) / (2 * eps)
    np.testing.assert_allclose(t, fd, rtol=1e-6, atol=1e-7)


def test_dual_api():
    x = ng.tensor(X)
    with fwad.dual_level():
        d = fwad.make_dual(x, ng.tensor(T))
        u = fwad.unpack_dual(d)
        assert type(u).__name__ == "UnpackedDualTensor" and u._fields == ("primal", "tangent")
        np.testing.assert_array_equal(u.primal.numpy(), X)
        assert fwad.unpack_dual(x).tangent is None
        y = d * 2
        assert fwad.unpack_dual(y > 1).tangent is None      # no tangent for a bool result
    assert fwad.unpack_dual(y).tangent is None              # dropped when the level exits
    np.testing.assert_array_equal(y.numpy(), X * 2)


def test_dual_errors_match_torch():
    for m, fw in ((ng, fwad), (torch, tfwad)):
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(m.ones(2), m.ones(2))
        with fw.dual_level():
            with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given "
                                                   r"forward gradient is of size \[3\]"):
                fw.make_dual(m.ones(2), m.ones(3))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                fw.make_dual(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64))
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                with fw.dual_level():
                    pass


def test_reverse_history_kept():
    x = ng.tensor(X, requires_grad=True)
    with fwad.dual_level():
        d = fwad.make_dual(x, ng.tensor(T))
        (d * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full_like(X, 3.0))


@ng.jit
def jit_tangent(x, t):
    with fwad.dual_level():
        return fwad.unpack_dual(CASES["unary"](fwad.make_dual(x, t))).tangent


def test_under_jit():
    with tfwad.dual_level():
        want = tfwad.unpack_dual(CASES["unary"](tfwad.make_dual(torch.tensor(X),
                                                               torch.tensor(T)))).tangent
    assert_same_tree(jit_tangent(ng.tensor(X), ng.tensor(T)), want, rtol=1e-9)

"""torch.dist and torch.bernoulli / Tensor.bernoulli_: values, gradients and errors as torch's."""
import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

INF = float("inf")


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, INF, -INF])
def test_dist_value_and_gradient_match_torch(p):
    a = np.array([[1.0, -2.0, 0.0], [0.5, 0.0, 3.0]])
    b = np.array([0.0, 0.0, 0.0])
    x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = ng.dist(x, ng.tensor(b), p), torch.dist(tx, torch.tensor(b), p)
    np.testing.assert_allclose(y.item(), ty.item(), rtol=1e-12)
    y.backward()
    ty.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert y.grad_fn.name() == ty.grad_fn.name()


def test_dist_at_zero_distance_has_a_zero_gradient_and_p0_counts():
    x = ng.zeros(3, requires_grad=True)
    ng.dist(x, ng.zeros(3)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    assert ng.tensor([1.0, 0.0, 2.0]).dist(ng.zeros(3), 0).item() == 2.0


@ng.jit
def _dist_jit(a, b):
    return ng.dist(a, b, 3)


def test_dist_under_jit_agrees_with_eager():
    a, b = ng.randn(4), ng.randn(4)
    np.testing.assert_allclose(_dist_jit(a, b).item(), ng.dist(a, b, 3).item(), rtol=1e-6)


@pytest.mark.parametrize("make", [lambda L: (L.ones(2), L.ones(3)),
                                  lambda L: (L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64))])
def test_dist_errors_match_torch(make):
    with pytest.raises(RuntimeError) as want:
        torch.dist(*make(torch))
    with pytest.raises(RuntimeError) as got:
        ng.dist(*make(ng))
    assert str(got.value) == str(want.value)


def test_bernoulli_draws_follow_the_probabilities_and_the_seed():
    ng.manual_seed(0)
    probs = ng.tensor(np.linspace(0.0, 1.0, 5)).expand(4000, 5)
    y = ng.bernoulli(probs)
    assert y.dtype == ng.float64 and set(np.unique(y.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(y.numpy().mean(0), np.linspace(0, 1, 5), atol=0.03)
    ng.manual_seed(0)
    np.testing.assert_array_equal(ng.bernoulli(probs).numpy(), y.numpy())
    assert ng.ones(3).bernoulli(0.0).sum().item() == 0.0
    assert ng.zeros(3).bernoulli_(1.0).sum().item() == 3.0
    t = ng.zeros(3)
    assert t.bernoulli_(ng.ones(3)) is t and t.sum().item() == 3.0


def test_bernoulli_gradient_is_zero_as_torchs():
    for lib in (ng, torch):
        x = lib.full((2, 3), 0.5, requires_grad=True)
        y = lib.bernoulli(x)
        assert y.grad_fn.name() == "BernoulliBackward0"
        y.sum().backward()
        assert (x.grad == 0).all()


@pytest.mark.parametrize("args", [lambda L: (L.tensor([1.5]),), lambda L: (L.tensor([-0.1]),),
                                  lambda L: (L.ones(2), 2.0),
                                  lambda L: (L.ones(2, dtype=L.int64),)])
def test_bernoulli_errors_match_torch(args):
    with pytest.raises(Exception) as want:
        torch.bernoulli(*args(torch))
    with pytest.raises(type(want.value)) as got:
        ng.bernoulli(*args(ng))
    assert str(want.value).startswith(str(got.value))


@ng.jit
def _drawn(x):
    return ng.bernoulli(x) * 2


def test_bernoulli_under_jit_is_refused_as_every_draw_is():
    with pytest.raises(ng.TracingError, match="draws from numgrad's random generator"):
        _drawn(ng.full((3,), 0.5))

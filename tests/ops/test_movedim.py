"""movedim / moveaxis against torch: shapes, values, errors, gradient, and under @ng.jit."""
import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

CASES = [(0, 2), (-1, 0), ((0, 1), (2, 0)), ([2, 0], [0, 1]), ((), ())]


@pytest.mark.parametrize("src,dst", CASES)
def test_movedim_matches_torch(src, dst):
    a = np.arange(24.0).reshape(2, 3, 4)
    want = torch.movedim(torch.tensor(a), src, dst)
    for got in (ng.movedim(ng.tensor(a), src, dst), ng.tensor(a).moveaxis(src, dst)):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_movedim_gradient_is_torchs():
    a = np.random.default_rng(0).normal(size=(2, 3, 4))
    w = np.random.default_rng(1).normal(size=(4, 2, 3))
    x = ng.tensor(a, requires_grad=True)
    (x.movedim(-1, 0) * ng.tensor(w)).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    (tx.movedim(-1, 0) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    assert x.movedim(0, 1).grad_fn.name() == tx.movedim(0, 1).grad_fn.name()


@ng.jit
def _moved(x):
    return ng.movedim(x, (0, 1), (2, 0)) * 2.0


def test_movedim_under_jit_agrees_with_eager():
    x = ng.randn(2, 3, 4)
    np.testing.assert_array_equal(_moved(x).numpy(), (ng.movedim(x, (0, 1), (2, 0)) * 2.0).numpy())


@pytest.mark.parametrize("args", [((0, 0), (1, 2)), (3, 0), ((0, 1), (1,))])
def test_movedim_errors_match_torch(args):
    with pytest.raises(Exception) as want:
        torch.movedim(torch.zeros(2, 3, 4), *args)
    with pytest.raises(type(want.value)) as got:
        ng.movedim(ng.zeros(2, 3, 4), *args)
    assert str(got.value) == str(want.value)

"""masked_select, nonzero and argwhere against PyTorch: values, dtypes, shapes (0-d and
empty results included), the gradient of masked_select through broadcasting, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

A = np.array([[0.5, -1.0, 0.0], [2.0, 0.0, -3.0]])


@pytest.mark.parametrize("a", [A, A[0], np.zeros((2, 0)), np.array(3.0), np.array(0.0)],
                         ids=["2d", "1d", "empty", "0d", "0d-zero"])
def test_nonzero_and_argwhere_match_torch(a):
    x, tx = ng.tensor(a), torch.tensor(a)
    for got, want in [(ng.nonzero(x), torch.nonzero(tx)), (x.argwhere(), tx.argwhere())]:
        assert got.dtype == ng.int64 and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got, want = x.nonzero(as_tuple=True), tx.nonzero(as_tuple=True)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("mshape", [(2, 3), (3,), (2, 1)])
def test_masked_select_broadcasts_and_its_gradient_scatters(mshape):
    m = np.random.default_rng(0).random(mshape) > 0.4
    x = ng.tensor(A[0] if mshape == (2, 1) else A, requires_grad=True)
    tx = torch.tensor(A[0] if mshape == (2, 1) else A, requires_grad=True)
    y, ty = ng.masked_select(x, ng.tensor(m)), torch.masked_select(tx, torch.tensor(m))
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    w = np.arange(1.0, 1 + ty.numel())
    (y * ng.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(x.detach().masked_select(ng.tensor(m)).numpy(), ty.detach())


def test_masked_select_errors_match_torch():
    for mask in ([1, 0, 1], [True, False]):
        with pytest.raises(RuntimeError) as want:
            torch.masked_select(torch.tensor(A[0]), torch.tensor(mask))
        with pytest.raises(RuntimeError) as got:
            ng.masked_select(ng.tensor(A[0]), ng.tensor(mask))
        assert str(got.value) == str(want.value)
    with pytest.raises(TypeError, match="must be Tensor"):
        ng.masked_select(A, ng.tensor(A > 0))


@pytest.mark.parametrize("kw", [{}, dict(return_inverse=True), dict(return_counts=True),
                                dict(return_inverse=True, return_counts=True, sorted=False)])
@pytest.mark.parametrize("a", [np.array([3, 1, 2, 1, 3, 3]), np.array([[1.0, 2.0], [1.0, 2.0]]),
                               np.array([1.0, np.nan, np.nan, 1.0]), np.zeros(0)],
                         ids=["int", "2d", "nan", "empty"])
def test_unique_matches_torch(a, kw):
    got, want = ng.unique(ng.tensor(a), **kw), torch.unique(torch.tensor(a), **kw)
    got, want = (got, want) if kw else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.dtype.name == str(w.dtype).split(".")[-1] and tuple(g.shape) == tuple(w.shape)
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_unique_along_a_dim_matches_torch():
    a = np.array([[1, 2], [1, 2], [0, 5]])
    for g, w in zip(ng.tensor(a).unique(dim=0, return_inverse=True, return_counts=True),
                    torch.tensor(a).unique(dim=0, return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(g.numpy(), w.numpy())

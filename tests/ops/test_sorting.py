"""sort, argsort and topk against torch where the op table's random inputs never go:
ties, NaN, signed zeros and infinities, their gradients, errors, and @ng.jit.

The table rows (tests/ops/test_op_table.py) cover values, gradients and second order on
random inputs, and the jit sweep runs them compiled.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402

NAN, INF = float("nan"), float("inf")
SPECIAL = [3.0, 1.0, NAN, 1.0, -0.0, 0.0, INF, -INF, 3.0, NAN, -2.0]
TIES = [[2.0, 5.0, 5.0, 1.0, 5.0, 2.0], [0.0, 0.0, -1.0, 0.0, 7.0, 7.0]]


def _same_bits(got, want):
    """Values equal bit for bit: NaN where torch has NaN, and -0.0 where it has -0.0."""
    g = np.asarray(got.detach().numpy())
    w = want.detach().numpy()
    np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    np.testing.assert_array_equal(g, w)  # NaN == NaN for assert_array_equal


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("stable", [False, True])
def test_sort_special_values_match_torch(dtype, descending, stable):
    a = np.array(SPECIAL, dtype)
    got = ng.sort(ng.tensor(a), descending=descending, stable=stable)
    want = torch.sort(torch.tensor(a), descending=descending, stable=stable)
    _same_bits(got.values, want.values)
    assert_close(got.indices, want.indices)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_ties_match_torch(dim, descending):
    a = np.array(TIES, np.float32)
    got = ng.tensor(a).sort(dim=dim, descending=descending)
    want = torch.tensor(a).sort(dim=dim, descending=descending)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])
    assert_close(ng.argsort(ng.tensor(a), dim, descending),
                 torch.argsort(torch.tensor(a), dim, descending))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_sort_of_integers_and_bools_matches_torch(dtype):
    a = (np.array(TIES) > 1.5) if dtype == "bool" else np.array(TIES, np.int64)
    for descending in (False, True):
        got = ng.tensor(a).sort(descending=descending)
        want = torch.tensor(a).sort(descending=descending)
        assert got.values.dtype == ng.tensor(a).dtype
        assert_close(got.values, want.values)
        assert_close(got.indices, want.indices)


def test_sort_gradient_with_ties_goes_to_each_sorted_position():
    data = [[1.0, 1.0, 1.0, 0.0], [2.0, NAN, 2.0, -0.0]]
    g = np.arange(8.0).reshape(2, 4)
    x, tx = ng.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    ng.sort(x, descending=True)[0].backward(ng.tensor(g, dtype=ng.float32))
    torch.sort(tx, descending=True)[0].backward(torch.tensor(g, dtype=torch.float32))
    assert_close(x.grad, tx.grad)


def test_topk_values_match_torch_on_ties_and_nan():
    a = np.array(TIES + [[NAN, 1.0, NAN, INF, -INF, 0.0]], np.float32)
    for k in range(7):
        for largest in (True, False):
            got = ng.topk(ng.tensor(a), k, largest=largest)
            want = torch.topk(torch.tensor(a), k, largest=largest)
            _same_bits(got.values, want.values)
            # PyTorch leaves which of several tied entries it picks to its kernel; ours
            # are the first in input order, and they hold the values reported.
            picked = np.take_along_axis(a, got.indices.numpy(), axis=1)
            np.testing.assert_array_equal(picked, got.values.numpy())


def test_topk_gradient_scatters_to_the_picked_indices():
    a = np.array([[0.3, -1.0, 2.0, 0.7], [1.5, 0.2, -0.4, 1.1]], np.float64)
    g = np.array([[1.0, -2.0], [0.5, 3.0]])
    for largest in (True, False):
        x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ng.topk(x, 2, dim=1, largest=largest).values.backward(ng.tensor(g))
        torch.topk(tx, 2, dim=1, largest=largest).values.backward(torch.tensor(g))
        assert_close(x.grad, tx.grad)
    x = ng.tensor([1.0, 1.0, 1.0, 0.0], requires_grad=True)
    v, i = ng.topk(x, 2)
    v.backward(ng.tensor([1.0, 2.0]))
    want = np.zeros(4)
    want[i.numpy()] = [1.0, 2.0]
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_sorted_false_returns_the_same_entries_as_torch():
    a = np.array([[0.3, -1.0, 2.0, 0.7, 5.0]], np.float32)
    got = ng.topk(ng.tensor(a), 3, sorted=False)
    want = torch.topk(torch.tensor(a), 3, sorted=False)
    assert sorted(got.indices.numpy().ravel()) == sorted(want.indices.numpy().ravel())


def test_zero_dim_sort_and_topk_match_torch():
    for fn in (lambda m, x: m.sort(x), lambda m, x: m.topk(x, 1), lambda m, x: m.topk(x, 0)):
        got, want = fn(ng, ng.tensor(2.5)), fn(torch, torch.tensor(2.5))
        assert got[0].shape == tuple(want[0].shape) and got[1].shape == tuple(want[1].shape)
        assert_close(got[0], want[0])
        assert_close(got[1], want[1])
    assert_close(ng.argsort(ng.tensor(2.5)), torch.argsort(torch.tensor(2.5)))


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("call", [
    lambda m: m.topk(m.ones(3), 4),
    lambda m: m.topk(m.ones(3), -1),
    lambda m: m.topk(m.ones(3), 2, dim=1),
    lambda m: m.sort(m.ones(2, 3), dim=2),
    lambda m: m.argsort(m.ones(2, 3), dim=-3),
    lambda m: m.sort([1.0, 2.0]),
    lambda m: m.topk([1.0, 2.0], 1),
    lambda m: m.argsort([1.0, 2.0]),
], ids=["k_too_big", "k_negative", "topk_dim", "sort_dim", "argsort_dim", "sort_list",
        "topk_list", "argsort_list"])
def test_errors_match_torch(call):
    assert _error(lambda: call(ng)) == _error(lambda: call(torch))


def test_sort_results_have_attribute_access_and_indices_carry_no_grad():
    x = ng.tensor([3.0, 1.0, 2.0], requires_grad=True)
    out = x.sort()
    values, indices = out
    assert out.values is values and out.indices is indices
    assert values.requires_grad and not indices.requires_grad
    assert indices.dtype == ng.int64 and indices.grad_fn is None
    assert not x.argsort().requires_grad


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_sort_topk_under_jit_with_special_values(backend):
    def f(x):
        v, i = x.sort(dim=1, descending=True)
        t, j = x.topk(2, dim=0, largest=False)
        return v * 2, i, t, j, x.argsort(dim=0)

    cf = ng.jit(f, backend=backend)
    a = np.array([[NAN, 1.0, -0.0, 3.0], [0.0, INF, 1.0, 3.0], [-INF, 1.0, 2.0, NAN]],
                 np.float32)
    got, eager = cf(ng.tensor(a)), f(ng.tensor(a))
    ta = torch.tensor(a)
    v, i = ta.sort(dim=1, descending=True)
    t, j = ta.topk(2, dim=0, largest=False)
    want = (v * 2, i, t, j, ta.argsort(dim=0))
    for g, e, w in zip(got, eager, want):
        _same_bits(g, w)
        _same_bits(g, e.detach())

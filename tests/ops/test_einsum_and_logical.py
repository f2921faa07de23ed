"""einsum, bmm, all, any and equal against torch beyond the op table's random rows:
error texts, special values, empty tensors, and @ng.jit."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402

NAN, INF = float("nan"), float("inf")


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _same_error(call):
    assert _error(lambda: call(ng)) == _error(lambda: call(torch))


# ----------------------------------------------------------------------------- einsum
EINSUM_ERRORS = {
    "fewer_operands": ("ij,jk", [(2, 3)]),
    "more_operands": ("ij", [(2, 3), (2,)]),
    "too_many_subscripts": ("ijk", [(2, 3)]),
    "too_few_subscripts": ("i->", [(2, 2)]),
    "size_mismatch": ("ij,jk->ik", [(2, 3), (4, 5)]),
    "repeated_size_mismatch": ("ii->i", [(2, 3)]),
    "unknown_output": ("ij->iz", [(2, 3)]),
    "repeated_output": ("ij->ii", [(2, 3)]),
    "bad_character": ("i1->i", [(2, 3)]),
    "lone_dot": ("i..i", [(2, 2)]),
    "two_ellipses": ("i......", [(2, 2)]),
    "two_arrows": ("ij->i->j", [(2, 3)]),
    "ellipsis_mismatch": ("...i,...i", [(2, 2), (3, 2)]),
}


@pytest.mark.parametrize("eq,shapes", EINSUM_ERRORS.values(), ids=EINSUM_ERRORS.keys())
def test_einsum_errors_match_torch(eq, shapes):
    _same_error(lambda m: m.einsum(eq, *[m.ones(*s) for s in shapes]))


def test_einsum_refuses_mixed_dtypes_and_non_tensors_as_torch():
    _same_error(lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(3, 5, dtype=m.float64)))
    _same_error(lambda m: m.einsum("i,i", m.ones(2), 3.0))


def test_einsum_special_values_and_broadcast_match_torch():
    a = np.array([[NAN, 1.0, -0.0], [INF, -INF, 2.0]], np.float32)
    b = np.array([[0.0, 1.0, 2.0]], np.float32)
    for eq in ("ij,kj->ik", "ij,ij->ij", "ij,ij->i", "ij,kj"):
        assert_close(ng.einsum(eq, ng.tensor(a), ng.tensor(b)),
                     torch.einsum(eq, torch.tensor(a), torch.tensor(b)))
    # a size-1 dim broadcasts against a contracted subscript, as PyTorch allows
    assert_close(ng.einsum("ij,j->i", ng.tensor(a[:, :1] * 0 + 1), ng.ones(1)),
                 torch.einsum("ij,j->i", torch.tensor(a[:, :1] * 0 + 1), torch.ones(1)))


def test_einsum_gradient_of_repeated_operand_and_diagonal():
    a = np.random.default_rng(0).standard_normal((3, 3))
    for eq, n in (("ij,jk,ki->", 3), ("ii,ij->j", 2), ("ij,ij->", 2)):
        x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ng.einsum(eq, *[x] * n).sum().backward()
        torch.einsum(eq, *[tx] * n).sum().backward()
        assert_close(x.grad, tx.grad)


def test_einsum_of_int64_matches_torch():
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4) - 5
    for eq in ("ij,jk->ik", "ij,ij->", "ii->i"):
        ops = (a, b) if eq == "ij,jk->ik" else (a[:, :2],) * (eq.count(",") + 1)
        got = ng.einsum(eq, *[ng.tensor(o) for o in ops])
        assert got.dtype == ng.int64
        assert_close(got, torch.einsum(eq, *[torch.tensor(o) for o in ops]))


def test_einsum_under_jit_compiles_once_and_matches_torch():
    def f(x, y):
        return ng.einsum("bi,ij,bj->b", x, y, x) + ng.einsum("ii", y)

    cf = ng.jit(f)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    x, y = ng.tensor(a, requires_grad=True), ng.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out = cf(x, y)
    tout = torch.einsum("bi,ij,bj->b", tx, ty, tx) + torch.einsum("ii", ty)
    assert_close(out, tout.detach())
    out.sum().backward()
    tout.sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)
    cf(x, y)
    assert cf.stats.traces == 1


# ----------------------------------------------------------------------------- bmm
@pytest.mark.parametrize("call", [
    lambda m: m.bmm(m.ones(3, 4), m.ones(2, 4, 5)),
    lambda m: m.bmm(m.ones(2, 3, 4), m.ones(4, 5)),
    lambda m: m.bmm(m.ones(2, 3, 4), m.ones(3, 4, 5)),
    lambda m: m.bmm(m.ones(2, 3, 4), m.ones(2, 3, 5)),
    lambda m: m.bmm(m.ones(2, 3, 4), m.ones(2, 4, 5, dtype=m.float64)),
    lambda m: m.bmm(m.ones(2, 3, 4), 3),
    lambda m: m.ones(2, 3, 4).bmm(m.ones(2, 3, 4)),
], ids=["batch1_rank", "batch2_rank", "batch_size", "inner_size", "dtype", "not_tensor",
        "method_inner"])
def test_bmm_errors_match_torch(call):
    _same_error(call)


def test_bmm_node_name_matches_torch():
    x = ng.ones(2, 3, 4, requires_grad=True)
    assert ng.bmm(x, ng.ones(2, 4, 5)).grad_fn.name() == \
        torch.bmm(torch.ones(2, 3, 4, requires_grad=True), torch.ones(2, 4, 5)).grad_fn.name()


# ----------------------------------------------------------------------------- all / any
LOGIC = [
    [[1.0, NAN, 0.0], [2.0, 3.0, 4.0]],
    [[-0.0, 0.0, 0.0], [INF, -INF, NAN]],
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
]


@pytest.mark.parametrize("data", LOGIC, ids=["nan_is_true", "signed_zero_is_false", "zeros"])
@pytest.mark.parametrize("fn", ["all", "any"])
def test_all_any_special_values_match_torch(data, fn):
    x, tx = ng.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    for kw in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": (0, 1)}):
        got, want = getattr(x, fn)(**kw), getattr(tx, fn)(**kw)
        assert got.dtype == ng.bool and not got.requires_grad
        assert_close(got, want)


@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_all_any_of_empty_tensors_match_torch(shape):
    for fn in ("all", "any"):
        assert_close(getattr(ng, fn)(ng.zeros(*shape)), getattr(torch, fn)(torch.zeros(*shape)))
        assert_close(getattr(ng, fn)(ng.zeros(*shape), dim=0),
                     getattr(torch, fn)(torch.zeros(*shape), dim=0))


def test_all_any_dim_errors_match_torch():
    _same_error(lambda m: m.ones(2, 3).all(dim=2))
    _same_error(lambda m: m.ones(2, 3).any(dim=(0, 0)))


def test_all_any_fuse_under_jit():
    def f(x):
        return (x > 0).all(dim=1), x.any(dim=0, keepdim=True), (x != x).any()

    cf = ng.jit(f)
    a = np.array([[1.0, NAN, 2.0], [0.0, -0.0, 3.0]], np.float32)
    for g, w in zip(cf(ng.tensor(a)), f(ng.tensor(a))):
        assert g.dtype == ng.bool
        assert_close(g, w)


# ----------------------------------------------------------------------------- equal
@pytest.mark.parametrize("a,b", [
    ([1.0, 2.0], [1.0, 2.0]),
    ([1.0, 2.0], [1.0, 3.0]),
    ([NAN], [NAN]),
    ([0.0], [-0.0]),
    ([INF, -INF], [INF, -INF]),
    ([1.0, 2.0], [[1.0, 2.0]]),
    ([1.0, 2.0], [1.0, 2.0, 3.0]),
    ([], []),
], ids=["same", "differs", "nan", "signed_zero", "inf", "other_rank", "other_size", "empty"])
def test_equal_matches_torch(a, b):
    assert ng.equal(ng.tensor(a), ng.tensor(b)) is torch.equal(torch.tensor(a), torch.tensor(b))
    assert ng.tensor(a).equal(ng.tensor(b)) is torch.tensor(a).equal(torch.tensor(b))


def test_equal_promotes_dtypes_and_refuses_non_tensors_as_torch():
    for other in (ng.float64, ng.int64):
        assert ng.equal(ng.ones(2), ng.ones(2, dtype=other)) is \
            torch.equal(torch.ones(2), torch.ones(2, dtype=getattr(torch, other.name)))
    _same_error(lambda m: m.equal(m.ones(2), 1))
    _same_error(lambda m: m.equal(m.ones(2), [1.0, 1.0]))


def test_equal_under_jit_raises_a_tracing_error_naming_the_spelling_that_traces():
    with pytest.raises(ng.TracingError, match=r"\(a == b\)\.all\(\)"):
        ng.jit(lambda x: ng.equal(x, x), backend="numpy")(ng.ones(2))

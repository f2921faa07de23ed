"""The Tensor object: factories, dtypes, attributes, conversions, repr, in-place ops, promotion.

PyTorch is the oracle wherever it has the concept (API.md); where API.md settles a detail
differently from PyTorch, the test says so and follows API.md.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close, to_numpy, to_torch  # noqa: E402

DTYPES = [("float32", "float32"), ("float64", "float64"), ("int64", "int64"), ("bool", "bool")]


def ngd(name):
    return getattr(ng, name)


def thd(name):
    return getattr(torch, name)


# ----------------------------------------------------------------------------- factories
@pytest.mark.parametrize(
    "data",
    [
        [1.0, 2.0],
        [1, 2, 3],
        [True, False],
        3.5,
        7,
        True,
        [[1.0, 2.0], [3.0, 4.0]],
        [[1, 2], [3, 4]],
        [],
        [1, 2.5],  # mixed int/float -> float32
    ],
    ids=repr,
)
def test_tensor_from_python_data_matches_torch(data):
    got = ng.tensor(data)
    want = torch.tensor(data)
    assert isinstance(got, ng.Tensor)
    assert_close(got, want)
    assert got.requires_grad is False and got.is_leaf and got.grad_fn is None


def test_default_dtypes():
    assert ng.tensor([1.0, 2.0]).dtype == ng.float32
    assert ng.tensor(1.5).dtype == ng.float32
    assert ng.tensor([1, 2]).dtype == ng.int64
    assert ng.tensor(3).dtype == ng.int64
    assert ng.tensor([True, False]).dtype == ng.bool
    assert ng.tensor(False).dtype == ng.bool


@pytest.mark.parametrize("np_dtype,ng_name", [
    (np.float32, "float32"), (np.float64, "float64"), (np.int64, "int64"), (np.bool_, "bool"),
])
def test_tensor_from_numpy_array_keeps_dtype(np_dtype, ng_name):
    a = np.array([1, 0, 1], dtype=np_dtype)
    t = ng.tensor(a)
    assert t.dtype == ngd(ng_name)
    assert to_numpy(t).dtype == np.dtype(np_dtype)
    np.testing.assert_array_equal(to_numpy(t), a)


def test_tensor_copies_numpy_input():
    a = np.array([1.0, 2.0, 3.0])
    t = ng.tensor(a)
    a[0] = 100.0
    assert t[0].item() == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_tensor_explicit_dtype(dtype):
    got = ng.tensor([1, 0, 2], dtype=ngd(dtype))
    want = torch.tensor([1, 0, 2], dtype=thd(dtype))
    assert_close(got, want)


def test_tensor_requires_grad_flag():
    t = ng.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad is True
    assert t.is_leaf is True
    assert t.grad is None and t.grad_fn is None


@pytest.mark.parametrize("name", ["zeros", "ones"])
@pytest.mark.parametrize("shape", [(2, 3), (4,), (), (0, 2)], ids=str)
def test_zeros_ones(name, shape):
    want = getattr(torch, name)(shape)
    assert_close(getattr(ng, name)(shape), want)
    if shape:
        assert_close(getattr(ng, name)(*shape), want)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_dtype_and_requires_grad(name):
    f = getattr(ng, name)
    t = f(2, 3)
    assert tuple(t.shape) == (2, 3) and t.dtype == ng.float32
    t = f(2, 3, dtype=ng.float64)
    assert t.dtype == ng.float64
    t = f(2, 3, requires_grad=True)
    assert t.requires_grad is True and t.is_leaf and t.grad_fn is None


def test_empty_shape():
    assert tuple(ng.empty(3, 2).shape) == (3, 2)
    assert tuple(ng.empty((0,)).shape) == (0,)


@pytest.mark.parametrize("shape,value", [((2, 3), 1.5), ((3,), 7), ((2,), True), ((), -2.0)],
                         ids=str)
def test_full(shape, value):
    assert_close(ng.full(shape, value), torch.full(shape, value))


def test_full_requires_grad_and_dtype():
    t = ng.full((2,), 3.0, dtype=ng.float64, requires_grad=True)
    assert t.dtype == ng.float64 and t.requires_grad
    np.testing.assert_array_equal(to_numpy(t), [3.0, 3.0])


def test_rand_range_and_randn_stats():
    ng.manual_seed(0)
    r = to_numpy(ng.rand(1000))
    assert r.min() >= 0.0 and r.max() < 1.0 and 0.4 < r.mean() < 0.6
    n = to_numpy(ng.randn(2000))
    assert abs(n.mean()) < 0.15 and 0.85 < n.std() < 1.15


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_manual_seed_reproducible(name):
    f = getattr(ng, name)
    ng.manual_seed(1234)
    a = to_numpy(f(5))
    b = to_numpy(f(5))
    ng.manual_seed(1234)
    c = to_numpy(f(5))
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}),
    ((1, 4), {}),
    ((0, 1, 0.25), {}),
    ((2.0, 5.0), {}),
    ((10, 0, -3), {}),
    ((4,), {"dtype": "float64"}),
], ids=str)
def test_arange(args, kwargs):
    ngk = {k: ngd(v) for k, v in kwargs.items()}
    thk = {k: thd(v) for k, v in kwargs.items()}
    assert_close(ng.arange(*args, **ngk), torch.arange(*args, **thk))


@pytest.mark.parametrize("args", [(0, 1, 5), (-1.0, 1.0, 3), (2, 2, 1), (0, 1, 0)], ids=str)
def test_linspace(args):
    assert_close(ng.linspace(*args), torch.linspace(*args))


def test_arange_linspace_requires_grad():
    assert ng.arange(3.0, requires_grad=True).requires_grad
    assert ng.linspace(0, 1, 3, requires_grad=True).requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_like_factories(dtype):
    x = ng.tensor([[1, 2, 3], [4, 5, 6]], dtype=ngd(dtype))
    tx = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=thd(dtype))
    assert_close(ng.zeros_like(x), torch.zeros_like(tx))
    assert_close(ng.ones_like(x), torch.ones_like(tx))
    assert_close(ng.full_like(x, 7), torch.full_like(tx, 7))


def test_like_factories_do_not_inherit_requires_grad():
    x = ng.ones(3, requires_grad=True)
    for t in (ng.zeros_like(x), ng.ones_like(x), ng.full_like(x, 2.0)):
        assert t.requires_grad is False and t.grad_fn is None
    assert ng.zeros_like(x, requires_grad=True).requires_grad


def test_from_numpy_shares_memory_both_ways():
    a = np.zeros(3)
    t = ng.from_numpy(a)
    assert t.dtype == ng.float64
    a[0] = 5.0
    assert t[0].item() == 5.0
    t.add_(1.0)
    np.testing.assert_array_equal(a, [6.0, 1.0, 1.0])


def test_from_numpy_keeps_float32_and_int64():
    assert ng.from_numpy(np.ones(2, dtype=np.float32)).dtype == ng.float32
    assert ng.from_numpy(np.ones(2, dtype=np.int64)).dtype == ng.int64


# ----------------------------------------------------------------------------- attributes
def test_basic_attributes():
    t = ng.zeros(2, 3, 4)
    assert tuple(t.shape) == (2, 3, 4)
    assert t.shape == (2, 3, 4)
    assert t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24
    assert tuple(t.size()) == (2, 3, 4)
    assert t.size(1) == 3 and t.size(-1) == 4
    assert str(t.device) == "cpu"
    assert t.requires_grad is False and t.grad is None and t.grad_fn is None
    assert t.is_leaf is True
    assert t._version == 0


def test_zero_dim_attributes():
    t = ng.tensor(2.0)
    assert tuple(t.shape) == () and t.ndim == 0 and t.numel() == 1 and t.dim() == 0


def test_is_leaf_and_grad_fn_follow_torch():
    x = ng.ones(3, requires_grad=True)
    y = x * 2
    assert y.is_leaf is False and y.requires_grad and y.grad_fn is not None
    z = ng.ones(3) * 2  # no input requires grad: a leaf, as in torch
    assert z.is_leaf is True and z.grad_fn is None and z.requires_grad is False
    w = x.detach()
    assert w.is_leaf is True and w.requires_grad is False


def test_data_attribute():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert isinstance(d, ng.Tensor)
    assert d.requires_grad is False and d.grad_fn is None
    np.testing.assert_array_equal(to_numpy(d), [1.0, 2.0])
    d.mul_(3)  # shares storage, and is allowed on a leaf that requires grad (as torch)
    np.testing.assert_array_equal(to_numpy(x), [3.0, 6.0])


def test_grad_assignment():
    x = ng.ones(3, requires_grad=True)
    x.grad = ng.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(to_numpy(x.grad), [1.0, 2.0, 3.0])
    (x * 2).sum().backward()  # accumulates into the assigned grad
    np.testing.assert_array_equal(to_numpy(x.grad), [3.0, 4.0, 5.0])
    x.grad = None
    assert x.grad is None


def test_grad_assignment_shape_checked():
    x = ng.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("attempting to assign a gradient of size")):
        x.grad = ng.ones(2)
    assert x.grad is None


def test_grad_assignment_dtype_checked():
    x = ng.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("attempting to assign a gradient with dtype")):
        x.grad = ng.ones(3, dtype=ng.float64)
    assert x.grad is None


# ----------------------------------------------------------------------------- conversions
def test_numpy_on_requires_grad_raises():
    x = ng.ones(3, requires_grad=True)
    msg = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        x.numpy()


def test_detach_numpy_shares_memory():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    n = x.detach().numpy()
    assert isinstance(n, np.ndarray) and n.dtype == np.float32
    n[0] = 10.0
    assert x[0].item() == 10.0


def test_numpy_shares_memory_without_grad():
    x = ng.tensor([1.0, 2.0])
    n = x.numpy()
    n[1] = -1.0
    assert x.tolist() == [1.0, -1.0]


def test_item():
    assert ng.tensor(2.5).item() == 2.5 and type(ng.tensor(2.5).item()) is float
    assert ng.tensor([3]).item() == 3 and type(ng.tensor([3]).item()) is int
    assert ng.tensor(True).item() is True
    assert ng.tensor([[1.5]], requires_grad=True).item() == 1.5


def test_item_on_many_elements_raises():
    with pytest.raises(RuntimeError, match=re.escape(
            "a Tensor with 2 elements cannot be converted to Scalar")):
        ng.tensor([1, 2]).item()


@pytest.mark.parametrize("data", [[1.5, 2.0], [[1, 2], [3, 4]], 3.0, [True, False], []], ids=str)
def test_tolist(data):
    got = ng.tensor(data).tolist()
    want = torch.tensor(data).tolist()
    assert got == want
    assert type(got) is type(want)
    if isinstance(want, list) and want:
        assert type(got[0]) is type(want[0])


def test_array_protocol():
    x = ng.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.shape == (2, 2)
    np.testing.assert_array_equal(a, [[1.0, 2.0], [3.0, 4.0]])
    b = np.asarray(x, dtype=np.float64)
    assert b.dtype == np.float64
    assert np.add(np.asarray(x), 1.0).sum() == 14.0


def test_python_scalar_conversions():
    assert float(ng.tensor([2.5])) == 2.5
    assert int(ng.tensor(3.7)) == 3
    assert bool(ng.tensor(1.0)) is True


@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("double", "float64")])
def test_float_double(method, dtype):
    for src in (ng.tensor([1, 2]), ng.tensor([1.0, 2.0], dtype=ng.float64),
                ng.tensor([1.0, 2.0])):
        out = getattr(src, method)()
        assert out.dtype == ngd(dtype)
        np.testing.assert_array_equal(to_numpy(out), [1.0, 2.0])


def test_double_is_differentiable():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.double()
    assert y.dtype == ng.float64 and y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype == ng.float32
    np.testing.assert_allclose(to_numpy(x.grad), [2.0, 4.0])


def test_to_and_cpu():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    for y in (x.to("cpu"), x.cpu()):
        assert str(y.device) == "cpu"
        np.testing.assert_array_equal(to_numpy(y), [1.0, 2.0])
        assert y.requires_grad


# ----------------------------------------------------------------------------- repr
def _repr_cases():
    return [
        ("float", lambda m: m.tensor([1.0, 2.0])),
        ("float_rg", lambda m: m.tensor([1.0, 2.0], requires_grad=True)),
        ("float64", lambda m: m.tensor([1.0, 2.0], dtype=m.float64)),
        ("float64_rg", lambda m: m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)),
        ("int", lambda m: m.tensor([1, 2, 3])),
        ("bool", lambda m: m.tensor([True, False])),
        ("scalar", lambda m: m.tensor(3.0)),
        ("int_scalar", lambda m: m.tensor(3)),
        ("2d", lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]])),
        ("fraction", lambda m: m.tensor([0.5, 1.25])),
        ("negative", lambda m: m.tensor([-1.0, 2.0])),
        ("empty", lambda m: m.tensor([])),
        ("empty_2d", lambda m: m.zeros(0, 3)),
        ("grad_fn", lambda m: m.tensor([1.0, 2.0], requires_grad=True) * 2),
        ("float64_scalar", lambda m: m.tensor(2.5, dtype=m.float64)),
        ("sci_small", lambda m: m.tensor([1e-5, 1.0])),
        ("sci_big", lambda m: m.tensor([1e6, 2.0])),
        ("nan_inf", lambda m: m.tensor([float("nan"), float("inf"), -float("inf"), 1.0])),
        ("negative_zero", lambda m: m.tensor([-0.0, 1.5])),
        ("3d", lambda m: m.arange(12.0).reshape(2, 3, 2)),
        ("empty_int", lambda m: m.zeros(0, 2, dtype=m.int64)),
        ("empty_float64", lambda m: m.zeros(0, dtype=m.float64)),
        ("summarized_int", lambda m: m.arange(2000)),
        ("summarized_float", lambda m: m.arange(2000.0) / 1000),
        ("view_grad_fn", lambda m: m.ones(4, requires_grad=True).view(2, 2)),
    ]


@pytest.mark.parametrize("make", [c[1] for c in _repr_cases()], ids=[c[0] for c in _repr_cases()])
def test_repr_matches_torch(make):
    want = repr(make(torch)).replace("torch.", "numgrad.")
    assert repr(make(ng)) == want


# ----------------------------------------------------------------------------- in-place ops
INPLACE = [
    ("add_", lambda t: t.add_(1.0)),
    ("add_tensor", lambda t: t.add_(t * 0 + 1)),
    ("sub_", lambda t: t.sub_(0.5)),
    ("mul_", lambda t: t.mul_(2.0)),
    ("div_", lambda t: t.div_(4.0)),
    ("zero_", lambda t: t.zero_()),
    ("fill_", lambda t: t.fill_(3.0)),
    ("copy_", lambda t: t.copy_(t * 0 - 7)),
    ("clamp_", lambda t: t.clamp_(-0.5, 0.5)),
    ("clamp_min_", lambda t: t.clamp_(min=0.1)),
    ("relu_", lambda t: t.relu_()),
    ("setitem_int", lambda t: t.__setitem__(0, 9.0)),
    ("setitem_slice", lambda t: t.__setitem__(slice(1, 3), 4.0)),
    ("setitem_mask", lambda t: t.__setitem__(t > 0, 0.0)),
]
# API.md: "Each in-place op bumps _version by exactly 1" and it lists detach_ and
# requires_grad_ among the in-place ops. (PyTorch itself leaves _version alone for these two.)
META_INPLACE = [
    ("detach_", lambda t: t.detach_()),
    ("requires_grad_", lambda t: t.requires_grad_()),
]
START = [1.5, -2.0, 0.25, 3.0]


@pytest.mark.parametrize("name,fn", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_values_and_version(name, fn):
    t = ng.tensor(START)
    tt = torch.tensor(START)
    assert t._version == 0
    res = fn(t)
    fn(tt)
    assert t._version == 1, f"{name} bumped _version to {t._version}"
    assert_close(t, tt)
    if not name.startswith("setitem"):
        assert res is t, f"{name} must return self"


@pytest.mark.parametrize("name,fn", META_INPLACE, ids=[n for n, _ in META_INPLACE])
def test_meta_inplace_bumps_version_per_api(name, fn):
    t = ng.tensor(START) * 1.0
    v0 = t._version
    res = fn(t)
    assert res is t
    assert t._version == v0 + 1


def test_detach_inplace_semantics():
    x = ng.ones(3, requires_grad=True)
    y = x * 2
    y.detach_()
    assert y.requires_grad is False and y.grad_fn is None and y.is_leaf


def test_requires_grad_inplace_semantics():
    x = ng.ones(3)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert x.requires_grad is False


def test_version_counter_shared_with_detach():
    x = ng.ones(3, requires_grad=True)
    d = x.detach()
    assert d._version == x._version == 0
    d.add_(1.0)
    assert x._version == 1 and d._version == 1
    np.testing.assert_array_equal(to_numpy(x), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("make_view", [
    lambda t: t[1:3],
    lambda t: t[0],
    lambda t: t.view(2, 2),
    lambda t: t.reshape(2, 2),
    lambda t: t.unsqueeze(0),
    lambda t: t.view(2, 2).T,
    lambda t: t.expand(2, 4),
], ids=["slice", "int", "view", "reshape", "unsqueeze", "T", "expand"])
def test_version_counter_shared_with_views(make_view):
    base = ng.tensor([1.0, 2.0, 3.0, 4.0])
    v = make_view(base)
    tb = torch.tensor([1.0, 2.0, 3.0, 4.0])
    tv = make_view(tb)
    base.mul_(2.0)
    tb.mul_(2.0)
    assert v._version == base._version == 1
    assert_close(v, tv)  # the view sees the base's new values


def test_inplace_on_view_writes_through():
    base = ng.zeros(4)
    v = base[1:3]
    v.fill_(5.0)
    assert base._version == 1
    np.testing.assert_array_equal(to_numpy(base), [0.0, 5.0, 5.0, 0.0])
    base.view(2, 2)[1].add_(1.0)
    np.testing.assert_array_equal(to_numpy(base), [0.0, 5.0, 6.0, 1.0])
    assert base._version == 2


def test_inplace_on_leaf_requiring_grad_raises():
    x = ng.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad is being used in an in-place operation.")):
        x.add_(1.0)
    assert x._version == 0
    np.testing.assert_array_equal(to_numpy(x.detach()), [1.0, 1.0, 1.0])


def test_inplace_on_leaf_allowed_under_no_grad():
    x = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        x.sub_(0.5)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    assert x._version == 1
    np.testing.assert_array_equal(to_numpy(x.detach()), [0.5, 0.5, 0.5])


INPLACE_GRAD = [
    ("add_", lambda y, m: y.add_(1.0)),
    ("add_tensor", lambda y, m: y.add_(m.tensor([1.0, 2.0, 3.0]))),
    ("sub_", lambda y, m: y.sub_(0.5)),
    ("mul_", lambda y, m: y.mul_(3.0)),
    ("div_", lambda y, m: y.div_(4.0)),
    ("zero_", lambda y, m: y.zero_()),
    ("fill_", lambda y, m: y.fill_(2.0)),
    ("copy_", lambda y, m: y.copy_(m.tensor([5.0, 6.0, 7.0]))),
    ("clamp_", lambda y, m: y.clamp_(-1.0, 2.5)),
    ("relu_", lambda y, m: y.relu_()),
    ("setitem", lambda y, m: y.__setitem__(1, 0.0)),
]


@pytest.mark.parametrize("name,fn", INPLACE_GRAD, ids=[n for n, _ in INPLACE_GRAD])
def test_inplace_on_non_leaf_gradients_match_torch(name, fn):
    data = [0.5, -1.0, 2.0]
    w = [1.0, 2.0, -3.0]
    x = ng.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    y = x * 2
    ty = tx * 2
    fn(y, ng)
    fn(ty, torch)
    assert y._version == ty._version == 1
    assert_close(y.detach(), ty.detach())
    (y * ng.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad)


def test_inplace_copy_into_non_leaf_from_grad_tensor():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    b = ng.tensor([3.0, 4.0], requires_grad=True)
    ta, tb = to_torch(a), to_torch(b)
    y = a * 1
    ty = ta * 1
    y.copy_(b * b)
    ty.copy_(tb * tb)
    y.sum().backward()
    ty.sum().backward()
    assert_close(b.grad, tb.grad)
    assert_close(a.grad, ta.grad)


# ----------------------------------------------------------------------------- requires_grad
def test_int_tensor_cannot_require_grad():
    msg = "only Tensors of floating point dtype can require gradients"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ng.tensor([1, 2], requires_grad=True)
    t = ng.tensor([1, 2])
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        t.requires_grad_()
    assert t.requires_grad is False
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ng.tensor([True], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ng.arange(3, requires_grad=True)


def test_int_tensor_requires_grad_false_is_fine():
    t = ng.tensor([1, 2]).requires_grad_(False)
    assert t.requires_grad is False


# ----------------------------------------------------------------------------- type promotion
PROMOTION = [
    ("f32*pyfloat", lambda m: m.tensor([1.0, 2.0]) * 2.5),
    ("f64*pyfloat", lambda m: m.tensor([1.0, 2.0], dtype=m.float64) * 2.5),
    ("i64*pyfloat", lambda m: m.tensor([1, 2]) * 2.5),
    ("pyfloat+i64", lambda m: 0.5 + m.tensor([1, 2])),
    ("i64+pyint", lambda m: m.tensor([1, 2]) + 3),
    ("f32+pyint", lambda m: m.tensor([1.0, 2.0]) + 3),
    ("i64/i64", lambda m: m.tensor([1, 3]) / m.tensor([2, 2])),
    ("i64/pyint", lambda m: m.tensor([1, 3]) / 2),
    ("f32+f64", lambda m: m.tensor([1.0]) + m.tensor([2.0], dtype=m.float64)),
    ("f64*f32", lambda m: m.tensor([1.0], dtype=m.float64) * m.tensor([2.0])),
    ("i64+f32", lambda m: m.tensor([1, 2]) + m.tensor([0.5, 0.5])),
    ("bool+i64", lambda m: m.tensor([True, False]) + m.tensor([1, 2])),
    ("bool*pyfloat", lambda m: m.tensor([True, False]) * 1.5),
    ("0d_f64+1d_f32", lambda m: m.tensor(1.0, dtype=m.float64) + m.tensor([1.0, 2.0])),
    ("0d_f32+1d_i64", lambda m: m.tensor(1.5) + m.tensor([1, 2])),
    ("i64**pyfloat", lambda m: m.tensor([1, 4]) ** 0.5),
    ("pyfloat**i64", lambda m: 2.0 ** m.tensor([1, 2])),
    ("maximum_i64_f64", lambda m: m.maximum(m.tensor([1, 5]), m.tensor([2.0, 3.0],
                                                                        dtype=m.float64))),
    ("where_f32_f64", lambda m: m.where(m.tensor([True, False]), m.tensor([1.0, 2.0]),
                                        m.tensor([3.0, 4.0], dtype=m.float64))),
    ("cat_f32_f64", lambda m: m.cat([m.tensor([1.0]), m.tensor([2.0], dtype=m.float64)])),
    ("i64<pyfloat", lambda m: m.tensor([1, 2]) < 1.5),
    ("mean_f64", lambda m: m.tensor([1.0, 2.0], dtype=m.float64).mean()),
    ("sum_bool", lambda m: m.tensor([True, True, False]).sum()),
    ("sum_i64", lambda m: m.tensor([1, 2]).sum()),
]


@pytest.mark.parametrize("fn", [p[1] for p in PROMOTION], ids=[p[0] for p in PROMOTION])
def test_type_promotion_matches_torch(fn):
    got = fn(ng)
    want = fn(torch)
    assert_close(got, want)


def test_mixed_precision_gradients_keep_input_dtypes():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    b = ng.tensor([3.0, 4.0], dtype=ng.float64, requires_grad=True)
    ta, tb = to_torch(a), to_torch(b)
    (a * b).sum().backward()
    (ta * tb).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)


def test_no_warnings_from_plain_ops():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = ng.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        _ = x.grad


# ----------------------------------------------------------------------------- in-place + autograd
def test_inplace_through_view_of_non_leaf_gradients_match_torch():
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 2
        v = y[1:3]
        v.mul_(x[1:3])
        (y * y).sum().backward()
        return x, y

    x, y = run(ng)
    tx, ty = run(torch)
    assert_close(y.detach(), ty.detach())
    assert_close(x.grad, tx.grad)


def test_inplace_on_saved_input_detected():
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation")

    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        w = m.tensor([3.0, 4.0], requires_grad=True)
        a = x * 1
        y = a * w  # saves a
        a.add_(1.0)
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            y.sum().backward()

    run(torch)
    run(ng)


def test_inplace_on_saved_output_detected():
    msg = ("one of the variables needed for gradient computation has been modified by an "
           "inplace operation")

    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        b = x.exp()  # saves its output
        b.mul_(2.0)
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            b.sum().backward()

    run(torch)
    run(ng)


def test_inplace_not_saved_is_fine():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        a = x + 1  # add saves nothing
        a.mul_(3.0)
        a.sum().backward()
        return x

    assert_close(run(ng).grad, run(torch).grad)


def _iadd(t, o):
    t += o
    return t


def _isub(t, o):
    t -= o
    return t


def _imul(t, o):
    t *= o
    return t


def _itruediv(t, o):
    t /= o
    return t


AUGMENTED = [("iadd", _iadd), ("isub", _isub), ("imul", _imul), ("itruediv", _itruediv)]


@pytest.mark.parametrize("name,fn", AUGMENTED, ids=[n for n, _ in AUGMENTED])
@pytest.mark.parametrize("other", ["scalar", "tensor"])
def test_augmented_assignment_is_inplace(name, fn, other):
    """As in torch, ``t += o`` is ``t.add_(o)``: same object, shared storage, one version bump."""
    def run(m):
        t = m.tensor(START)
        alias = t.view(4)
        o = 2.0 if other == "scalar" else m.tensor([1.0, 2.0, 4.0, 0.5])
        res = fn(t, o)
        assert res is t
        return t, alias

    t, alias = run(ng)
    tt, talias = run(torch)
    assert t._version == 1
    assert_close(t, tt)
    assert_close(alias, talias)


def test_augmented_assignment_on_non_leaf_gradients_match_torch():
    def run(m):
        x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x * 2
        y += x
        y *= x
        y -= 1.0
        y /= 4.0
        y.sum().backward()
        return x, y

    x, y = run(ng)
    tx, ty = run(torch)
    assert y.grad_fn.name() == type(ty.grad_fn).__name__
    assert_close(y.detach(), ty.detach())
    assert_close(x.grad, tx.grad)


def test_augmented_assignment_on_leaf_requiring_grad_raises():
    x = ng.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad is being used in an in-place operation.")):
        x += 1.0


# ------------------------------------------------------------------- format, .data, asarray
FORMATS = [(1.23456, ".4f"), (1.23456, ""), (1.5, "e"), (3, "d"), (3, "04d"), (True, ""),
           (True, "d"), (-0.0, "+.1f"), (float("nan"), ".2f"), (2.5, ">8.2f")]


@pytest.mark.parametrize("value,spec", FORMATS)
def test_format_of_0d_tensor_matches_torch(value, spec):
    for name in ("float32", "float64") if isinstance(value, float) else (None,):
        t = ng.tensor(value, dtype=name and getattr(ng, name))
        tt = torch.tensor(value, dtype=name and getattr(torch, name))
        assert format(t, spec) == format(tt, spec)
    grad = isinstance(value, float)
    loss = ng.tensor(value, requires_grad=grad) * 1  # a result in the graph, as a loss is
    tloss = torch.tensor(value, requires_grad=grad) * 1
    assert f"{loss:{spec}}" == f"{tloss:{spec}}"


def test_format_of_nd_tensor_matches_torch():
    assert format(ng.ones(2), "") == str(ng.ones(2))
    for lib in (ng, torch):
        with pytest.raises(TypeError) as info:
            f"{lib.ones(2):.4f}"
        if lib is ng:
            ng_msg = str(info.value)
    assert ng_msg == str(info.value) == "unsupported format string passed to Tensor.__format__"


def test_del_data_raises_torchs_runtime_error():
    msgs = []
    for lib in (ng, torch):
        t = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            del t.data
        msgs.append(str(info.value))
        assert t.shape == (2,) or tuple(t.shape) == (2,)  # nothing was deleted
    assert msgs[0] == msgs[1]


def test_np_asarray_of_detached_tensor_shares_memory():
    x = ng.ones(3, requires_grad=True)
    a = np.asarray(x.detach())
    a[0] = 5.0
    assert x.detach().numpy()[0] == 5.0
    assert np.shares_memory(np.asarray(x.detach()), x.detach().numpy())
    assert not np.shares_memory(np.asarray(x.detach(), copy=True), x.detach().numpy())
    assert np.asarray(x.detach(), dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copy"):
        np.asarray(x.detach(), dtype=np.float64, copy=False)


def test_np_asarray_of_tensor_requiring_grad_raises_torchs_error():
    msgs = []
    for lib in (ng, torch):
        with pytest.raises(RuntimeError) as info:
            np.asarray(lib.ones(2, requires_grad=True))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    with pytest.raises(RuntimeError, match="detach"):
        np.array(ng.ones(2, requires_grad=True) * 2)

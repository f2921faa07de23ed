"""The tensor and top-level API PyTorch programs reach for, checked against torch: ng.Size,
mm/mv/addmm/baddbmm (values, gradients, node names, errors), out=, PyTorch's keyword names
(axis=, input=, other=, condition=), range and list indices (read and write), new_*,
type(), view_as/reshape_as/expand_as, default dtype and device, ng.accelerator, a fast
ng.cuda.is_available, and `del t.requires_grad`."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def _both(*arrays, grad=False):
    ours = [ng.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    return ours, theirs


def _close(t, tt, **kw):
    np.testing.assert_allclose(t.detach().numpy(), tt.detach().numpy(), rtol=1e-6, **kw)


def _same_error(fn, cls=RuntimeError):
    with pytest.raises(cls) as ours:
        fn(ng)
    with pytest.raises(cls) as theirs:
        fn(torch)
    assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------------------ Size
def test_size_is_a_tuple_with_torchs_repr_and_numel():
    x, tx = ng.zeros(3, 28, 28), torch.zeros(3, 28, 28)
    for s, ts in ((x.shape, tx.shape), (x.size(), tx.size()), (x.shape[1:], tx.shape[1:]),
                  (x.shape + (2,), tx.shape + (2,)), ((2,) + x.shape, (2,) + tx.shape),
                  (ng.Size([]), torch.Size([]))):
        assert isinstance(s, ng.Size) and isinstance(s, tuple)
        assert repr(s) == repr(ts) and str(s) == str(ts)
        assert s.numel() == ts.numel()
        assert s == tuple(ts)
    assert x.size(1) == 28 and isinstance(x.shape[0], int)
    assert pickle.loads(pickle.dumps(x.shape)) == x.shape
    assert f"{x.shape}" == "torch.Size([3, 28, 28])"


# ------------------------------------------------------------------- matrix products
def test_mm_mv_addmm_baddbmm_values_gradients_and_node_names():
    a, b, v = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    c, b1 = rng.standard_normal(4), rng.standard_normal((2, 2, 3))
    b2 = rng.standard_normal((2, 3, 4))
    (x, y, u, z, p, q), (tx, ty, tu, tz, tp, tq) = _both(a, b, v, c, b1, b2, grad=True)
    outs = [ng.mm(x, y), x.mm(y), ng.mv(x, u), x.mv(u),
            ng.addmm(z, x, y, beta=0.5, alpha=2.0), z.addmm(x, y),
            ng.baddbmm(z, p, q, beta=2, alpha=0.25), z.baddbmm(p, q)]
    touts = [torch.mm(tx, ty), tx.mm(ty), torch.mv(tx, tu), tx.mv(tu),
             torch.addmm(tz, tx, ty, beta=0.5, alpha=2.0), tz.addmm(tx, ty),
             torch.baddbmm(tz, tp, tq, beta=2, alpha=0.25), tz.baddbmm(tp, tq)]
    for o, to in zip(outs, touts):
        _close(o, to)
    for o, to in zip(outs[:4], touts[:4]):
        assert o.grad_fn.name() == type(to.grad_fn).__name__  # MmBackward0, MvBackward0
    sum(o.sum() for o in outs).backward()
    sum(o.sum() for o in touts).backward()
    for t, tt in zip((x, y, u, z, p, q), (tx, ty, tu, tz, tp, tq)):
        _close(t.grad, tt.grad)


def test_addmm_with_beta_zero_ignores_nan_input():
    nan = np.full(2, np.nan, np.float32)
    out = ng.addmm(ng.tensor(nan), ng.ones(2, 2), ng.ones(2, 2), beta=0)
    assert out.tolist() == torch.addmm(torch.tensor(nan), torch.ones(2, 2), torch.ones(2, 2),
                                       beta=0).tolist()


@pytest.mark.parametrize("call", [
    lambda L: L.mm(L.ones(3), L.ones(3, 3)), lambda L: L.mm(L.ones(3, 3), L.ones(3)),
    lambda L: L.mm(L.ones(2, 3), L.ones(2, 3)),
    lambda L: L.mm(L.ones(2, 3), L.ones(3, 3, dtype=L.float64)),
    lambda L: L.mv(L.ones(3, 3), L.ones(2)), lambda L: L.mv(L.ones(3, 3), L.ones(2, 3)),
    lambda L: L.addmm(L.ones(4), L.ones(2, 3), L.ones(3, 3)),
    lambda L: L.addmm(L.ones(3), L.ones(3), L.ones(3, 3)),
    lambda L: L.baddbmm(L.ones(3), L.ones(2, 3), L.ones(2, 3, 3)),
])
def test_matrix_product_errors_match_torch(call):
    _same_error(call)


# ---------------------------------------------------------------------------- out=
def test_out_writes_in_place_and_returns_out():
    (x, y), (tx, ty) = _both(rng.standard_normal((2, 3)).astype(np.float32),
                             rng.standard_normal((3, 3)).astype(np.float32))
    calls = [("add", (x, y[:2]), (tx, ty[:2])), ("sub", (x, 1.0), (tx, 1.0)),
             ("mul", (x, x), (tx, tx)), ("div", (x, 2.0), (tx, 2.0)),
             ("matmul", (x, y), (tx, ty)), ("mm", (x, y), (tx, ty)), ("exp", (x,), (tx,)),
             ("maximum", (x, y[:2]), (tx, ty[:2]))]
    for name, args, targs in calls:
        out, tout = ng.empty(0), torch.empty(0)
        version = out._version
        got = getattr(ng, name)(*args, out=out)
        getattr(torch, name)(*targs, out=tout)
        assert got is out and out._version > version
        _close(out, tout)
    out = ng.zeros(3)
    ng.sum(x, dim=0, out=out)
    _close(out, tx.sum(0))


def test_out_resize_warns_like_torch_and_casts_up():
    with pytest.warns(UserWarning, match="An output with one or more elements was resized "
                                         r"since it had shape \[5\], which does not match the "
                                         r"required output shape \[2, 3\]"):
        out = ng.add(ng.ones(2, 3), 1, out=ng.empty(5))
    assert out.shape == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ng.add(ng.ones(2, 3), 1, out=ng.empty(0))  # an empty out resizes silently
    out = ng.add(ng.ones(2), 1, out=ng.zeros(2, dtype=ng.float64))
    assert out.dtype is ng.float64 and out.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("call", [
    lambda L: L.add(L.ones(2, requires_grad=True), 1, out=L.empty(2)),
    lambda L: L.mul(L.ones(2), 2, out=L.empty(2, requires_grad=True)),
    lambda L: L.add(L.ones(2), 1, out=L.empty(2, dtype=L.int64)),
    lambda L: L.add(L.ones(2, dtype=L.int64), 1, out=L.empty(2, dtype=L.bool)),
    lambda L: L.matmul(L.ones(2, 3), L.ones(3, 3), out=L.empty(2, 3, dtype=L.float64)),
    lambda L: L.mm(L.ones(2, 3), L.ones(3, 3), out=L.empty(2, 3, dtype=L.float64)),
])
def test_out_errors_match_torch(call):
    _same_error(call)


def test_out_requiring_grad_is_fine_under_no_grad():
    out = ng.empty(2, requires_grad=True)
    with ng.no_grad():
        ng.add(ng.ones(2, requires_grad=True), 1, out=out)
    assert out.tolist() == [2.0, 2.0] and out.requires_grad


# --------------------------------------------------------------------- keyword names
def test_pytorch_keyword_names():
    (x,), (tx,) = _both(rng.standard_normal((2, 3)).astype(np.float32))
    pairs = [(ng.sum(x, axis=1), torch.sum(tx, axis=1)), (x.sum(axis=0), tx.sum(axis=0)),
             (x.mean(axis=1, keepdim=True), tx.mean(axis=1, keepdim=True)),
             (ng.cat([x, x], axis=0), torch.cat([tx, tx], axis=0)),
             (x.softmax(axis=0), tx.softmax(axis=0)), (ng.amax(x, axis=0), torch.amax(tx, axis=0)),
             (ng.matmul(input=x, other=x.T), torch.matmul(input=tx, other=tx.T)),
             (ng.where(condition=x > 0, input=x, other=ng.zeros(1)),
              torch.where(condition=tx > 0, input=tx, other=torch.zeros(1))),
             (ng.mm(input=x, mat2=x.T), torch.mm(input=tx, mat2=tx.T)),
             (ng.sum(input=x), torch.sum(input=tx)),
             (x.matmul(other=x.T), tx.matmul(other=tx.T)), (x.add(other=x), tx.add(other=tx))]
    for o, to in pairs:
        _close(o, to)


# ---------------------------------------------------------------------------- indices
def test_range_and_list_indices_read_write_and_gradients():
    a = rng.standard_normal((4, 3)).astype(np.float32)
    labels = [2, 0, 1, 1]
    (x,), (tx,) = _both(a, grad=True)
    picks = [x[range(4), labels], x[[0, 2]], x[([0, 1], [2, 2])], x[range(1, 3)]]
    tpicks = [tx[range(4), labels], tx[[0, 2]], tx[([0, 1], [2, 2])], tx[range(1, 3)]]
    for o, to in zip(picks, tpicks):
        _close(o, to)
    sum((o * o).sum() for o in picks).backward()
    sum((o * o).sum() for o in tpicks).backward()
    _close(x.grad, tx.grad)
    y, ty = ng.tensor(a), torch.tensor(a)
    y[range(4), labels] = 0.0
    ty[range(4), labels] = 0.0
    y[[1, 3], 0] = ng.tensor([5.0, 6.0])
    ty[[1, 3], 0] = torch.tensor([5.0, 6.0])
    _close(y, ty)


# ------------------------------------------------------------------ new_*, type, *_as
def test_new_factories_take_dtype_and_device_from_the_tensor():
    for dtype, tdtype in ((ng.float64, torch.float64), (ng.float32, torch.float32)):
        x, tx = ng.ones(2, dtype=dtype), torch.ones(2, dtype=tdtype)
        pairs = [(x.new_ones(3), tx.new_ones(3)), (x.new_zeros((2, 2)), tx.new_zeros((2, 2))),
                 (x.new_full((2,), 3), tx.new_full((2,), 3)),
                 (x.new_tensor([1, 2]), tx.new_tensor([1, 2])),
                 (x.new_empty(4, dtype=ng.int64), tx.new_empty(4, dtype=torch.int64)),
                 (x.new_ones(2, requires_grad=True), tx.new_ones(2, requires_grad=True))]
        for o, to in pairs:
            assert o.shape == to.shape and str(o.dtype) == str(to.dtype).replace("torch", "numgrad")
            assert o.requires_grad == to.requires_grad
            if o.dtype is not ng.int64:
                _close(o, to)


def test_type_names_and_conversions_match_torch():
    for make in (lambda L: L.ones(2), lambda L: L.ones(2, dtype=L.float64),
                 lambda L: L.ones(2, dtype=L.int64), lambda L: L.ones(2, dtype=L.bool)):
        assert make(ng).type() == make(torch).type()
        x = make(ng)
        assert x.type(x.dtype) is x and x.type(make(torch).type()) is x
    x = ng.tensor([1.5, -2.5])
    assert x.type(ng.int64).tolist() == torch.tensor([1.5, -2.5]).type(torch.int64).tolist()
    assert x.type("torch.DoubleTensor").dtype is ng.float64
    _same_error(lambda L: L.ones(1).type("float"), ValueError)


def test_view_as_reshape_as_expand_as():
    (x,), (tx,) = _both(np.arange(6.0, dtype=np.float32), grad=True)
    o = [x.view_as(ng.ones(2, 3)), x.reshape_as(ng.ones(3, 2)), x[:1].expand_as(ng.ones(2, 6))]
    to = [tx.view_as(torch.ones(2, 3)), tx.reshape_as(torch.ones(3, 2)),
          tx[:1].expand_as(torch.ones(2, 6))]
    for a, b in zip(o, to):
        assert a.shape == b.shape
        _close(a, b)
    sum(a.sum() for a in o).backward()
    sum(b.sum() for b in to).backward()
    _close(x.grad, tx.grad)


# ----------------------------------------------------------- defaults, accelerator, cuda
def test_default_dtype():
    assert ng.get_default_dtype() is ng.float32
    try:
        ng.set_default_dtype(ng.float64)
        assert ng.tensor([1.5]).dtype is ng.float64 and ng.zeros(2).dtype is ng.float64
        assert (ng.ones(2, dtype=ng.int64) * 0.5).dtype is ng.float64
    finally:
        ng.set_default_dtype(ng.float32)
    assert ng.tensor([1.5]).dtype is ng.float32
    _same_error(lambda L: L.set_default_dtype(L.int64), TypeError)


def test_default_device_and_accelerator():
    assert ng.get_default_device() == ng.device("cpu")
    ng.set_default_device("cpu")
    assert ng.zeros(1).device == ng.device("cpu")
    ng.set_default_device(None)
    assert ng.accelerator.is_available() == ng.cuda.is_available()
    acc = ng.accelerator.current_accelerator()
    assert (acc is None) == (not ng.cuda.is_available())
    if acc is not None:
        assert acc.type == "cuda"


@pytest.mark.skipif(not ng.cuda.is_available(), reason="no CUDA device or simulator")
def test_default_device_cuda_places_factories_there():
    try:
        ng.set_default_device("cuda")
        x = ng.zeros(2)
        assert x.device.type == "cuda" and ng.get_default_device().type == "cuda"
        assert x.type() == "torch.cuda.FloatTensor"
        assert repr(x) == "tensor([0., 0.])"  # PyTorch names only a non-default device
        assert ng.zeros_like(ng.tensor([1.0], device="cpu")).device.type == "cpu"
    finally:
        ng.set_default_device(None)
    assert ng.zeros(1).device == ng.device("cpu")


def test_cuda_is_available_answers_fast_without_a_driver():
    if any(os.path.exists(f) for f in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")):
        pytest.skip("an NVIDIA driver is present")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.getcwd()
    code = ("import time, sys, numgrad as ng\n"
            "t = time.perf_counter(); a = ng.cuda.is_available(); dt = time.perf_counter() - t\n"
            "print(a, dt < 1e-3, 'numba.cuda' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "False"]


def test_del_requires_grad_raises_like_torch():
    _same_error(lambda L: delattr(L.ones(2, requires_grad=True), "requires_grad"))

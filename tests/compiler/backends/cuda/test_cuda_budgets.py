"""The structural budgets of a CUDA plan's call, counted under Numba's simulator at the
functions that reach the device: in steady state a call of W1 (``(x**2 + x**3).sum()``,
``jit(value_and_grad)``) makes no raw device allocation, at most one launch per kernel
of its schedule, no host<->device copy of inputs already on the device, and leaves its
results (the scalar too) on the device. And the prepared launch path a real GPU takes
(``cuda.core.launch`` with the parameters laid out once) passes the right pointers."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import numgrad as ng
from cuda_cases import require_simulator
import numgrad.cuda.launch as launch


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def _w1(x):
    return (x ** 2 + x ** 3).sum()


X = np.linspace(-1.0, 1.5, 10)


@contextlib.contextmanager
def _counting(monkeypatch, launched=None):
    """Counts of kernel launches and of copies between host and device while active
    (``launched``: a list to which each launched kernel is appended)."""
    from numba import cuda
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    counts = {"launches": 0, "copies": 0, "device_mallocs": 0}

    def counted(fn, key):
        def wrapper(*a, **k):
            counts[key] += 1
            return fn(*a, **k)
        return wrapper
    call = FakeCUDAKernel.__call__

    def launch_kernel(self, *a, **k):
        if not self._device:  # (a device function called inside a kernel is no launch)
            counts["launches"] += 1
            if launched is not None:
                launched.append(self)
        return call(self, *a, **k)
    monkeypatch.setattr(FakeCUDAKernel, "__call__", launch_kernel)
    for name in ("copy_to_host", "copy_to_device"):
        monkeypatch.setattr(FakeCUDAArray, name, counted(getattr(FakeCUDAArray, name), "copies"))
    monkeypatch.setattr(cuda, "to_device", counted(cuda.to_device, "copies"))
    monkeypatch.setattr(cuda, "device_array", counted(cuda.device_array, "device_mallocs"))
    before = ng.cuda.memory_stats()["device_mallocs"]
    yield counts
    counts["device_mallocs"] += ng.cuda.memory_stats()["device_mallocs"] - before


def _kernels(fn, *args):
    plan, _ = fn._plan(args, {})
    return sum(p.kernels for p in plan.programs)


def _direct_launches(monkeypatch):
    """The list each launch on the direct path (what a real GPU runs after a kernel's first
    launch: ``cuda.core.launch``, stood in for here) appends its arguments to."""
    launched = []
    monkeypatch.setattr(launch, "_handle", lambda disp, grid, block: ("K", "CFG", "S"))
    monkeypatch.setattr(launch, "_core_launch", lambda *a: launched.append(a))
    return launched


def test_w1_steady_state_call_meets_the_budgets(monkeypatch):
    f = ng.jit(ng.value_and_grad(_w1))
    x = ng.tensor(X, device="cuda")
    for _ in range(2):    # a loop's steady state: the last call's results still alive
        value, grad = f(x)
    with _counting(monkeypatch) as counts:
        value, grad = f(x)
    assert counts["device_mallocs"] == 0
    assert counts["copies"] == 0
    assert 1 <= counts["launches"] <= _kernels(f, x)
    assert type(value._data).__name__ == "CudaArray" and value.shape == ()
    assert value.device.type == "cuda" and grad.device.type == "cuda"
    np.testing.assert_allclose(value.item(), (X ** 2 + X ** 3).sum(), rtol=1e-12)
    np.testing.assert_allclose(grad.cpu().numpy(), 2 * X + 3 * X ** 2, rtol=1e-12)


def test_call_and_backward_steady_state_is_one_pass(monkeypatch):
    """``loss = f(x); loss.backward()`` in a training loop's steady state (``.grad`` set to
    None, as ``zero_grad`` does): the call runs the joint program, the backward launches
    nothing (no backward program, no copy of the gradient into ``.grad``, no seed made),
    and nothing is allocated from the driver or copied between host and device."""
    def w1c(x):
        return (x ** 2 + x ** 3).sum()
    f = ng.jit(w1c)
    x = ng.tensor(X, device="cuda", requires_grad=True)
    for _ in range(3):
        x.grad = None
        f(x).backward()
    (plan,) = f._plans.values()
    joint = plan.spec.joint
    assert joint is not None
    (prepared,) = joint._prepared.values()
    joint_kernels = {k.disp for k in prepared.kernels()}
    launched = []
    with _counting(monkeypatch, launched) as counts:
        x.grad = None
        loss = f(x)
        loss.backward()
    assert counts["device_mallocs"] == 0
    assert counts["copies"] == 0
    assert counts["launches"] == len(prepared.kernels()) >= 1
    assert set(launched) <= joint_kernels
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * X + 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(loss.item(), (X ** 2 + X ** 3).sum(), rtol=1e-12)


def test_prepared_launches_pass_each_buffers_pointer(monkeypatch):
    """The direct launch path (what a real GPU runs after a kernel's first launch): the
    parameter list is numba-cuda's layout for a 1-D C-contiguous array (meminfo, parent,
    nitems, itemsize, data, shape, stride), with the data pointers of this call's
    buffers; no launch goes through the dispatcher any more."""
    launched = _direct_launches(monkeypatch)

    def w1b(x):
        return (x ** 2 + x ** 3).sum()
    f = ng.jit(ng.value_and_grad(w1b))
    x = ng.tensor(X, device="cuda")
    v1, g1 = f(x)   # first call: through the dispatcher, which compiles (and runs) them
    np.testing.assert_allclose(g1.cpu().numpy(), 2 * X + 3 * X ** 2, rtol=1e-12)
    assert launched == []
    with _counting(monkeypatch) as counts:
        v2, g2 = f(x)
    assert counts["launches"] == 0 and counts["copies"] == 0
    assert 1 <= len(launched) <= _kernels(f, x)
    ptrs = set()
    for stream, config, kernel, *params in launched:
        assert (stream, config, kernel) == ("S", "CFG", "K")
        i = 0
        while i < len(params):
            if isinstance(params[i], int):
                meminfo, parent, n, itemsize, ptr, shape, stride = params[i:i + 7]
                assert (meminfo, parent) == (0, 0) and shape == n and stride == itemsize
                assert itemsize in (1, 8) and ptr != 0
                ptrs.add(ptr)
                i += 7
            else:
                i += 1  # a scalar (ctypes) argument
    assert x._data.ptr in ptrs and g2._data.ptr in ptrs and v2._data.ptr in ptrs
    assert g2._data.ptr != g1._data.ptr  # g1 is alive: this call's result has its own block


def test_generic_kernels_take_extents_and_constants_by_value(monkeypatch):
    """A shape-generic plan's direct launches: each kernel's extents and one-element
    constants are laid out once as numba-cuda passes them (``int64`` as ``c_int64``,
    ``float64`` as ``c_double``), with this plan's values; the results are right."""
    import ctypes
    launched = _direct_launches(monkeypatch)

    def gen(x, w):
        return (x * 0.25 + w).mean()
    f = ng.jit(gen)
    f(ng.tensor(np.ones((2, 3)), device="cuda"), ng.tensor(np.ones(3), device="cuda"))
    xs, ws = np.arange(12.0).reshape(3, 4), np.linspace(-1, 1, 4)
    x, w = ng.tensor(xs, device="cuda"), ng.tensor(ws, device="cuda")
    first = f(x, w)        # the generic plan's first call: through the dispatcher
    np.testing.assert_allclose(first.item(), (xs * 0.25 + ws).mean(), rtol=1e-12)
    assert launched == []
    f(x, w)
    scalars = [p for _, _, _, *params in launched for p in params if not isinstance(p, int)]
    ints = {p.value for p in scalars if type(p) is ctypes.c_int64}
    floats = {p.value for p in scalars if type(p) is ctypes.c_double}
    assert {12, 4} <= ints        # the loop's size, w's extent (and the partials' count)
    assert 0.25 in floats         # the graph's constant, passed by value
    assert "0.25" not in f.source(x, w) and "12" not in f.source(x, w)


def _sgd_step(w, lr, g):
    return w - lr * g


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_varying_float_is_passed_by_value(monkeypatch, dtype):
    """``w - lr * g`` called with a new Python float each time: the float is traced as an
    input (``compiler.plan_cache``), and the kernel takes it as a scalar argument, so a
    steady-state call uploads nothing and allocates nothing from the driver; the results
    are the CPU's bits (the float rounded to the tensors' dtype, as eager rounds it)."""
    f = ng.jit(_sgd_step)
    rng = np.random.default_rng(0)
    wn, gn = rng.standard_normal(7).astype(dtype), rng.standard_normal(7).astype(dtype)
    w, g = ng.tensor(wn, device="cuda"), ng.tensor(gn, device="cuda")
    for lr in (0.5, 0.25, 0.125):  # the second value traces the float as an input
        out = f(w, lr, g)           # (a loop's steady state: the last result alive)
    assert f.stats.traces == 2
    kernels = _kernels(f, w, 0.125, g)
    for lr in (0.1, 0.2, 0.3, 1e-3, -7.5):
        with _counting(monkeypatch) as counts:
            out = f(w, lr, g)
        assert counts["copies"] == 0 and counts["device_mallocs"] == 0
        assert counts["launches"] == kernels == 1
        want = _sgd_step(ng.tensor(wn), lr, ng.tensor(gn)).numpy()
        assert out.dtype == getattr(ng, dtype) and out.device.type == "cuda"
        np.testing.assert_array_equal(out.cpu().numpy(), want)
    assert f.stats.traces == 2


def test_prepared_launches_write_each_calls_float(monkeypatch):
    """On the direct launch path the float's parameter is swapped per call, as pointers
    are: a ``c_double`` holding this call's value, where the kernel's array would be."""
    import ctypes
    launched = _direct_launches(monkeypatch)
    f = ng.jit(_sgd_step)
    w, g = ng.tensor(np.ones(4), device="cuda"), ng.tensor(np.arange(4.0), device="cuda")
    f(w, 0.5, g)
    f(w, 0.25, g)   # traced with the float as an input; its first launch: the dispatcher
    assert launched == []
    for lr in (0.1, -2.0, 0.1):
        f(w, lr, g)
    assert len(launched) == 3
    for (_, _, _, *params), lr in zip(launched, (0.1, -2.0, 0.1)):
        floats = [p for p in params if type(p) is ctypes.c_double]
        assert [p.value for p in floats] == [lr]
        assert w._data.ptr in params and g._data.ptr in params


def test_an_eager_inplace_op_is_one_launch_and_one_device_copy(monkeypatch):
    """``y.add_(x)`` on CUDA tensors: computed out of place (one launch, a block from the
    cache), then copied into ``y``'s own memory (one device-to-device copy); nothing comes
    from the driver, and ``y`` keeps its buffer."""
    x, y = ng.tensor(X, device="cuda"), ng.tensor(2 * X, device="cuda")
    address = y._data.ptr
    want = 2 * X
    for _ in range(2):
        y.add_(x)
        want = want + X
    with _counting(monkeypatch) as counts:
        y.add_(x)
    want = want + X
    assert counts == {"launches": 1, "copies": 1, "device_mallocs": 0}
    assert y._data.ptr == address and y._version == 3
    np.testing.assert_array_equal(y.cpu().numpy(), want)

"""Devices and autograd semantics on CUDA tensors (Numba's simulator without a GPU):
factories, moves, the device-mismatch error, ``__cuda_array_interface__`` both ways, and
detach / no_grad / hooks / retain_graph / create_graph / value_and_grad / guards through
CUDA plans, each compared with the same code on the CPU."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from cuda_cases import require_simulator

MISMATCH = ("Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!")
A = np.array([0.5, -1.25, 2.0, 0.75, -0.3])


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def both(fn):
    """fn(device) on both devices, results brought to the host."""
    out = {}
    for dev in ("cuda", "cpu"):
        r = fn(dev)
        out[dev] = [None if t is None else (t.detach().cpu().numpy() if isinstance(t, ng.Tensor)
                                            else np.asarray(t)) for t in r]
    for a, b in zip(out["cuda"], out["cpu"]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    return out["cuda"]


# ------------------------------------------------------------------- device model
def test_factories_and_moves():
    x = ng.zeros(2, 3, device="cuda", dtype=ng.float64, requires_grad=True)
    assert x.device == ng.device("cuda", 0) and x.device.type == "cuda" and x.device.index == 0
    assert x.is_leaf and x.requires_grad and x.is_cuda
    assert str(ng.ones(2, device="cuda:0").device) == "cuda:0"
    assert ng.zeros_like(x).device.type == "cuda"
    assert ng.ones_like(x, device="cpu").device.type == "cpu"
    c = ng.tensor(A)
    g = c.to("cuda")
    assert g.device.type == "cuda" and g.cuda() is g and g.to("cuda:0") is g
    np.testing.assert_array_equal(g.cpu().numpy(), A)
    assert c.cuda().cpu().device.type == "cpu"
    assert "device='cuda:0'" in repr(g)
    with pytest.raises(TypeError, match="cpu"):
        g.numpy()
    with pytest.raises(TypeError, match="cuda:0 device type tensor to numpy"):
        np.asarray(g)
    assert g.sum().item() == pytest.approx(A.sum())


def test_to_device_is_differentiable():
    c = ng.tensor(A, requires_grad=True)
    g = c.cuda()
    assert g.grad_fn.name() == "ToCopyBackward0"
    (g * g).sum().backward()
    assert c.grad.device.type == "cpu"
    np.testing.assert_allclose(c.grad.numpy(), 2 * A)


def test_grad_of_cuda_leaf_is_cuda():
    x = ng.tensor(A, device="cuda", requires_grad=True)
    (x.sin() * 3).sum().backward()
    assert x.grad.device == ng.device("cuda:0")
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3 * np.cos(A), rtol=1e-12)


def test_mixing_devices_raises_pytorchs_error():
    x = ng.ones(3, device="cuda")
    with pytest.raises(RuntimeError) as info:
        x + ng.ones(3)
    assert str(info.value) == MISMATCH
    with pytest.raises(RuntimeError, match="same device"):
        ng.ones(3) * x
    assert (x * 2.0 + ng.tensor(1.0).item()).device.type == "cuda"  # Python scalars are fine
    f = ng.jit(lambda a, b: a * b)
    with pytest.raises(RuntimeError) as info:
        f(x, ng.ones(3))
    assert str(info.value) == MISMATCH
    with pytest.raises(RuntimeError, match="same device"):
        ng.jit(lambda a: a * 2, device="cuda")(ng.ones(3))


class _Exporter:
    """A foreign CUDA array: exports the interface of memory it owns."""

    def __init__(self, src):
        self.src = src  # a CUDA tensor standing in for CuPy / PyTorch memory
        self.__cuda_array_interface__ = src.__cuda_array_interface__


def test_cuda_array_interface_both_ways():
    x = ng.tensor(A, device="cuda")
    cai = x.__cuda_array_interface__
    assert cai["shape"] == (5,) and cai["typestr"] == "<f8" and cai["version"] == 3
    assert not hasattr(ng.tensor(A), "__cuda_array_interface__")
    with pytest.raises(RuntimeError, match="requires grad"):
        ng.tensor(A, device="cuda", requires_grad=True).__cuda_array_interface__
    shared = ng.as_tensor(_Exporter(x))     # zero-copy: writes show through
    assert shared.device.type == "cuda"
    assert shared.__cuda_array_interface__["data"] == cai["data"]
    copied = ng.tensor(_Exporter(x))        # ng.tensor copies, as torch.tensor does
    assert copied.__cuda_array_interface__["data"] != cai["data"]
    x.mul_(2.0)
    x2 = ng.tensor(A, device="cuda")
    x2.mul_(2.0)
    np.testing.assert_array_equal(copied.cpu().numpy(), A)
    np.testing.assert_array_equal(x2.cpu().numpy(), 2 * A)


# ---------------------------------------------------------------- jit semantics
def test_detach_and_no_grad_through_cuda_plans():
    @ng.jit
    def f(x):
        return (x * x.detach()).sum() + x.exp().detach().sum()

    def run(dev):
        x = ng.tensor(A, device=dev, requires_grad=True)
        y = f(x)
        y.backward()
        with ng.no_grad():
            z = f(x)
        assert not z.requires_grad
        return [y, x.grad, z]
    both(run)


def test_hook_receives_a_cuda_tensor():
    seen = []

    def hook(g):
        seen.append(g.device.type)
        return g * 2.0

    @ng.jit
    def f(x):
        y = x.tanh()
        y.register_hook(hook)
        return (y * y).sum()

    def run(dev):
        x = ng.tensor(A, device=dev, requires_grad=True)
        f(x).backward()
        return [x.grad]
    both(run)
    assert seen == ["cuda", "cpu"]


def test_retain_graph_and_second_backward():
    f = ng.jit(lambda x: (x.sin() * x).sum())

    def run(dev):
        x = ng.tensor(A, device=dev, requires_grad=True)
        y = f(x)
        y.backward(retain_graph=True)
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()
        return [x.grad]
    both(run)


def test_create_graph_hvp():
    f = ng.jit(lambda x: (x.tanh() * x * x).sum())

    def run(dev):
        x = ng.tensor(A, device=dev, requires_grad=True)
        v = ng.tensor(np.linspace(-1, 1, 5), device=dev)
        (g,) = ng.autograd.grad(f(x), [x], create_graph=True)
        (hv,) = ng.autograd.grad((g * v).sum(), [x])
        assert hv.device.type == ("cuda" if dev == "cuda" else "cpu")
        return [g, hv]
    both(run)


def test_value_and_grad():
    vg = ng.jit(ng.value_and_grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1)))

    def run(dev):
        x = ng.tensor(A, device=dev)
        y = ng.tensor(A[::-1].copy(), device=dev)
        v, (gx, gy) = vg(x, y)
        return [v, gx, gy]
    both(run)


SCALE = 2.0


def test_guards_retrace_on_a_changed_global():
    global SCALE
    f = ng.jit(lambda x: (x * SCALE).sum())
    x = ng.tensor(A, device="cuda")
    assert f(x).item() == pytest.approx(2 * A.sum())
    SCALE = 3.0
    try:
        assert f(x).item() == pytest.approx(3 * A.sum())
        assert f.stats.traces == 2
    finally:
        SCALE = 2.0


def test_captured_cuda_weight_gets_its_grad():
    w = ng.tensor(A, device="cuda", requires_grad=True)
    f = ng.jit(lambda x: (x * w).sum())
    f(ng.ones(5, device="cuda", dtype=ng.float64)).backward()
    assert w.grad.device.type == "cuda"
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.ones(5))


def test_source_shows_cuda_kernels():
    f = ng.jit(lambda x: (x.exp() * 2).sum())
    src = str(f.source(ng.ones(4, device="cuda")))
    assert "@cuda.jit" in src and "cuda.grid(1)" in src and "cuda.shared.array" in src


def test_inplace_after_a_cuda_plan_saved_it_raises_as_torch():
    f = ng.jit(lambda x: (x.sin() * x).sum())
    x = ng.ones(4, device="cuda", requires_grad=True)
    h = x * 1
    y = f(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"numgrad\.cuda\.FloatTensor \[4\]\].*version 1"):
        y.backward()


# PyTorch's engine (validate_outputs) on a root gradient on the wrong device.
WRONG_DEVICE = "invalid gradient at index {} - expected device {} but got {}"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("out_dev, g_dev", [("cuda:0", "cpu"), ("cpu", "cuda:0")])
def test_a_gradient_on_another_device_raises_pytorchs_error(compiled, out_dev, g_dev):
    def f(t):
        return t * 2.0, (t * t).sum()
    fn = ng.jit(f) if compiled else f
    x = ng.tensor(A, device=out_dev, requires_grad=True)
    y, s = fn(x)
    assert (y.grad_fn.name() == "CompiledFunctionBackward") == compiled
    g = ng.ones(5, dtype=ng.float64, device=g_dev)
    with pytest.raises(RuntimeError) as info:
        y.backward(g, retain_graph=True)
    assert str(info.value) == WRONG_DEVICE.format(0, out_dev, g_dev)
    with pytest.raises(RuntimeError) as info:
        ng.autograd.grad(y, x, grad_outputs=g, retain_graph=True)
    assert str(info.value) == WRONG_DEVICE.format(0, out_dev, g_dev)
    with pytest.raises(RuntimeError) as info:
        ng.autograd.grad([s, y], x, grad_outputs=[ng.ones((), device=out_dev), g],
                         retain_graph=True)
    assert str(info.value) == WRONG_DEVICE.format(1, out_dev, g_dev)
    assert x.grad is None
    # A 0-d gradient is moved to its output's device, as PyTorch's engine moves it.
    s.backward(ng.tensor(3.0, dtype=ng.float64, device=g_dev))
    assert x.grad.device == ng.device(out_dev)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 6 * A, rtol=1e-15)


# ------------------------------------------------------------------- special values
SPECIALS = [0.0, -0.0, -1.0, 0.5, 1000.0, -1000.0, np.inf, -np.inf, np.nan, 1e-310]
UNARY = ["exp", "log", "sqrt", "tanh", "sin", "cos", "log1p", "expm1", "sigmoid", "erf",
         "abs", "neg", "relu", "sign"]
BINARY = [ng.div, ng.pow, ng.fmod, ng.hypot, ng.remainder, ng.maximum, ng.minimum]


def _same_ieee(got, want, dtype):
    """NaN where the CPU has NaN, the same infinities and signed zeros, finite values
    within a few ulp (CUDA's math functions are within 1-2 ulp of the CPU's)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    np.testing.assert_array_equal(np.isinf(got[fin]) & (got[fin] > 0),
                                  np.isinf(want[fin]) & (want[fin] > 0))
    zero = fin & (want == 0)
    np.testing.assert_array_equal(got[zero], want[zero])
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    rtol = 1e-5 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the simulator's threads' NumPy)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_values_on_cuda_follow_ieee_as_on_the_cpu(dtype):
    # On a GPU libdevice returns inf, -inf and NaN; the simulator runs kernels as Python,
    # whose math.exp(1000) raised OverflowError and math.log(0) ValueError until the CUDA
    # helpers took NumPy's IEEE functions there.
    xs = np.array(SPECIALS, dtype)
    ys = np.array(SPECIALS[::-1], dtype)

    def values(x, y):
        return ([getattr(x, op)() for op in UNARY] + [f(x, y) for f in BINARY]
                + [x ** 2.5, x / 0.0])

    def loss(*leaves):
        n = len(UNARY)
        terms = [getattr(t, op)() for t, op in zip(leaves[:n], UNARY)]
        terms += [f(t, u) for t, u, f in zip(leaves[n::2], leaves[n + 1::2], BINARY)]
        return sum((t * (i + 1.0)).sum() for i, t in enumerate(terms))

    n_leaves = len(UNARY) + 2 * len(BINARY)
    leaves = [xs if i < len(UNARY) or (i - len(UNARY)) % 2 == 0 else ys
              for i in range(n_leaves)]
    vg = ng.value_and_grad(loss, argnums=tuple(range(n_leaves)))
    want = [v.numpy() for v in values(ng.tensor(xs), ng.tensor(ys))]
    want_g = [g.numpy() for g in vg(*[ng.tensor(a) for a in leaves])[1]]
    for fn, g in ((values, vg), (ng.jit(values), ng.jit(vg))):   # eager, then compiled
        got = fn(ng.tensor(xs, device="cuda"), ng.tensor(ys, device="cuda"))
        for w, v in zip(want, got):
            _same_ieee(v.cpu().numpy(), w, dtype)
        _, grads = g(*[ng.tensor(a, device="cuda") for a in leaves])
        for w, v in zip(want_g, grads):
            _same_ieee(v.cpu().numpy(), w, dtype)

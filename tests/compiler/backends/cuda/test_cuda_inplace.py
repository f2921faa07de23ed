"""In-place ops on CUDA tensors write into the tensor's own device memory (Numba's
simulator): memory shared with another library through DLPack or
``__cuda_array_interface__`` keeps being shared after them, both ways; optimizer steps
keep their parameters' buffers; views and detached aliases follow; autograd's version
checks and hooks behave as on the CPU.

Under the simulator a device pointer is a host address, so what a producer or consumer
sees is read here straight from that address (``_at``), not through numgrad. Expected
values are NumPy's, or numgrad's CPU eager run of the same code (its NumPy arrays share
memory the way PyTorch's tensors do)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cuda_cases import require_simulator

import numgrad as ng

A = np.array([0.5, -1.25, 2.0, 0.75, -0.3, 1.5])
B = np.array([1.5, 0.25, -2.0, 4.0, 0.5, -0.75])


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def _at(ptr, n=A.size, dtype=np.float64):
    """The ``n`` values at device address ``ptr`` (the simulator's: a host address)."""
    raw = (ctypes.c_byte * (n * np.dtype(dtype).itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype).copy()


def _ptr(t):
    return t.__cuda_array_interface__["data"][0]


def _set(t, y):
    t[1:3] = 9.0


def _set_masked(t, y):
    t[t > 0.6] = -4.0


# name: (the in-place op on t, with y another CUDA tensor; its value from NumPy's a, b)
OPS = {
    "add_": (lambda t, y: t.add_(y), lambda a, b: a + b),
    "sub_(alpha)": (lambda t, y: t.sub_(y, alpha=2.0), lambda a, b: a - 2.0 * b),
    "mul_": (lambda t, y: t.mul_(1.5), lambda a, b: a * 1.5),
    "div_": (lambda t, y: t.div_(y), lambda a, b: a / b),
    "+=": (lambda t, y: t.__iadd__(y), lambda a, b: a + b),
    "exp_": (lambda t, y: t.exp_(), np.exp),
    "clamp_": (lambda t, y: t.clamp_(-0.5, 0.6), lambda a, b: np.clip(a, -0.5, 0.6)),
    "zero_": (lambda t, y: t.zero_(), lambda a, b: np.zeros_like(a)),
    "fill_": (lambda t, y: t.fill_(3.25), lambda a, b: np.full_like(a, 3.25)),
    "copy_": (lambda t, y: t.copy_(y), lambda a, b: b.copy()),
    "t[1:3] = v": (_set, lambda a, b: np.concatenate([a[:1], [9.0, 9.0], a[3:]])),
    "t[mask] = v": (_set_masked, lambda a, b: np.where(a > 0.6, -4.0, a)),
    "masked_fill_": (lambda t, y: t.masked_fill_(y > 0.3, 7.0),
                     lambda a, b: np.where(b > 0.3, 7.0, a)),
}


class _NumbaExporter:
    """Another library's device array: a Numba device array, exported through
    ``__cuda_array_interface__`` (under the simulator its memory is a host buffer, so the
    interface is written here; Numba's real device arrays export it themselves)."""

    def __init__(self, values):
        from numba import cuda
        self.array = cuda.to_device(values)
        self.__cuda_array_interface__ = {
            "shape": values.shape, "typestr": values.dtype.str, "strides": None,
            "data": (self.array.__array_interface__["data"][0], False), "version": 3}


@pytest.mark.parametrize("name", sorted(OPS))
def test_an_imported_tensor_is_written_in_its_producers_memory(name):
    op, want = OPS[name]
    expected = want(A, B)
    y = ng.tensor(B, device="cuda")
    # A numgrad CUDA tensor's DLPack capsule...
    src = ng.tensor(A, device="cuda")
    address = _ptr(src)
    t = ng.from_dlpack(src)
    assert op(t, y) in (t, None)    # (``t[i] = v`` returns nothing)
    np.testing.assert_array_equal(_at(address), expected)
    np.testing.assert_array_equal(src.cpu().numpy(), expected)
    assert _ptr(t) == address and t._version == 1
    # ... and a Numba device array's __cuda_array_interface__ (no __dlpack__).
    foreign = _NumbaExporter(A.copy())
    t = ng.from_dlpack(foreign)
    op(t, y)
    np.testing.assert_array_equal(foreign.array.copy_to_host(), expected)
    np.testing.assert_array_equal(t.cpu().numpy(), expected)


def test_consumers_of_an_exported_tensor_see_later_inplace_ops():
    t = ng.tensor(A, device="cuda")
    capsule_reader = ng.from_dlpack(t)           # a DLPack consumer
    address = _ptr(t)   # a __cuda_array_interface__ consumer holds this pointer
    y = ng.tensor(B, device="cuda")
    want = A.copy()
    for name in ("add_", "mul_", "t[1:3] = v", "clamp_", "copy_", "zero_"):
        op, step = OPS[name]
        op(t, y)
        want = step(want, B)
        np.testing.assert_array_equal(_at(address), want)
        np.testing.assert_array_equal(capsule_reader.cpu().numpy(), want)


def _family(dev):
    """A view, a reshape, a detached alias, ``.data`` and an import of one tensor's memory,
    written in place through each in turn: every value after each write, on ``dev``."""
    t = ng.tensor(A, device=dev)
    v, r, d, data = t[1:4], t.reshape(2, 3), t.detach(), t.data
    u = ng.from_dlpack(t)
    snaps = []

    def snap(*xs):
        snaps.extend(x.cpu().numpy().copy() for x in xs)
    t.mul_(2.0)
    snap(t, v, r, d, data, u)
    v.add_(10.0)
    snap(t, v, r, d, data, u)
    r[1] = -1.0
    snap(t, v, r, d, data, u)
    d.sub_(0.5)
    snap(t, v, r, d, data, u)
    # Writes numgrad cannot trace to ``t`` (a ``.data`` alias, another import of the
    # memory) reach everything that shares the memory; ``v``, a copy on CUDA, is not
    # refreshed by them (a limitation: docs/guide.md, CUDA).
    data.clamp_(-3.0, 12.0)
    snap(t, r, d, data, u)
    u.mul_(-1.0)
    snap(t, r, d, data, u)
    return snaps


def test_views_aliases_and_imports_see_every_write_as_on_the_cpu():
    got, want = _family("cuda"), _family("cpu")
    assert len(got) == len(want) == 34
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_view_keeps_its_own_memory_through_writes():
    """A view is a copy on CUDA: written in place, and refreshed after a write to its
    base, in its own memory, so what was exported from it follows."""
    t = ng.tensor(A, device="cuda")
    v = t[2:5]
    base, view = _ptr(t), _ptr(v)
    v.mul_(3.0)
    want = np.concatenate([A[:2], A[2:5] * 3.0, A[5:]])
    assert (_ptr(t), _ptr(v)) == (base, view)
    np.testing.assert_array_equal(_at(view, 3), want[2:5])
    np.testing.assert_array_equal(_at(base), want)
    t.sub_(1.0)
    t[3] = 8.0
    want = want - 1.0
    want[3] = 8.0
    assert (_ptr(t), _ptr(v)) == (base, view)
    np.testing.assert_array_equal(_at(view, 3), want[2:5])
    np.testing.assert_array_equal(_at(base), want)


@pytest.mark.parametrize("make", [
    lambda ps: ng.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
    lambda ps: ng.optim.Adam(ps, lr=0.05, weight_decay=0.01, amsgrad=True),
], ids=["SGD", "Adam"])
def test_optimizer_steps_keep_cuda_parameters_buffers(make):
    def run(dev):
        w = ng.nn.Parameter(ng.tensor(A, device=dev))
        b = ng.nn.Parameter(ng.tensor(B[:2], device=dev))
        opt = make([w, b])
        def where():   # (the CPU's arrays are written in place by NumPy)
            return [(p._data, _ptr(p.detach())) for p in (w, b)] if dev == "cuda" else []
        before = where()
        for _ in range(3):
            opt.zero_grad()
            ((w * w).sum() * b.sum() + (w.exp() * b[0]).sum()).backward()
            opt.step()
        assert where() == before   # the same payloads at the same addresses
        return w.detach().cpu().numpy(), b.detach().cpu().numpy()
    for g, c in zip(run("cuda"), run("cpu")):
        np.testing.assert_allclose(g, c, rtol=1e-13, atol=1e-15)


def test_an_inplace_op_on_a_saved_tensor_still_raises_and_gradients_are_right():
    def run(dev):
        x = ng.tensor(A, device=dev, requires_grad=True)
        w = ng.tensor(B, device=dev, requires_grad=True)
        h = x * 1.0
        h.mul_(w)          # MulBackward keeps h's old value (copied: the write follows)
        v = h[1:4]
        v.mul_(w[1:4])     # through a view: the base's history is rewritten
        h.exp_()           # ExpBackward keeps its result: h itself
        h.sum().backward()
        y = x.exp()
        z = y * 2.0
        y.add_(1.0)        # y was saved by ExpBackward: the next backward must refuse
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
        return x.grad.cpu().numpy(), w.grad.cpu().numpy()
    for g, c in zip(run("cuda"), run("cpu")):
        np.testing.assert_allclose(g, c, rtol=1e-13)


def test_a_hook_may_scale_the_gradient_in_place_and_the_seed_stays_one():
    x = ng.tensor(A, device="cuda", requires_grad=True)
    loss = (x * 2.0).sum()
    loss.register_hook(lambda g: g.mul_(3.0))   # the seed backward() made: rebound
    loss.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(A.shape, 6.0))  # as torch
    x.grad = None
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(A.shape, 2.0))
    y = x * 1.0
    y.register_hook(lambda g: g.add_(1.0))     # an ordinary gradient: written in place
    x.grad = None
    (y * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(A.shape, 3.0))


def test_a_jitted_inplace_op_writes_the_callers_buffer():
    inc = ng.jit(lambda t, y: t.mul_(y).add_(1.0))
    src = ng.tensor(A, device="cuda")
    t = ng.from_dlpack(src)
    v, r = t[1:4], t.reshape(3, 2)     # a view (a copy on CUDA) and a reshape
    address = _ptr(t)
    y = ng.tensor(B, device="cuda")
    for k in range(2):
        inc(t, y)
        assert _ptr(t) == address and t._version == 2 * (k + 1)
    want = (A * B + 1.0) * B + 1.0
    np.testing.assert_allclose(_at(address), want, rtol=1e-15)
    np.testing.assert_allclose(v.cpu().numpy(), want[1:4], rtol=1e-15)
    np.testing.assert_allclose(r.cpu().numpy(), want.reshape(3, 2), rtol=1e-15)

    def f(h):   # the plan's backward keeps h's value from before the write (it may
        s = h.exp().sum()   # recompute exp(h) rather than save it)
        h.mul_(2.0)
        return s

    jf = ng.jit(f)
    for dev in ("cuda", "cpu"):
        x = ng.tensor(A, device=dev, requires_grad=True)
        h = x * 1.0
        jf(h).backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(A), rtol=1e-15)
        np.testing.assert_allclose(h.detach().cpu().numpy(), 2 * A, rtol=1e-15)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_second_backward_accumulates_into_the_same_grad_as_on_the_cpu(jit):
    # PyTorch adds a later gradient into the .grad tensor already there (outside
    # create_graph), so a reference to it, or memory exported from it, sees the sum.
    def f(x):
        return (x * x).sum()
    f = ng.jit(f) if jit else f

    def run(dev):
        x = ng.tensor(A, device=dev, requires_grad=True)
        f(x).backward()
        g = x.grad
        where = _ptr(g) if dev == "cuda" else None
        version = g._version
        f(x).backward()
        f(x * 3.0).backward()
        assert x.grad is g and g._version > version
        if dev == "cuda":
            assert _ptr(g) == where
            np.testing.assert_allclose(_at(where), g.cpu().numpy(), rtol=0)
        return g.cpu().numpy()
    np.testing.assert_allclose(run("cuda"), run("cpu"), rtol=1e-15)
    # create_graph builds a graph through the sum, so .grad is a new tensor, as in torch
    x = ng.tensor(A, device="cuda", requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    (x * x).sum().backward(create_graph=True)
    assert x.grad is not g and x.grad.requires_grad

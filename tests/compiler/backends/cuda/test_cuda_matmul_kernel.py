"""The register-blocked CUDA matmul kernel (``backends.cuda.matmul_kernel``) in Numba's
simulator, on small odd shapes (every thread runs as Python: tiny grids only).

Each blocking is launched directly on shapes that leave partial tiles in every
dimension, with each operand read plain and from its transpose's storage, batched,
shared by the batches, and in float32, float64 and int64, against ``np.matmul``; and a
float32 product is bit-equal to summing its K products in increasing order, one
rounding per step (the simulator does not fuse multiply-adds): the order is fixed.
Through ``@ng.jit`` the device now runs layouts the host used to (a 1-d left side with
a batched right one, int64), values and gradients equal to the CPU's. The shape-generic
kernel (extents as arguments) gives the literal kernel's bits in every blocking. The
kernel's registers and spills for sm_90 are checked by ``test_cuda_ptx.py``.
"""
from __future__ import annotations

import numpy as np
import pytest
from cuda_cases import require_simulator

import numgrad as ng
from numgrad.compiler.backends.cuda import matmul_kernel as mk
from numgrad.compiler.backends.cuda.renderer import HEADER, Values


@pytest.fixture(autouse=True, scope="module")
def _sim():
    require_simulator()


def _launch(dtype, dims, ta, tb, til, A, B, generic=False):
    """C of ``dims`` computed by the kernel for ``til``; A (B): [batch or 1, m, k]
    ([batch or 1, k, n]) arrays, stored transposed where ``ta`` (``tb``). ``generic``:
    the shape-generic kernel, its extents passed as arguments."""
    from numba import cuda
    vals = Values((dims.batch, dims.m, dims.k, dims.n), generic, mk._extent_name)
    body = "\n".join("    " * d + line for d, line in mk.kernel_lines(dtype, dims, ta, tb, til,
                                                                     vals.prod))
    ns = {}
    src = f"{HEADER}\n@cuda.jit\ndef kern({', '.join(['a', 'b', 'c', *vals.params])}):\n{body}\n"
    exec(compile(src, "<kernel>", "exec"), ns)  # noqa: S102  (the kernel under test)
    assert generic == bool(vals.params) and (" m, k, n" in src) == generic
    a = np.ascontiguousarray(A.swapaxes(-1, -2) if ta else A).reshape(-1)
    b = np.ascontiguousarray(B.swapaxes(-1, -2) if tb else B).reshape(-1)
    c = cuda.to_device(np.full(dims.batch * dims.m * dims.n, 77, dtype))
    grid, block = mk.launch_shape(dims, til)
    ns["kern"][grid, block](cuda.to_device(a), cuda.to_device(b), c,
                            *[v for v, _ in vals.params.values()])
    return c.copy_to_host().reshape(dims.batch, dims.m, dims.n)


# (dtype, tiling, (batch, m, k, n, A batched, B batched), A transposed, B transposed)
CASES = [("float32", mk.SMALL, (1, 3, 5, 7, False, False), False, False),
         ("float32", mk.SMALL, (1, 3, 5, 7, False, False), True, False),
         ("float32", mk.SMALL, (1, 3, 5, 7, False, False), False, True),
         ("float32", mk.SMALL, (1, 3, 5, 7, False, False), True, True),
         ("float32", mk.LARGE, (1, 3, 5, 7, False, False), False, False),
         ("float64", mk.LARGE, (1, 17, 33, 9, False, False), True, True),
         ("float64", mk.SMALL, (2, 17, 33, 9, True, True), False, True),
         ("float64", mk.SMALL, (2, 5, 18, 3, True, False), True, False),
         ("int64", mk.SMALL, (2, 5, 18, 3, False, True), False, False)]


@pytest.mark.parametrize("dtype, til, dims, ta, tb", CASES)
def test_kernel_matches_numpy(dtype, til, dims, ta, tb):
    dims = mk.Dims(*dims)
    rng = np.random.default_rng(dims.m * dims.k)
    A = rng.integers(-4, 5, (dims.batch if dims.x_batched else 1, dims.m, dims.k))
    B = rng.integers(-4, 5, (dims.batch if dims.y_batched else 1, dims.k, dims.n))
    if dtype != "int64":
        A = A + rng.standard_normal(A.shape)
        B = B * rng.standard_normal(B.shape)
    A, B = A.astype(dtype), B.astype(dtype)
    got = _launch(dtype, dims, ta, tb, til, A, B)
    want = np.broadcast_to(np.matmul(A, B), got.shape)
    if dtype == "int64":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_the_generic_kernel_gives_the_static_kernels_bits_in_every_blocking():
    """A shape-generic plan's kernel (extents as arguments) computes what the literal one
    does, bit for bit, in each blocking the launch may pick for a shape (each element
    sums its K products in the same order in all of them)."""
    dims = mk.Dims(2, 17, 33, 9, True, False)
    rng = np.random.default_rng(11)
    A = rng.standard_normal((2, 17, 33)).astype(np.float32)
    B = rng.standard_normal((1, 33, 9)).astype(np.float32)
    want = _launch("float32", dims, True, True, mk.SMALL, A, B)
    for til in mk.TILINGS:
        np.testing.assert_array_equal(_launch("float32", dims, True, True, til, A, B,
                                              generic=True), want)
    np.testing.assert_allclose(want, np.matmul(A, B), rtol=1e-5, atol=1e-5)


def test_each_element_sums_its_k_products_in_order():
    dims = mk.Dims(1, 17, 33, 9, False, False)
    rng = np.random.default_rng(7)
    A = (rng.standard_normal((1, 17, 33)) * 10 ** rng.uniform(-3, 3, (1, 17, 33)))
    B = rng.standard_normal((1, 33, 9))
    A, B = A.astype(np.float32), B.astype(np.float32)
    got = _launch("float32", dims, False, False, mk.LARGE, A, B)[0]
    want = np.zeros((17, 9), np.float32)
    for k in range(33):   # one rounding per product and per sum, k increasing
        want = (want + (A[0, :, k:k + 1] * B[0, k:k + 1, :]).astype(np.float32)).astype(
            np.float32)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(want, (A[0] @ B[0]))   # the order is visible in the bits


def test_the_blocking_and_grid_cover_the_output():
    small, big = mk.Dims(1, 256, 784, 512, False, False), mk.Dims(4, 512, 64, 512, True, True)
    assert mk.tiling(small) is mk.SMALL and mk.tiling(big) is mk.LARGE
    for dims in (small, big, mk.Dims(3, 17, 1, 65, True, False)):
        til = mk.tiling(dims)
        (gx, gy, gz), (tx, ty) = mk.launch_shape(dims, til)
        assert gx * til.bn >= dims.n > (gx - 1) * til.bn
        assert gy * til.bm >= dims.m > (gy - 1) * til.bm and gz == dims.batch
        assert (tx * til.tn, ty * til.tm) == (til.bn, til.bm)


def _layouts(x, w, v, a, b):
    h = (x @ w.T).tanh()                       # W.T read in place
    y = v @ a                                  # (k,) @ (batch, k, n): on the device now
    z = (a @ b).sin()                          # bmm
    return h.sum() + y.sum() * 0.5 + z.sum() + (v @ v)


def test_jit_layouts_run_on_the_device_and_match_the_cpu():
    rng = np.random.default_rng(3)
    shapes = [(3, 5), (4, 5), (6,), (2, 6, 3), (2, 3, 5)]
    data = [rng.standard_normal(s) for s in shapes]
    dev = [ng.tensor(d, device="cuda", requires_grad=True) for d in data]
    cpu = [ng.tensor(d, requires_grad=True) for d in data]
    f = ng.jit(_layouts)
    out = f(*dev)
    out.backward()
    ref = _layouts(*cpu)
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
    for a, b in zip(dev, cpu):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)
    plan, _ = f._plan(tuple(dev), {})
    steps = [s for p in plan.programs for s in p.cuda_steps]
    host = [s[1].prim.name for s in steps if s[0] == "host"]
    assert "matmul" not in host
    assert sum(s[0] == "tiled_mm" for s in steps) >= 4


def test_int64_matmul_runs_on_the_device():
    a = np.arange(-6, 9).reshape(3, 5)
    b = (np.arange(10).reshape(5, 2) * 3 - 7)
    got = ng.tensor(a, device="cuda") @ ng.tensor(b, device="cuda")
    assert got.dtype == ng.int64 and got.device.type == "cuda"
    np.testing.assert_array_equal(got.cpu().numpy(), a @ b)

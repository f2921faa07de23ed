"""CUDA matmul through cuBLAS (``backends.cuda.blas``), without a GPU or the library.

- **The argument mapping** (row-major C = A @ B as column-major C^T = B^T A^T) is run by
  a NumPy column-major gemm written here from cuBLAS's definition (op(A) m x k read at
  ``a[i + j * lda]``, strided batches) on the operands' flat buffers, against
  ``np.matmul``, for every layout a device matmul can have.
- **The choice**: the simulator takes the kernel; ``NUMGRAD_CUDA_MATMUL=cublas`` where
  nvmath-python is missing or the library does not load is one clear error; ``auto``
  then falls back; a value that is not a choice names the variable.
- **The calls**: a stand-in ``nvmath.bindings.cublas`` (the simulator's device pointers
  are host addresses, so it can compute with the same column-major gemm) records the
  handle's set-up and every gemm: the routine and arguments the mapping gives, values
  equal to NumPy's, ``source()`` naming the routine, no allocation in a steady call.
- **Shape-generic plans**: from a second shape, the source names no extent (one module
  for every shape) while each plan calls cuBLAS with its own shape's arguments, made
  once per plan, not per call; and the kernel path and the cuBLAS path render
  different sources, so the disk cache (which names a module by its source) never
  hands one path's module to the other.

None of this runs cuBLAS itself: that needs a GPU.
"""
from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from blas_stand_in import colmajor_gemm, stand_in_nvmath
from cuda_cases import require_simulator

import numgrad as ng
from numgrad.compiler.backends.cuda import blas, matmul_kernel
from numgrad.compiler.ir import Eqn, Var
from numgrad.ops.linalg import matmul_p, matmul_shape


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv(blas.FLAG, raising=False)
    blas.reset()
    yield
    blas.reset()


def _eqn(xs, ys, dtype="float64"):
    x, y = Var(0, xs, dtype), Var(1, ys, dtype)
    return Eqn(matmul_p, [x, y], {}, Var(2, matmul_shape(xs, ys), dtype))


# (x shape, y shape): plain, 1-d either side or both, batches on both sides, on one side
# only (either), all-1 batch dims broadcast, several batch dims.
LAYOUTS = [((3, 5), (5, 7)), ((1, 4), (4, 1)), ((5,), (5, 7)), ((3, 5), (5,)), ((6,), (6,)),
           ((2, 3, 5), (2, 5, 7)), ((2, 3, 5), (5, 7)), ((3, 5), (2, 5, 7)),
           ((2, 3, 5), (5,)), ((5,), (2, 5, 7)), ((1, 3, 5), (2, 5, 7)),
           ((2, 3, 5), (1, 1, 5, 7)), ((2, 2, 3, 5), (2, 2, 5, 4))]


# ... each with every operand of 2 or more dims also read from its transpose's storage.
CASES = [(xs, ys, tx, ty) for xs, ys in LAYOUTS
         for tx, ty in itertools.product([False, True], repeat=2)
         if (len(xs) > 1 or not tx) and (len(ys) > 1 or not ty)]


@pytest.mark.parametrize("xs, ys, tx, ty", CASES)
def test_the_mapping_computes_matmul(xs, ys, tx, ty):
    rng = np.random.default_rng(len(xs) * 10 + len(ys))
    x, y = rng.standard_normal(xs), rng.standard_normal(ys)
    dims = matmul_kernel.matmul_dims(_eqn(xs, ys))
    g = blas.gemm_args(dims, tx, ty)
    # The buffers as numgrad holds them: C-ordered, a transposed operand as its source's.
    xbuf = np.ascontiguousarray(x.swapaxes(-1, -2) if tx else x).reshape(-1)
    ybuf = np.ascontiguousarray(y.swapaxes(-1, -2) if ty else y).reshape(-1)
    want = np.matmul(x, y)
    c = np.full(max(want.size, 1), np.nan)
    colmajor_gemm(g, ybuf, xbuf, c)   # cuBLAS's A is numgrad's right operand
    np.testing.assert_allclose(c.reshape(want.shape), want, rtol=1e-12, atol=1e-12)
    assert blas.routine("float32", g) == ("sgemm_strided_batched" if g.batch > 1 else "sgemm")


def test_general_batch_broadcasts_stay_on_the_host():
    assert matmul_kernel.matmul_dims(_eqn((2, 1, 3, 5), (1, 4, 5, 7))) is None
    assert matmul_kernel.matmul_dims(_eqn((2, 1, 3, 5), (4, 5, 7))) is None
    assert matmul_kernel.matmul_dims(_eqn((3, 5), (5, 7), "bool")) is None


# ------------------------------------------------------------------ the choice
def _mm(x, y):
    return (x @ y).sum()


def _cuda(shape, seed, dtype=ng.float32):
    return ng.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype,
                     device="cuda")


def test_the_simulator_takes_the_kernel():
    require_simulator()
    e = _eqn((3, 5), (5, 7), "float32")
    assert blas.choose(e) == "kernel"
    assert "simulator" in blas.unavailable()
    src = ng.jit(_mm).source(_cuda((3, 5), 0), _cuda((5, 7), 1))
    assert "_matmul" in src and "cuBLAS" not in src


@pytest.fixture
def _real_device(monkeypatch):
    """As on a machine with a GPU, for the choice only (kernels still run simulated)."""
    require_simulator()
    monkeypatch.setattr(blas, "_simulated", lambda: False)


def test_forcing_cublas_without_nvmath_is_a_clear_error(monkeypatch, _real_device):
    monkeypatch.setitem(sys.modules, "nvmath", None)    # import nvmath raises ImportError
    monkeypatch.setenv(blas.FLAG, "cublas")
    with pytest.raises(RuntimeError) as info:
        ng.jit(_mm)(_cuda((3, 5), 0), _cuda((5, 7), 1))
    msg = str(info.value)
    assert "NUMGRAD_CUDA_MATMUL=cublas" in msg and "nvmath-python cannot be imported" in msg
    assert "numgrad[cublas]" in msg and "auto" in msg
    monkeypatch.setenv(blas.FLAG, "auto")   # the same process, unforced: the kernel
    x, y = _cuda((3, 5), 0), _cuda((5, 7), 1)
    assert "cuBLAS" not in ng.jit(_mm).source(x, y)
    np.testing.assert_allclose(ng.jit(_mm)(x, y).item(), _mm(x.cpu(), y.cpu()).item(),
                               rtol=1e-5)


def test_forcing_cublas_where_the_library_does_not_load(monkeypatch, _real_device):
    fake = stand_in_nvmath(monkeypatch)

    def missing(prop):
        raise RuntimeError("libcublas.so.12: cannot open shared object file")
    fake.get_property = missing
    monkeypatch.setenv(blas.FLAG, "cublas")
    with pytest.raises(RuntimeError, match=r"cuBLAS library did not load .*libcublas.so.12"):
        blas.choose(_eqn((3, 5), (5, 7), "float32"))
    assert not fake.calls


def test_a_flag_value_that_is_no_choice_names_the_variable(monkeypatch):
    monkeypatch.setenv(blas.FLAG, "cuBLAS-please")
    with pytest.raises(ValueError, match="NUMGRAD_CUDA_MATMUL='cuBLAS-please'.*auto, cublas"):
        blas.choose(_eqn((3, 5), (5, 7), "float32"))


def test_kernel_forced_and_what_cublas_does_not_take(monkeypatch, _real_device):
    stand_in_nvmath(monkeypatch)
    assert blas.choose(_eqn((3, 5), (5, 7), "float32")) == "cublas"
    assert blas.choose(_eqn((3, 5), (5, 7), "int64")) == "kernel"     # no integer gemm
    assert blas.choose(_eqn((3, 0), (0, 7), "float64")) == "kernel"   # an empty K
    monkeypatch.setenv(blas.FLAG, "kernel")
    assert blas.choose(_eqn((3, 5), (5, 7), "float32")) == "kernel"
    assert blas.STATS == {"cublas": 1, "kernel": 3}


def _linear(x, w, b):
    return ((x @ w.T + b).tanh() @ ng.ones(4, dtype=x.dtype)).sum()


def test_a_plan_calls_cublas_with_the_mapped_arguments(monkeypatch, _real_device):
    fake = stand_in_nvmath(monkeypatch)
    x, w, b = _cuda((5, 3), 2), _cuda((4, 3), 3), _cuda(4, 4)
    w.requires_grad_()
    f = ng.jit(_linear)
    src = f.source(x, w, b)
    assert "cuBLAS sgemm (nvmath)" in src and "transa=T" in src
    assert "_matmul" not in src and "_gather" not in src   # W.T is read in place: no copy
    out = f(x, w, b)
    out.backward()
    xc, wc, bc = x.cpu(), w.detach().cpu().requires_grad_(), b.cpu()
    ref = _linear(xc, wc, bc)
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.cpu().numpy(), wc.grad.numpy(), rtol=1e-5, atol=1e-6)
    # The handle: made once, on numgrad's stream, host scalars, its workspace numgrad's.
    names = [c[0] for c in fake.calls]
    assert names.count("create") == 1
    setup = {c[0]: c[1] for c in fake.calls if c[0].startswith("set_")}
    assert setup["set_stream"] == (0xC0B1A5, 0)
    assert setup["set_pointer_mode"] == (0xC0B1A5, blas.POINTER_MODE_HOST)
    assert setup["set_workspace"][1] == blas.handle(0).workspace.ptr
    assert setup["set_workspace"][2] == blas.WORKSPACE_BYTES[False]   # the simulator: cc 5.2
    assert names.index("set_workspace") > names.index("set_stream")
    # The forward's x @ W.T: the gemm the mapping gives, numgrad's W (as W.T) first.
    dims = matmul_kernel.matmul_dims(_eqn((5, 3), (3, 4), "float32"))
    g = blas.gemm_args(dims, False, True)
    (call,) = [c[1] for c in fake.calls if c[0] == "sgemm" and c[1][3:6] == (g.m, g.n, g.k)]
    assert call[1:3] == (g.transa, g.transb) == (blas.OP_T, blas.OP_N)
    assert (call[7], call[8], call[10]) == (w.detach()._data.ptr, g.lda, g.ldb)
    # A steady call (the second compiles call + backward as one pass): the same handle,
    # no raw device allocation.
    f(x, w, b).backward()
    fake.calls.clear()
    before = ng.cuda.memory_stats()["device_mallocs"]
    f(x, w, b).backward()
    assert "create" not in [c[0] for c in fake.calls]
    assert any(c[0] == "sgemm" for c in fake.calls)
    assert ng.cuda.memory_stats()["device_mallocs"] == before


def test_batches_take_the_strided_batched_routine(monkeypatch, _real_device):
    fake = stand_in_nvmath(monkeypatch)
    a = _cuda((2, 3, 5), 5, ng.float64)
    w = _cuda((5, 4), 6, ng.float64)
    f = ng.jit(_mm)
    assert "cuBLAS dgemm_strided_batched (nvmath)" in f.source(a, w)
    np.testing.assert_allclose(f(a, w).item(), _mm(a.cpu(), w.cpu()).item(), rtol=1e-12)
    (call,) = [c for c in fake.calls if c[0] == "dgemm_strided_batched"]
    stride_a, stride_b, count = call[1][9], call[1][12], call[1][-1]
    assert (stride_a, stride_b, count) == (0, 15, 2)   # W shared by both batches
    assert blas.status()["steps"]["cublas"] >= 1 and blas.status()["cublas"] is True


def test_a_handle_that_cannot_start_says_how_to_run_without_it(monkeypatch, _real_device):
    fake = stand_in_nvmath(monkeypatch)

    def refuse():
        raise RuntimeError("CUBLAS_STATUS_NOT_INITIALIZED")
    fake.create = refuse
    with pytest.raises(RuntimeError, match=r"cuBLAS could not start on cuda:0 .*"
                                           r"NOT_INITIALIZED.*NUMGRAD_CUDA_MATMUL=kernel"):
        ng.jit(_mm)(_cuda((3, 5), 0), _cuda((5, 7), 1))


# ------------------------------------------------------------------ shape-generic plans
def _affine(x, w):
    return (x @ w.T).tanh().sum()


# (x, w) shapes of one rank pattern: the first makes a static plan, the others generic.
AFFINE_SHAPES = [((5, 3), (4, 3)), ((7, 6), (2, 6)), ((3, 9), (8, 9))]


def _affine_args(shapes, seed, device="cuda"):
    rng = np.random.default_rng(seed)
    return [ng.tensor(rng.standard_normal(s), dtype=ng.float32, device=device)
            for s in shapes]


def _gemm_key(call):
    # An sgemm call without its device pointers: routine, ops, m, n, k, lda, ldb, ldc.
    name, a = call
    return name, a[1:6], a[8], a[10], a[13]


def test_a_generic_plan_calls_cublas_with_each_shapes_arguments(monkeypatch, _real_device):
    fake = stand_in_nvmath(monkeypatch)
    made = []
    gemm_args = blas.gemm_args
    monkeypatch.setattr(blas, "gemm_args", lambda *a: made.append(a) or gemm_args(*a))
    vg = ng.jit(ng.value_and_grad(_affine, argnums=1))
    sources = []
    for k, shapes in enumerate(AFFINE_SHAPES):
        x, w = _affine_args(shapes, k)
        fake.calls.clear()
        value, grad = vg(x, w)
        xc, wc = _affine_args(shapes, k, "cpu")
        wc.requires_grad_()
        ref = _affine(xc, wc)
        ref.backward()
        np.testing.assert_allclose(value.item(), ref.item(), rtol=1e-5)
        np.testing.assert_allclose(grad.cpu().numpy(), wc.grad.numpy(), rtol=1e-4, atol=1e-5)
        # The forward x @ W.T as the mapping gives it for this shape (W.T read in place).
        g = gemm_args(matmul_kernel.matmul_dims(
            _eqn(shapes[0], shapes[1][::-1], "float32")), False, True)
        want = (g.transa, g.transb, g.m, g.n, g.k)
        (call,) = [c[1] for c in fake.calls if c[0] == "sgemm" and c[1][1:6] == want]
        assert (call[8], call[10], call[13]) == (g.lda, g.ldb, g.ldc)
        assert vg.stats.compiles == min(k + 1, 2)
        sources.append(vg.source(x, w))
        # Bound once per plan: later calls make no gemm arguments, and call the same gemms.
        gemms = [_gemm_key(c) for c in fake.calls if c[0] == "sgemm"]
        n_made = len(made)
        fake.calls.clear()
        vg(x, w)
        vg(x, w)
        assert len(made) == n_made and [_gemm_key(c) for c in fake.calls] == 2 * gemms
    static, generic, later = sources
    assert "cuBLAS sgemm (nvmath)" in generic and later == generic
    assert "m=" in static and "m=" not in generic   # the generic plan spells no extent


def test_the_matmul_path_is_part_of_the_kernel_modules_name(monkeypatch, _real_device):
    """The disk cache names a module by its source: cuBLAS and the kernel render different
    sources for the same function and shapes, static and shape-generic, so a module made
    for one path is never loaded for the other."""
    stand_in_nvmath(monkeypatch)
    names = {}
    for path in ("cublas", "kernel"):
        monkeypatch.setenv(blas.FLAG, path)
        f = ng.jit(ng.value_and_grad(_affine, argnums=1))
        for k, shapes in enumerate(AFFINE_SHAPES[:2]):
            plan = f._plan(tuple(_affine_args(shapes, k)), {})[0]
            names[path, k] = {m for p in plan.programs for m in p.modules}
            src = plan.source()
            assert ("cuBLAS sgemm" in src) == (path == "cublas")
            assert ("_matmul" in src) == (path == "kernel")
    for k in range(2):
        assert not names["cublas", k] & names["kernel", k]

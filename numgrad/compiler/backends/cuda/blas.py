"""backends.cuda.blas: CUDA matmul through cuBLAS, with nvmath-python's low-level bindings.

Room: compiler. An optional path (``pip install numgrad[cublas]``: nvmath-python and the
cuBLAS wheel): the renderer asks ``choose`` for every device matmul
(``matmul_kernel.matmul_dims``), and where it says ``"cublas"`` the step is a call of
``nvmath.bindings.cublas`` on the raw device pointers of numgrad's buffers instead of
numgrad's kernel (``matmul_kernel``). ``compiled.source(...)`` shows which: a cuBLAS
step is a comment naming the routine and its arguments.

- **When**: ``NUMGRAD_CUDA_MATMUL`` (read when a plan is rendered) ``auto`` (default)
  takes cuBLAS when nvmath-python imports, the device is real (Numba's simulator runs no
  library code) and the library loads, probed once per process; ``kernel`` never does;
  ``cublas`` must, and raises a clear error where it cannot. float32 and float64 only:
  int64 matmul, and products over an empty K, stay on the kernel either way.
- **Layout**: numgrad's buffers are C-ordered and cuBLAS is column-major, so the
  row-major ``C = A @ B`` is computed as ``C^T = B^T A^T`` (``gemm_args``): a row-major
  matrix's buffer read column-major is its transpose, so no operand is copied, and an
  operand the renderer reads from its transpose's storage (``W.T`` of a linear layer)
  flips its op flag. Batches (``bmm``, batch dims, one side without them) are one
  strided-batched call, stride 0 for the side every batch shares; 1-d operands are
  gemms with m or n = 1.
- **Shapes**: a step holds its plan's ``gemm_args``, bound into the call once per plan
  (``prepare``), so once per shape; a shape-generic plan's source comment names no
  extent, so every shape of it shares one module.
- **The handle**: one per device, made at the first prepared step on it and kept for
  the process: bound to the stream every numgrad kernel runs on (the default stream),
  host pointer mode (alpha and beta live in two host scalars made when the step is
  prepared), the default math mode (IEEE float32, no TF32, as PyTorch's default), and
  its workspace a block of numgrad's caching allocator (32 MiB from compute capability
  9.0, 4 MiB before, the sizes cuBLAS's documentation recommends). A call allocates
  nothing else and never synchronises the host.
- **Determinism**: cuBLAS gives the same bits on every run for a given GPU model and
  library version when one stream uses the handle, which is the case here.

This path has not been run on a GPU by its tests: they check the argument mapping
against a NumPy column-major gemm, the choice, and the calls made, with a stand-in
``nvmath`` module (tests/compiler/backends/cuda/test_cuda_blas.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import numgrad.config as config
from numgrad.cuda import allocator
from numgrad.cuda import array as cuda_array
from numgrad.cuda import device as cuda_device
from numgrad.compiler.backends.cuda.matmul_kernel import matmul_dims
from numgrad.compiler.schedule import _size

FLAG = "NUMGRAD_CUDA_MATMUL"
OP_N, OP_T = 0, 1                 # cublasOperation_t
POINTER_MODE_HOST = 0             # cublasPointerMode_t
DEFAULT_MATH = 0                  # cublasMath_t
MAJOR, MINOR, PATCH = 0, 1, 2     # libraryPropertyType
INT32_MAX = 2 ** 31 - 1
WORKSPACE_BYTES = {True: 32 << 20, False: 4 << 20}   # compute capability >= 9.0 or not
_ROUTINES = {("float32", False): "sgemm", ("float64", False): "dgemm",
             ("float32", True): "sgemm_strided_batched",
             ("float64", True): "dgemm_strided_batched"}

STATS = {"cublas": 0, "kernel": 0}   # device matmul steps rendered per path, this process
_PROBE = {}                           # "result": (why not or None, library version)
_HANDLES = {}                         # device index -> Handle


@dataclass(frozen=True)
class Gemm:
    """The arguments of one cuBLAS gemm (strided batched when ``batch > 1``), column-major,
    that computes the row-major ``C = A @ B`` as ``C^T = B^T A^T``: cuBLAS's first operand
    is numgrad's right one (``B``), its second numgrad's left one (``A``)."""
    transa: int
    transb: int
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    stride_a: int
    stride_b: int
    stride_c: int
    batch: int


def gemm_args(dims, x_transposed=False, y_transposed=False) -> Gemm:
    """The ``Gemm`` for a device matmul of ``dims`` (``matmul_kernel.Dims``):
    ``x_transposed``/``y_transposed``: the left (right) operand is read from the storage
    of its transpose, ``(k, m)`` (``(n, k)``) row-major."""
    batch, m, k, n, xb, yb = dims
    # cuBLAS's A is numgrad's B: B (k, n) row-major is B^T (n x k) column-major, leading
    # dim n; its transpose's storage (n, k) row-major reads as B (k x n), leading dim k.
    transa, lda = (OP_T, k) if y_transposed else (OP_N, n)
    # cuBLAS's B is numgrad's A (m, k): read column-major it is A^T (k x m), leading dim
    # k; from its transpose's storage (k, m) it reads as A (m x k), leading dim m.
    transb, ldb = (OP_T, m) if x_transposed else (OP_N, k)
    return Gemm(transa=transa, transb=transb, m=n, n=m, k=k, lda=max(1, lda),
                ldb=max(1, ldb), ldc=max(1, n), stride_a=k * n if yb else 0,
                stride_b=m * k if xb else 0, stride_c=m * n, batch=batch)


def routine(dtype, g) -> str:
    """The ``nvmath.bindings.cublas`` function a gemm of ``dtype`` calls."""
    return _ROUTINES[(np.dtype(dtype).name, g.batch > 1)]


# ------------------------------------------------------------------ availability
def _simulated():
    return cuda_device.simulated()


def _bindings():
    from nvmath.bindings import cublas
    return cublas


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def _probe():
    if _simulated():
        return ("Numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1), and it runs no "
                "library code"), None
    try:
        cublas = _bindings()
    except Exception as exc:  # noqa: BLE001  (not installed, or an import that fails)
        return (f"nvmath-python cannot be imported ({_first_line(exc)}); "
                "pip install 'numgrad[cublas]'"), None
    try:
        version = tuple(int(cublas.get_property(p)) for p in (MAJOR, MINOR, PATCH))
    except Exception as exc:  # noqa: BLE001  (the library, or the driver, is missing)
        return (f"the cuBLAS library did not load ({_first_line(exc)}): it needs NVIDIA's "
                "driver and the nvidia-cublas-cu12 wheel (pip install 'numgrad[cublas]')"), None
    return None, version


def unavailable():
    """Why this process cannot use cuBLAS, or None when it can (probed once)."""
    if "result" not in _PROBE:
        _PROBE["result"] = _probe()
    return _PROBE["result"][0]


def reset():
    """Forget the probe, the handles and the counters (a test's stand-in library)."""
    _PROBE.clear()
    _HANDLES.clear()
    STATS.update(cublas=0, kernel=0)


def _mode():
    return config.get(FLAG)   # raises ValueError naming the variable if not a choice


def choose(e) -> str:
    """``"cublas"`` or ``"kernel"`` for device matmul ``e``; raises RuntimeError when
    ``NUMGRAD_CUDA_MATMUL=cublas`` and cuBLAS cannot be used here."""
    mode = _mode()
    path = "kernel"
    if mode != "kernel" and _cublas_takes(e):
        why = unavailable()
        if why is None:
            path = "cublas"
        elif mode == "cublas":
            raise RuntimeError(f"{FLAG}=cublas, but cuBLAS cannot be used: {why}. Unset "
                               f"{FLAG} (or set it to auto) to run matmul with numgrad's "
                               "own kernel.")
    STATS[path] += 1
    return path


def _cublas_takes(e):
    dims = matmul_dims(e)
    return (np.dtype(e.out.dtype).name in ("float32", "float64") and dims.k > 0
            and max(dims.m, dims.n, dims.k, dims.batch) <= INT32_MAX)


# ------------------------------------------------------------------ render and run
def render(e, srcs, name, generic=False):
    """``(step, source lines)`` of matmul ``e`` as a cuBLAS call; ``srcs`` as for the
    kernel (``matmul_kernel.render``). The step holds this plan's ``gemm_args``, which
    ``prepare`` binds once per plan (so once per shape); a shape-generic plan's lines
    name no extent, so its source stays the same for every shape."""
    dims = matmul_dims(e)
    (va, ta), (vb, tb) = srcs
    g = gemm_args(dims, ta, tb)
    fn = routine(e.out.dtype, g)   # strided batched iff an operand advances with the batch
    x, y = e.inputs
    read = [f"{side} read from its transpose's storage" for side, t in (("A", ta), ("B", tb))
            if t]
    flags = f"transa={'NT'[g.transa]}, transb={'NT'[g.transb]}"
    if generic:
        operands = f"C = A ({x.ndim}-d) @ B ({y.ndim}-d)"
        args = (f"{flags}; m, n, k, leading dims{', strides, batch_count' if g.batch > 1 else ''}"
                " from each plan's shape (blas.gemm_args)")
    else:
        operands = f"C{tuple(e.out.shape)} = A{tuple(x.shape)} @ B{tuple(y.shape)}"
        args = f"{flags}, m={g.m}, n={g.n}, k={g.k}, lda={g.lda}, ldb={g.ldb}, ldc={g.ldc}"
        if g.batch > 1:
            args += (f", stride_a={g.stride_a}, stride_b={g.stride_b}, "
                     f"stride_c={g.stride_c}, batch_count={g.batch}")
    text = [f"{name}: cuBLAS {fn} (nvmath) for {operands}"
            + (f", {', '.join(read)}" if read else ""),
            "  row-major C = A @ B as column-major C^T = B^T A^T (cuBLAS's A is B):",
            f"  {fn}({args})"]
    return ("cublas", name, fn, g, e, [va, vb]), text


class Handle:
    """The cuBLAS handle of one device, set up once (see the module docstring)."""

    def __init__(self, index):
        why = unavailable()
        if why is not None:
            raise RuntimeError(f"cuBLAS cannot be used: {why}")
        cublas = _bindings()
        from numba import cuda
        self.index = index
        with cuda.gpus[index]:
            cuda.current_context()   # numba-cuda's context, current for cuBLAS to use
            self.ptr = cublas.create()
            cublas.set_stream(self.ptr, cuda_device.STREAM)
            cublas.set_pointer_mode(self.ptr, POINTER_MODE_HOST)
            cublas.set_math_mode(self.ptr, DEFAULT_MATH)
            # After set_stream, which resets the workspace to cuBLAS's own pool.
            size = WORKSPACE_BYTES[tuple(cuda_device.launch(index).cc) >= (9, 0)]
            self.workspace = allocator.pool(index).alloc(size)
            cublas.set_workspace(self.ptr, self.workspace.ptr, size)


def handle(index=0) -> Handle:
    """Device ``index``'s handle, made on first use."""
    h = _HANDLES.get(index)
    if h is None:
        try:
            h = Handle(index)
        except Exception as exc:  # cuBLAS's status, said with the way out
            raise RuntimeError(f"cuBLAS could not start on cuda:{index} ({_first_line(exc)}); "
                               f"set {FLAG}=kernel to run matmul with numgrad's own "
                               "kernel") from exc
        _HANDLES[index] = h
    return h


def prepare(step, slot, device, pool):
    """A rendered cuBLAS step as a run closure over the prepared plan's slots
    (``launch.Prepared``): it takes the output block and calls the routine."""
    _, _, fn_name, g, e, (va, vb) = step
    index = device.index or 0
    h = handle(index).ptr
    fn = getattr(_bindings(), fn_name)
    o = e.out
    dt = np.dtype(o.dtype)
    shape = tuple(int(d) for d in o.shape)
    nbytes = allocator.round_size(max(1, _size(shape)) * dt.itemsize)
    scalars = np.array([1, 0], dt)   # alpha, beta: read by cuBLAS during the call
    alpha = scalars.ctypes.data
    beta = alpha + dt.itemsize
    sa, sb, sc = slot(vb), slot(va), slot(o)   # cuBLAS's A is numgrad's B
    fresh, take = cuda_array.fresh, pool.take

    # The arguments around the three pointers, fixed for the step.
    head = (h, g.transa, g.transb, g.m, g.n, g.k, alpha)
    if g.batch > 1:
        after_a, after_b, after_c = ((g.lda, g.stride_a), (g.ldb, g.stride_b, beta),
                                     (g.ldc, g.stride_c, g.batch))
    else:
        after_a, after_b, after_c = (g.lda,), (g.ldb, beta), (g.ldc,)

    def call(pa, pb, pc):
        fn(*head, pa, *after_a, pb, *after_b, pc, *after_c)

    def run(env):
        out = env[sc] = fresh(take(nbytes), shape, dt, device)
        call(env[sa].ptr, env[sb].ptr, out.ptr)
    run.scalars = scalars   # (alive with the step)
    if not index:
        return run
    from numba import cuda
    gpu = cuda.gpus[index]

    def run_on_device(env):   # the handle belongs to its device: make that one current
        with gpu:
            run(env)
    run_on_device.scalars = scalars
    return run_on_device


def status() -> dict:
    """What this process's CUDA matmuls use, for reports: the flag, whether cuBLAS is
    usable (else why not), the nvmath-python and cuBLAS versions, and how many device
    matmul steps were rendered for each path."""
    why = unavailable()
    try:
        from importlib.metadata import version
        nvmath = version("nvmath-python")
    except Exception:  # noqa: BLE001  (not installed)
        nvmath = None
    lib = _PROBE["result"][1]
    return {"mode": _mode(), "cublas": why is None, "why_not": why, "nvmath": nvmath,
            "cublas_version": ".".join(map(str, lib)) if lib else None,
            "steps": dict(STATS)}

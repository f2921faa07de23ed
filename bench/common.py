"""Shared pieces of the benchmark suite: systems, imports, conversion, thread pinning, memory.

Every workload module (``bench/w*.py``) exports

    ID, TITLE            e.g. "W2", "sum(tanh(x*y + sin x) * exp(-y*y))"
    cases(quick)         a list of ``Case``
    make_data(case)      NumPy inputs for one case (same for every system)
    IMPLS                {system name: build(case, data) -> step}

``step()`` runs one complete measured unit (forward + backward, or a whole
training loop for W6) and returns a flat tuple of outputs (the value, then the
gradients) in the system's own array type; it must have finished computing when
it returns (JAX steps block).  ``build`` raises ``Unsupported`` where a system
cannot express a workload at all, ``ImportError`` where the system is missing.
"""
from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass, field

import numpy as np

SYSTEMS = (
    "numgrad eager",
    "numgrad jit",       # module-level ng.jit(f) called, then .backward()
    "numgrad jit v&g",   # ng.jit(ng.value_and_grad(f, argnums=...)): one joint pass
    "torch eager",
    "torch.compile",     # torch.compile of a function that calls torch.autograd.grad
    "jax jit",           # jax.jit(jax.value_and_grad(f, argnums=...))
    "numpy",             # hand-written backward: the no-framework floor
)

# Each workload module defines one builder per system under these names.
_BUILDERS = {"numgrad eager": "numgrad_eager", "numgrad jit": "numgrad_jit",
             "numgrad jit v&g": "numgrad_jit_vg", "torch eager": "torch_eager",
             "torch.compile": "torch_compile", "jax jit": "jax_jit", "numpy": "numpy_manual"}


def impls(namespace):
    """The workload module's ``{system: builder}`` table, read off its function names."""
    return {system: namespace[name] for system, name in _BUILDERS.items() if name in namespace}


REFERENCE = "torch eager"
FALLBACK_REFERENCE = "numpy"   # used when torch is not installed
NUMPY_BASED = ("numpy", "numgrad eager")   # their arrays are seen by tracemalloc

# Relative error (L2 norm of the difference over the L2 norm of the reference) allowed.
TOLERANCE = {"float64": 1e-8, "float32": 1e-4}


class Unsupported(Exception):
    """A system cannot express this workload (reported in the table, not a failure)."""


@dataclass
class Case:
    workload: str
    label: str                 # shown in the table, e.g. "n=1e6 float64"
    size: int                  # elements (W2 sweep) or a nominal problem size
    dtype: str                 # "float32" / "float64"
    params: dict = field(default_factory=dict)
    headline: bool = False     # the case drawn in the per-workload speedup plot


def fmt_n(n: int) -> str:
    e = int(round(np.log10(n)))
    return f"1e{e}" if 10 ** e == n else str(n)


# ----------------------------------------------------------------------------- imports
def import_torch():
    import torch
    return torch


def torch_compile_fresh(fn):
    """``torch.compile(fn)`` with dynamo's caches cleared first.

    Builders define their functions in a closure, so every case shares one code
    object; without a reset dynamo would recompile with dynamic shapes, or fall
    back to eager after its cache-size limit, and the first-call time would lie.
    """
    import torch
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


_JAX = None


def import_jax():
    """jax and jax.numpy with float64 enabled (imported once)."""
    global _JAX
    if _JAX is None:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        _JAX = (jax, jnp)
    return _JAX


def system_available(system: str) -> str | None:
    """None when ``system`` can run here, else why not (e.g. 'torch not installed')."""
    mods = {"torch eager": "torch", "torch.compile": "torch", "jax jit": "jax"}
    mod = mods.get(system)
    if mod is None:
        return None
    try:
        __import__(mod)
    except Exception as e:  # noqa: BLE001 - any failure to import means skipped
        return f"{mod} not installed ({type(e).__name__})"
    return None


# ----------------------------------------------------------------------------- conversion
def to_numpy(x) -> np.ndarray:
    if x is None:
        return None
    mod = type(x).__module__
    if mod.startswith("torch"):
        x = x.detach().cpu()
        if hasattr(x, "_is_zerotensor") and x._is_zerotensor():
            return np.zeros(tuple(x.shape), dtype=x.new_zeros(()).numpy().dtype)
        return np.array(x.numpy(), copy=True)
    if mod.startswith("numgrad"):
        return np.array(x.detach().numpy(), copy=True)
    return np.array(x, copy=True)


def rel_err(actual, expected) -> float:
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return float("inf")
    if not np.all(np.isfinite(a)) and np.array_equal(np.isnan(a), np.isnan(e)):
        a, e = np.nan_to_num(a), np.nan_to_num(e)
    denom = float(np.linalg.norm(e))
    num = float(np.linalg.norm(a - e))
    return num / denom if denom > 0 else num


# ----------------------------------------------------------------------------- threads
def pin_threads(n: int | None, libs=("numba", "torch")) -> dict:
    """Pin every system to ``n`` threads (default 1); returns what was set (for the report).

    ``libs``: the libraries this process will use whose thread pools are set by a call
    (the others only by the environment), so that a process measuring one system's peak
    memory does not import another (torch alone is ~250 MB of RSS).

    One thread is the default because on a small shared machine (2 cores here) OpenMP
    pools that spin while another process holds a core make multi-threaded timings
    swing by 10-100x; ``--threads N`` measures the parallel case.

    Environment variables are read by the libraries at import time, so this runs before
    numba, torch and jax are imported (numpy may already be: threadpoolctl then limits
    its BLAS).  CPU affinity is left alone, so the OS may move the threads off a busy core.
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = list(range(os.cpu_count() or 1))
    n = 1 if not n else max(1, min(int(n), len(cpus)))
    info = {"threads": n, "cpus_available": len(cpus)}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = str(n)
    if "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if n == 1 and "xla_cpu_multi_thread_eigen" not in flags:
            flags = (flags + " --xla_cpu_multi_thread_eigen=false "
                     "intra_op_parallelism_threads=1").strip()
        os.environ["XLA_FLAGS"] = flags
    info["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") or "(default)"
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(n)
        info["blas"] = f"threadpoolctl limit {n}"
    except Exception:  # noqa: BLE001 - optional
        info["blas"] = f"OPENBLAS/MKL/OMP_NUM_THREADS={n}"
    info["numba"] = info["torch"] = "environment only"
    if "numba" in libs:
        try:
            import numba
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
            info["numba"] = numba.get_num_threads()
        except Exception as e:  # noqa: BLE001
            info["numba"] = f"unavailable ({type(e).__name__})"
    if "torch" in libs:
        try:
            import torch
            torch.set_num_threads(n)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            info["torch"] = torch.get_num_threads()
        except Exception:  # noqa: BLE001
            info["torch"] = "not installed"
    return info


# ----------------------------------------------------------------------------- memory
_LIBC = None


def _malloc_trim():
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL("libc.so.6")
        _LIBC.malloc_trim(0)
    except Exception:  # noqa: BLE001 - not glibc
        pass


def _status_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_rss_delta_mb(fn) -> float | None:
    """Peak resident memory above the starting point while ``fn()`` runs (Linux only).

    Frees what the allocator holds (gc + malloc_trim), resets the kernel's high-water
    mark (``/proc/self/clear_refs``), runs ``fn`` and reads VmHWM.
    """
    import gc
    gc.collect()
    _malloc_trim()
    before = _status_kb("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    if before is None:
        return None
    out = fn()
    peak = _status_kb("VmHWM")
    del out
    return max(0.0, (peak - before) / 1024.0) if peak is not None else None


def traced_peak_mb(fn) -> float:
    """Peak of Python/NumPy allocations (tracemalloc) while ``fn()`` runs."""
    import gc
    import tracemalloc
    gc.collect()
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
        del out
    finally:
        tracemalloc.stop()
    return peak / 2 ** 20

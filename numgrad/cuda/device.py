"""cuda.device: finding the CUDA device, or the simulator, and its launch limits.

Room: CUDA runtime (below the ops). Everything that asks ``numba.cuda`` about the machine
is here, so that the error for a missing device is written once. Numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``, read when Numba is first imported) runs the same kernels in
Python threads: it is how the CUDA backend is tested on machines without a GPU.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

NO_DEVICE = (
    "numgrad found no CUDA device: {why}. A CUDA tensor needs an NVIDIA GPU with its driver "
    "and `pip install numgrad[cuda]` (numba-cuda). Without a GPU, set NUMBA_ENABLE_CUDASIM=1 "
    "in the environment before Python starts to run the CUDA backend in Numba's simulator "
    "(slow: small shapes only), or use device='cpu'.")


def _cuda():
    try:
        from numba import cuda
    except ImportError as exc:  # numba-cuda not installed
        raise RuntimeError(NO_DEVICE.format(why=f"numba.cuda cannot be imported ({exc})")) \
            from None
    return cuda


def simulated() -> bool:
    """True when Numba's CUDA simulator stands in for the device."""
    try:
        from numba.cuda import config
    except ImportError:
        return False
    return bool(config.ENABLE_CUDASIM)


def available() -> bool:
    try:
        return bool(_cuda().is_available())
    except Exception:  # no driver, no numba-cuda: both mean "no"
        return False


@dataclass(frozen=True)
class Launch:
    """What a launch configuration is derived from (per device, fixed for its lifetime,
    so reductions split the same way on every run: the same bits)."""
    sms: int            # multiprocessors
    max_threads: int    # per block
    threads: int        # block size for elementwise and reduction kernels (power of 2)
    waves: int          # blocks per multiprocessor a grid-stride kernel is given
    max_blocks: int     # grid size cap of a grid-stride kernel (sms * waves * 8)
    name: str
    cc: tuple


# The stream every launch, copy and cuBLAS call of numgrad uses: the default stream.
STREAM = 0

# The block size every kernel is rendered for: shared-memory buffers are sized by it. The
# simulator runs each thread as a Python thread, so it launches fewer (a power of two
# below it; the tree reductions read cuda.blockDim.x).
THREADS = 256
SIM_THREADS = 8
SIM_BLOCKS = 4


@functools.lru_cache(maxsize=None)
def launch(index=0) -> Launch:
    """The device's launch limits; raises RuntimeError with NO_DEVICE if there is none."""
    cuda = _cuda()
    if simulated():
        return Launch(sms=1, max_threads=SIM_THREADS, threads=SIM_THREADS, waves=1,
                      max_blocks=SIM_BLOCKS, name="CUDA simulator", cc=(5, 2))
    if not available():
        why = "no CUDA driver or GPU is visible to numba.cuda"
        try:
            cuda.get_current_device()
        except Exception as exc:  # the driver's own reason, in one line
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            why = " ".join(lines[:2]).rstrip(":. ") or why
        raise RuntimeError(NO_DEVICE.format(why=why))
    n = len(cuda.gpus)
    if index >= n:
        raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{index} asked for, "
                           f"{n} device(s) present)")
    with cuda.gpus[index]:
        dev = cuda.get_current_device()
        sms = int(dev.MULTIPROCESSOR_COUNT)
        mt = int(dev.MAX_THREADS_PER_BLOCK)
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        cc = tuple(dev.compute_capability)
    return Launch(sms=sms, max_threads=mt, threads=min(THREADS, mt), waves=4,
                  max_blocks=sms * 4 * 8, name=name, cc=cc)


def check(index=0):
    """Raise the clear error unless device ``cuda:index`` (or the simulator) is usable."""
    if not _VERSIONS_OK and not simulated():
        check_versions()
    launch(index or 0)


_VERSIONS_OK = False


def _versions():
    """(NumPy version, numba-cuda version or None, whether NumPy has ``row_stack``)."""
    import numpy as np
    try:
        from importlib.metadata import version
        nc = version("numba-cuda")
    except Exception:  # noqa: BLE001  (not installed, or installed without metadata)
        nc = None
    return np.__version__, nc, hasattr(np, "row_stack")


def _release(v):
    out = []
    for part in v.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def check_versions():
    """Raise one clear error for a NumPy/numba-cuda pair known not to compile kernels:
    numba-cuda up to 0.30 registers an overload of ``np.row_stack``, which NumPy 2.5
    removed, and fails inside its first kernel compile."""
    global _VERSIONS_OK
    numpy_v, nc_v, has_row_stack = _versions()
    if nc_v is not None and not has_row_stack and _release(nc_v) < (0, 31):
        raise RuntimeError(
            f"numgrad's CUDA backend cannot run with NumPy {numpy_v} and numba-cuda {nc_v}: "
            f"numba-cuda {nc_v} needs numpy.row_stack, which NumPy 2.5 removed, and fails "
            "at its first kernel compile. Install a pair that works: "
            "pip install 'numpy<2.5' (what `pip install numgrad[cuda]` selects), or a "
            "numba-cuda release that supports your NumPy.")
    _VERSIONS_OK = True


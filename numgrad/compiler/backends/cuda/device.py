"""backends.cuda.device: finding the CUDA device, or the simulator, and its launch limits.

Room: compiler. Everything that asks ``numba.cuda`` about the machine is here, so that
the error for a missing device is written once. Numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``, read when Numba is first imported) runs the same kernels
in Python threads: it is how the CUDA backend is tested on machines without a GPU.
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
    launch(index or 0)


"""cuda: the eager CUDA runtime, and ``ng.cuda`` (``torch.cuda``'s module-level functions).

Room: CUDA runtime, below the ops (it imports nothing of tensor, ops, autograd or the
compiler). ``device`` finds the GPU (or Numba's simulator), ``allocator`` is the caching
allocator, ``array`` a CUDA tensor's payload, ``dlpack`` its capsules, ``launch`` runs a
rendered program's steps, ``eager`` is the interpreter every eager op on a CUDA payload
goes to. The compiler's CUDA backend (``compiler/backends/cuda``) renders and compiles the
kernels and imports this package downward; what the runtime needs from above is
registered into it (``eager``'s docstring says how).

Importing this package loads none of its modules, nor ``numba.cuda``: ``is_available()``
answers in microseconds on a machine without an NVIDIA driver, as torch does.

>>> isinstance(ng.cuda.is_available(), bool)
True
"""
from __future__ import annotations

# The device files an NVIDIA driver creates (``/dev/dxg``: WSL's GPU bridge).
_DRIVER_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/proc/driver/nvidia/version")
_AVAILABLE = None


def is_available() -> bool:
    """Whether a CUDA device (or Numba's CUDA simulator) can hold tensors
    (``torch.cuda.is_available``).

    >>> isinstance(ng.cuda.is_available(), bool)
    True
    """
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = _probe()
    return _AVAILABLE


def _probe() -> bool:
    # Importing numba.cuda takes most of a second; on a machine with no NVIDIA driver and
    # no simulator asked for, the answer is known without it (as torch answers in
    # microseconds). The simulator is Numba's setting, read from the environment when Numba
    # is first imported (or from Numba's own config once it has been).
    import os
    import sys
    config = sys.modules.get("numba.core.config")
    simulated = (config.ENABLE_CUDASIM if config is not None
                 else os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"))
    if not simulated and not any(os.path.exists(f) for f in _DRIVER_FILES):
        return False
    try:
        from numgrad.cuda import device as cuda_device
    except ImportError:
        return False
    return cuda_device.simulated() or cuda_device.available()


def device_count() -> int:
    """How many CUDA devices numgrad can use (``torch.cuda.device_count``): 0 without one,
    1 under Numba's simulator.

    >>> ng.cuda.device_count() >= int(ng.cuda.is_available())
    True
    """
    if not is_available():
        return 0
    from numgrad.cuda import device as cuda_device
    if cuda_device.simulated():
        return 1
    from numba import cuda
    return len(cuda.gpus)


def memory_stats(device=None) -> dict:
    """The CUDA caching allocator's counters (``device_mallocs``, ``cached_bytes``,
    ``allocated_bytes``, ``peak_allocated_bytes``, ``cache_hits``, ``frees``...; sizes
    are rounded block sizes) for ``device``, or summed over every device used."""
    from numgrad.cuda import allocator
    return allocator.memory_stats(device)


def empty_cache() -> None:
    """Give the CUDA memory numgrad holds idle in its cache back to the driver (as
    ``torch.cuda.empty_cache``); memory in use by tensors is untouched."""
    from numgrad.cuda import allocator
    allocator.empty_cache()


def synchronize() -> None:
    """Wait until every kernel and copy queued on the CUDA device has finished (kernels
    are asynchronous: time them with this, as ``torch.cuda.synchronize``)."""
    from numgrad.cuda import device as cuda_device
    if not cuda_device.simulated():
        from numba import cuda
        cuda.synchronize()

"""devices: moving tensors between devices.

Room: core. The CUDA backend (``numgrad.compiler.backends.cuda``) plugs in here, and only
here (tests/test_architecture.py): imported only when a CUDA device is asked for, so
CPU-only use never loads it (nor numba.cuda).
Without a GPU (and without Numba's simulator) asking for ``cuda`` raises one clear error.
"""
from __future__ import annotations

import types


def cuda_is_available() -> bool:
    """Whether a CUDA device (or Numba's CUDA simulator) can hold tensors
    (``torch.cuda.is_available``).

    >>> isinstance(ng.cuda.is_available(), bool)
    True
    """
    global _CUDA_AVAILABLE
    if _CUDA_AVAILABLE is None:
        _CUDA_AVAILABLE = _probe_cuda()
    return _CUDA_AVAILABLE


_CUDA_AVAILABLE = None
# The device files an NVIDIA driver creates (``/dev/dxg``: WSL's GPU bridge).
_DRIVER_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/proc/driver/nvidia/version")


def _probe_cuda() -> bool:
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
        from numgrad.compiler.backends.cuda import device as cuda_device
    except ImportError:
        return False
    return cuda_device.simulated() or cuda_device.available()


def cuda_summary() -> str:
    """One line on the CUDA device numgrad would use (for ``python -m numgrad info``)."""
    from numgrad.compiler.backends.cuda import device as cuda_device
    if cuda_device.simulated():
        return "Numba's simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        lc = cuda_device.launch(0)
    except RuntimeError as exc:
        return f"none ({str(exc).split(': ', 1)[-1].split('. ')[0]})"
    return f"{lc.name}, compute capability {lc.cc[0]}.{lc.cc[1]}, {lc.sms} SMs"


def transfer(t, device):
    """``t`` on ``device``: a differentiable copy (``ToCopyBackward0``); ``t`` itself when
    it is there already."""
    from numgrad.ops.device_copy import to_device
    device = target(device)
    if device == t.device:
        return t
    return to_device(t, device=str(device), src=str(t.device))


def target(device):
    """The device a factory asked for, checked (the clear error when there is none)."""
    from numgrad.tensor import device as _device
    device = _device(device)
    if device.type == "cuda":
        from numgrad.compiler.backends.cuda import device as cuda_device
        cuda_device.check(device.index or 0)
        if device.index is None:
            device = _device("cuda", 0)
    return device


def upload(a, device):
    from numgrad.compiler.backends.cuda import array as cuda_array
    from numgrad.tensor import device as _device
    return cuda_array.to_device(a, _device(device))


def wrap_cuda_interface(obj):
    """A CUDA tensor sharing the memory of an object exporting ``__cuda_array_interface__``."""
    from numgrad.compiler.backends.cuda import array as cuda_array
    from numgrad.tensor import Tensor
    return Tensor._make(cuda_array.from_interface(obj))


def cuda_dlpack_capsule(data, index, *, versioned, stream=None, copied=False):
    """A DLPack capsule of a CUDA payload's memory (``backends.cuda.dlpack.export``)."""
    from numgrad.compiler.backends.cuda import dlpack as cuda_dlpack
    return cuda_dlpack.export(data, index, versioned=versioned, stream=stream, copied=copied)


def cuda_from_dlpack(obj):
    """``(CUDA tensor sharing the memory of obj's CUDA DLPack capsule, read_only)``."""
    from numgrad.compiler.backends.cuda import dlpack as cuda_dlpack
    from numgrad.tensor import Tensor
    arr, read_only = cuda_dlpack.import_capsule(obj)
    return Tensor._make(arr), read_only


def memory_stats(device=None) -> dict:
    """The CUDA caching allocator's counters (``device_mallocs``, ``cached_bytes``,
    ``allocated_bytes``, ``peak_allocated_bytes``, ``cache_hits``, ``frees``...; sizes
    are rounded block sizes) for ``device``, or summed over every device used."""
    from numgrad.compiler.backends.cuda import allocator
    return allocator.memory_stats(device)


def empty_cache() -> None:
    """Give the CUDA memory numgrad holds idle in its cache back to the driver (as
    ``torch.cuda.empty_cache``); memory in use by tensors is untouched."""
    from numgrad.compiler.backends.cuda import allocator
    allocator.empty_cache()


def synchronize() -> None:
    """Wait until every kernel and copy queued on the CUDA device has finished (kernels
    are asynchronous: time them with this, as ``torch.cuda.synchronize``)."""
    from numgrad.compiler.backends.cuda import device as cuda_device
    if not cuda_device.simulated():
        from numba import cuda as _nc
        _nc.synchronize()


# ``ng.cuda``: the CUDA device's module-level functions, as ``torch.cuda``'s.
cuda = types.ModuleType("numgrad.cuda", "The CUDA device: is_available, memory_stats, "
                        "empty_cache, synchronize.")
cuda.is_available = cuda_is_available
cuda.memory_stats = memory_stats
cuda.empty_cache = empty_cache
cuda.synchronize = synchronize

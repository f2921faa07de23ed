"""devices: moving tensors between devices.

Room: core. Uses the eager CUDA runtime (``numgrad.cuda``) below it: its modules are
imported only when a CUDA device is asked for, so CPU-only use never loads them (nor
numba.cuda). Without a GPU (and without Numba's simulator) asking for ``cuda`` raises one
clear error.
"""
from __future__ import annotations

import numgrad.cuda as cuda
import numgrad.meta as meta


# ``ng.cuda.is_available`` under the name the eager rooms have always used.
cuda_is_available = cuda.is_available


def cuda_summary() -> str:
    """One line on the CUDA device numgrad would use (for ``python -m numgrad info``)."""
    from numgrad.cuda import device as cuda_device
    if cuda_device.simulated():
        return "Numba's simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        lc = cuda_device.launch(0)
    except RuntimeError as exc:
        return f"none ({str(exc).split(': ', 1)[-1].split('. ')[0]})"
    return f"{lc.name}, compute capability {lc.cc[0]}.{lc.cc[1]}, {lc.sms} SMs"


def target(device):
    """The device a factory asked for, checked (the clear error when there is none)."""
    from numgrad.device_type import device as _device
    device = _device(device)
    if device.type == "cuda":
        from numgrad.cuda import device as cuda_device
        cuda_device.check(device.index or 0)
        if device.index is None:
            device = _device("cuda", 0)
    return device


def upload(a, device):
    from numgrad.device_type import device as _device
    device = _device(device)
    if device.type == "meta":  # shape and dtype only (numgrad.meta)
        return meta.empty(a.shape, a.dtype)
    from numgrad.cuda import array as cuda_array
    return cuda_array.to_device(a, device)


def wrap_cuda_interface(obj):
    """A CUDA tensor sharing the memory of an object exporting ``__cuda_array_interface__``."""
    from numgrad.cuda import array as cuda_array
    from numgrad.tensor import Tensor
    return Tensor._make(cuda_array.from_interface(obj))


def cuda_dlpack_capsule(data, index, *, versioned, stream=None, copied=False):
    """A DLPack capsule of a CUDA payload's memory (``cuda.dlpack.export``)."""
    from numgrad.cuda import dlpack as cuda_dlpack
    return cuda_dlpack.export(data, index, versioned=versioned, stream=stream, copied=copied)


def cuda_from_dlpack(obj):
    """``(CUDA tensor sharing the memory of obj's CUDA DLPack capsule, read_only)``."""
    from numgrad.cuda import dlpack as cuda_dlpack
    from numgrad.tensor import Tensor
    arr, read_only = cuda_dlpack.import_capsule(obj)
    return Tensor._make(arr), read_only

"""dlpack: zero-copy exchange of tensors with other array libraries through DLPack.

Room: core. Written against the protocol (``__dlpack__`` / ``__dlpack_device__`` on
the producer, a consumer that calls them), not against a library: anything that
speaks it (PyTorch, NumPy, JAX, CuPy) exchanges memory with numgrad. On the CPU the
capsule is NumPy's own export of the tensor's array, so the consumer shares numgrad's
memory and keeps it alive. CUDA tensors report ``(kDLCUDA, index)``, but their
payload (a numba-cuda device buffer) has no DLPack exporter, so ``__dlpack__`` refuses
them with a pointer to ``__cuda_array_interface__``, which carries the same zero-copy
exchange; importing, ``from_dlpack`` takes CUDA producers through their
``__cuda_array_interface__``.
"""
from __future__ import annotations

import numpy as np

from numgrad.tensor import Tensor

# DLPack's device type codes (``DLDeviceType`` in dlpack.h).
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13


def device_of(t: Tensor) -> tuple:
    """``Tensor.__dlpack_device__``: ``(1, 0)`` for the CPU, ``(2, index)`` for CUDA."""
    dev = t.device
    if dev.type == "cuda":
        return (KDL_CUDA, dev.index or 0)
    return (KDL_CPU, 0)


def export(t: Tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: a capsule sharing the tensor's memory (see the module
    docstring); BufferError where PyTorch's export refuses or numgrad cannot export."""
    if t.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if t.device.type == "cuda":
        raise BufferError(
            "numgrad cannot export a CUDA tensor through DLPack (its numba-cuda buffer has no "
            "DLPack exporter); exchange it zero-copy through __cuda_array_interface__ instead, "
            "e.g. torch.as_tensor(t, device='cuda') or cupy.asarray(t), or move it with "
            "t.cpu() first")
    a = t._concrete("array")  # under @ng.jit: the tracer's error (a traced value has no memory)
    legacy = max_version is None or tuple(max_version) < (1, 0)
    if not a.flags.writeable and legacy:
        # A broadcast (read-only) view cannot say "read-only" in a pre-1.0 capsule:
        # export a copy unless the consumer forbade copies.
        if copy is False:
            raise BufferError("this tensor's memory is read-only (a broadcast view), which a "
                              "DLPack capsule before version 1.0 cannot mark; pass copy=None, "
                              "or export t.clone()")
        a = np.array(a)
    kwargs = {"stream": stream, "dl_device": dl_device, "copy": copy}
    if max_version is not None:
        kwargs["max_version"] = max_version
    return a.__dlpack__(**kwargs)


def from_dlpack(obj, *, device=None, copy=None) -> Tensor:
    """A tensor sharing the memory of ``obj``, any DLPack producer (an object with
    ``__dlpack__`` and ``__dlpack_device__``: a PyTorch, NumPy, JAX or CuPy array)
    (``torch.from_dlpack``). CPU memory is shared without a copy; a CUDA producer is
    taken through its ``__cuda_array_interface__``. ``copy=True`` asks for a copy,
    ``device`` moves the result.

    Raises TypeError for an object that is not a producer, or a dtype numgrad lacks
    (float32, float64, int64 and bool are its dtypes); BufferError for a device it
    cannot reach.

    >>> import numpy as np
    >>> a = np.zeros(3)
    >>> t = ng.from_dlpack(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 0., 0.], dtype=numgrad.float64)
    """
    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        what = type(obj).__name__
        hint = (" (a bare DLPack capsule, as torch.utils.dlpack.to_dlpack makes: pass the "
                "tensor itself instead)" if what == "PyCapsule" else "")
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ and "
                        f"__dlpack_device__ (a DLPack producer), got {what}{hint}")
    kind, index = obj.__dlpack_device__()
    kind = int(kind)
    if kind in (KDL_CUDA, KDL_CUDA_MANAGED):
        t = _from_cuda(obj, int(index))
        if copy:
            t = t.clone()
    elif kind in (KDL_CPU, KDL_CUDA_HOST):
        t = _wrap(np.from_dlpack(obj, copy=copy))
    else:
        raise BufferError(f"from_dlpack(): DLPack device type {kind} is not supported; numgrad "
                          "tensors live on the CPU (1) or a CUDA device (2)")
    return t if device is None else t.to(device)


def _wrap(a: np.ndarray) -> Tensor:
    if a.dtype not in (np.float32, np.float64, np.int64, np.bool_):
        raise TypeError(f"from_dlpack(): numgrad has no {a.dtype} dtype (its dtypes are "
                        "float32, float64, int64 and bool); convert on the producer's side "
                        "first, e.g. t.double() or t.long()")
    return Tensor._make(a)


def _from_cuda(obj, index):
    if getattr(obj, "__cuda_array_interface__", None) is None:
        raise BufferError(
            f"from_dlpack(): {type(obj).__name__} lives on CUDA device {index} but has no "
            "__cuda_array_interface__, which numgrad imports CUDA memory through; pass an "
            "object that has one (CuPy arrays, PyTorch and Numba CUDA tensors do), or copy "
            "the data to the host first")
    from numgrad import devices
    return devices.wrap_cuda_interface(obj)

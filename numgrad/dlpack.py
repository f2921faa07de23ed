"""dlpack: zero-copy exchange of tensors with other array libraries through DLPack.

Room: core. Written against the protocol (``__dlpack__`` / ``__dlpack_device__`` on
the producer, a consumer that calls them), not against a library: anything that
speaks it (PyTorch, NumPy, JAX, CuPy) exchanges memory with numgrad. On the CPU the
capsule is NumPy's own export of the tensor's array, so the consumer shares numgrad's
memory and keeps it alive. CUDA tensors report ``(kDLCUDA, index)`` and export a
capsule that ``cuda.dlpack`` builds with ctypes (numba-cuda has no DLPack
exporter); importing, ``from_dlpack`` takes a CUDA producer's capsule the same way, or
its ``__cuda_array_interface__`` when it has no ``__dlpack__``. The CUDA paths are tested
in Numba's simulator only: they have not been run against PyTorch, CuPy or JAX on a GPU.
"""
from __future__ import annotations

import sys

import numpy as np

import numgrad.dtypes as _dt
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
        return _export_cuda(t, stream, max_version, dl_device, copy)
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


def _export_cuda(t, stream, max_version, dl_device, copy):
    import numgrad.devices as devices

    if not hasattr(t._data, "_ng_device"):
        t._concrete("array")    # under @ng.jit: the tracer's error (a traced value)
    index = t.device.index or 0
    versioned = max_version is not None and int(max_version[0]) >= 1
    wanted = None if dl_device is None else tuple(int(v) for v in dl_device)
    if wanted is not None and wanted != (KDL_CUDA, index):
        if wanted != (KDL_CPU, 0) or copy is False:
            raise BufferError(
                f"numgrad exports a tensor on cuda:{index} to that device, or as a copy to "
                f"the CPU (1, 0); DLPack device {wanted} was asked"
                f"{' with copy=False' if copy is False else ''}: move it first "
                "(t.cpu(), t.to('cuda:N'))")
        # The consumer wants it on the host: a copy, through NumPy's exporter.
        kwargs = {"copy": True} if versioned else {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        return t._data._ng_host().__dlpack__(**kwargs)
    data = t.detach().clone()._data if copy else t._data
    return devices.cuda_dlpack_capsule(data, index, versioned=versioned, stream=stream,
                                       copied=bool(copy))


def from_dlpack(obj, *, device=None, copy=None) -> Tensor:
    """A tensor sharing the memory of ``obj``, any DLPack producer (an object with
    ``__dlpack__`` and ``__dlpack_device__``: a PyTorch, NumPy, JAX or CuPy array)
    (``torch.from_dlpack``). CPU and CUDA memory are shared without a copy (an object
    with a ``__cuda_array_interface__`` and no ``__dlpack__`` is taken through the
    former). ``copy=True`` asks for a copy, ``device`` moves the result. Memory the
    producer marked read-only is copied, since numgrad's tensors are writable.

    Raises TypeError for an object that is neither, or a dtype numgrad lacks (float16,
    complex, ...); BufferError for a device it cannot reach, or
    read-only memory with ``copy=False``.

    >>> import numpy as np
    >>> a = np.zeros(3)
    >>> t = ng.from_dlpack(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 0., 0.], dtype=numgrad.float64)
    """
    if not hasattr(obj, "__dlpack_device__") or not hasattr(obj, "__dlpack__"):
        if getattr(obj, "__cuda_array_interface__", None) is None:
            what = type(obj).__name__
            hint = (" (a bare DLPack capsule, as torch.utils.dlpack.to_dlpack makes: pass "
                    "the tensor itself instead)" if what == "PyCapsule" else "")
            raise TypeError(f"from_dlpack(): expected an object with __dlpack__ and "
                            f"__dlpack_device__ (a DLPack producer), got {what}{hint}")
        import numgrad.devices as devices
        t = devices.wrap_cuda_interface(obj)
        if copy:
            t = t.clone()
        return t if device is None else t.to(device)
    kind = int(obj.__dlpack_device__()[0])
    if kind in (KDL_CUDA, KDL_CUDA_MANAGED):
        t = _from_cuda(obj, copy)
    elif kind in (KDL_CPU, KDL_CUDA_HOST):
        t = _wrap_host(np.from_dlpack(obj, copy=copy), copy)
    else:
        raise BufferError(f"from_dlpack(): DLPack device type {kind} is not supported; numgrad "
                          "tensors live on the CPU (1) or a CUDA device (2)")
    return t if device is None else t.to(device)


def _wrap(a: np.ndarray) -> Tensor:
    if a.dtype not in _dt._BY_NUMPY:
        raise TypeError(f"from_dlpack(): numgrad has no {a.dtype} dtype (its dtypes are "
                        f"{_dt.NAMES_TEXT}); convert on the producer's side "
                        "first, e.g. t.double() or t.long()")
    return Tensor._make(a)


def _wrap_host(a: np.ndarray, copy) -> Tensor:
    # numgrad's tensors are writable, and a NumPy read-only flag would surface only at the
    # first in-place op, as a misleading "single memory location" error: memory the
    # producer marked read-only is copied (as on CUDA), or refused when copy=False.
    if not a.flags.writeable:
        if copy is False:
            raise BufferError("from_dlpack(): the producer's memory is read-only and numgrad "
                              "tensors are writable; pass copy=None to copy it")
        a = np.array(a)
    return _wrap(a)


def _from_cuda(obj, copy):
    import numgrad.devices as devices

    t, read_only = devices.cuda_from_dlpack(obj)
    if read_only or copy:
        # numgrad's tensors are writable: memory the producer marked read-only is copied.
        if read_only and copy is False:
            raise BufferError("from_dlpack(): the producer's memory is read-only and numgrad "
                              "tensors are writable; pass copy=None to copy it")
        t = t.clone()
    return t


# ``Tensor`` (below this module) reaches it through this slot (numgrad/tensor.py).
Tensor._ng_dlpack = sys.modules[__name__]

"""cuda.array: the payload of a CUDA tensor, and moving data to and from it.

Room: CUDA runtime (below the ops). A CUDA tensor's ``_data`` is a ``CudaArray``: a flat,
C-ordered ``numba.cuda`` device buffer (one element for a 0-d value) with the tensor's
shape and NumPy dtype. Like the tracer's values it carries ``_ng_interpreter``, so every
eager op on it goes through ``ops.dispatch.evaluate`` to ``cuda.eager``, which runs it as a
kernel of the CUDA backend; eager code needs no CUDA branch of its own.

``__cuda_array_interface__`` (version 3) goes both ways: a CUDA tensor exports its
buffer, and ``ng.tensor``/``ng.as_tensor``/``from_cuda`` wrap any object that exports
one (CuPy, PyTorch CUDA tensors) without a copy. Under Numba's simulator the "device
pointer" is the host address of the simulated buffer, so the exchange is zero-copy
there too.
"""
from __future__ import annotations

import sys

import numpy as np

from numgrad.cuda import device as cuda_device
from numgrad.cuda import allocator
from numgrad.device_type import device as _device

_KINDS = {"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"}
# numgrad.dtypes.NAMES_TEXT (the runtime imports nothing above it)
NAMES_TEXT = "float32, float64, int64, int32, int16, int8, uint8 and bool"


class _Flags:
    c_contiguous = True  # always: the runtime's ascontiguousarray check passes it through


_FLAGS = _Flags()


def is_seed(a) -> bool:
    """Whether ``a`` is the autograd engine's implicit seed, which every ``backward()``
    shares and nobody writes. The engine sits above this runtime: ``numgrad.autograd``
    replaces this function with ``engine.is_implicit_seed`` when it is imported."""
    return False


class CudaArray:
    __slots__ = ("_buf", "block", "shape", "dtype", "_ng_device", "owner", "__weakref__")

    _ng_standin = None      # views: C-contiguous, as a fresh result (ops.views.standin)
    # Where dispatch sends every op on this payload: numgrad.cuda.eager sets its INTERPRETER
    # here when it is imported (with the ops: ops.cuda_ops registers their part into it).
    _ng_interpreter = None
    flags = _FLAGS

    def __init__(self, buf, shape, dtype, device, owner=None, block=None):
        self._buf = buf                 # 1-D device array of max(1, size) elements
        self.block = block              # the allocator's block holding the data, if ours
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self._ng_device = device
        self.owner = owner              # keeps an imported (zero-copy) exporter alive

    @property
    def buf(self):
        # Made on first use: kernels launched by a prepared plan read only ``ptr``.
        b = self._buf
        if b is None:
            b = self._buf = allocator.view(self.block, max(1, self.size), self.dtype)
        return b

    @property
    def ptr(self):
        """The device address of the data (the simulator's: a host address)."""
        if self.block is not None:
            return self.block.ptr
        return self.__cuda_array_interface__["data"][0]

    def _ng_exclusive(self):
        """Whether nothing but this object holds its memory: no imported exporter, no other
        ``CudaArray`` on its block (a reshape shares it), no outside reference to the
        device-array view (the autograd engine then takes it as a ``.grad`` without a
        copy; it checks the references to this object itself)."""
        if self.owner is not None or self.block is None:
            return False
        buf = self._buf  # holds the block too (allocator.view)
        if buf is None:
            return sys.getrefcount(self.block) <= 2   # the attribute, the call's argument
        return sys.getrefcount(self.block) <= 3 and sys.getrefcount(buf) <= 3  # + ``buf``

    def copy(self):
        """A copy of the data in a block of its own (a device-to-device copy)."""
        out = empty(self.shape, self.dtype, self._ng_device)
        if self.size:
            _copy_into(out, self.buf)
        return out

    def _ng_write(self, src):
        """Write ``src``, an in-place op's result, into this array's memory (a
        device-to-device copy, queued like a kernel), so that whatever shares the memory
        (an importer or exporter through DLPack or ``__cuda_array_interface__``, another
        tensor on it) sees the new values. False, writing nothing, where ``src`` is not a
        ``CudaArray`` of this size and dtype (a traced value: the caller rebinds), or
        where this array is the autograd engine's implicit seed, which every
        ``backward()`` shares and which stays 1 (the tensor holding it is rebound)."""
        if type(src) is not CudaArray or src.dtype != self.dtype or src.size != self.size:
            return False
        if is_seed(self):
            return False
        if self.size and src.ptr != self.ptr:
            _copy_into(self, src.buf)
        return True

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def _ng_host(self):
        """A NumPy copy of the data (the tensor's values for printing, ``item``, ``cpu()``)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        return self.buf.copy_to_host().reshape(self.shape)

    def _ng_concrete(self, reason=None):
        if reason == "array":
            raise TypeError(f"can't convert {self._ng_device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self._ng_host()

    def _ng_repr(self):
        return repr(self._ng_host())

    @property
    def __cuda_array_interface__(self):
        buf = self.buf
        if cuda_device.simulated():
            ptr = buf._ary.__array_interface__["data"][0] if self.size else 0
        else:
            ptr = buf.__cuda_array_interface__["data"][0] if self.size else 0
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (ptr, False),
                "strides": None, "version": 3, "stream": None}

    def astype(self, dtype):
        return self._ng_interpreter.cast(self, np.dtype(dtype))

    def __repr__(self):
        return f"CudaArray({self.shape}, {self.dtype}, {self._ng_device})"


def _cuda():
    from numba import cuda
    return cuda


def _index(dev):
    return dev.index or 0


def _copy_into(dst, data):
    """Copy ``data`` (a device array, or a flat NumPy array: same size and dtype) into
    ``dst``'s memory, with ``dst``'s device current: on the default stream, after the
    kernels queued before it."""
    index = _index(dst._ng_device)
    if cuda_device.simulated() or index == 0:
        dst.buf.copy_to_device(data)
    else:
        with _cuda().gpus[index]:
            dst.buf.copy_to_device(data)


def empty(shape, dtype, device):
    """An uninitialised device array, from the caching allocator."""
    index = _index(device)
    cuda_device.check(index)
    dtype = np.dtype(dtype)
    n = 1
    for s in shape:
        n *= int(s)
    return CudaArray(None, shape, dtype, device,
                     block=allocator.pool(index).alloc(max(n, 1) * dtype.itemsize))


def fresh(block, shape, dtype, device):
    """A ``CudaArray`` on a block just allocated, ``shape`` a tuple of ints and ``dtype``
    a NumPy dtype already (a prepared plan's outputs: no normalising per call)."""
    a = CudaArray.__new__(CudaArray)
    a._buf = a.owner = None
    a.block, a.shape, a.dtype, a._ng_device = block, shape, dtype, device
    return a


def to_device(a, device):
    """A NumPy array copied to ``device``."""
    index = _index(device)
    cuda_device.check(index)
    if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        a = a.copy(order="C")
    if a.dtype.name not in _KINDS:
        raise TypeError(f"numgrad CUDA tensors hold {NAMES_TEXT}, not {a.dtype}")
    flat = a.reshape(-1) if a.size else np.zeros(1, a.dtype)
    out = empty(a.shape, a.dtype, _device("cuda", index))
    _copy_into(out, flat)
    return out


def from_interface(obj):
    """Wrap an object exporting ``__cuda_array_interface__`` without copying it."""
    cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    dtype = np.dtype(cai["typestr"])
    if dtype.name not in _KINDS:
        raise TypeError(f"numgrad CUDA tensors hold {NAMES_TEXT}, not {dtype}")
    strides = cai.get("strides")
    if strides is not None and tuple(strides) != c_strides(shape, dtype.itemsize):
        raise ValueError("numgrad wraps C-contiguous CUDA arrays only; make the array "
                         "contiguous first (x.contiguous() / cupy.ascontiguousarray)")
    return from_pointer(cai["data"][0], shape, dtype, 0, obj, cai.get("stream"))


def from_pointer(ptr, shape, dtype, index, owner, stream=None):
    """A ``CudaArray`` over C-contiguous device memory at ``ptr`` that numgrad does not own;
    ``owner`` is kept alive as long as the array (it frees the memory)."""
    cuda_device.check(index)
    size = int(np.prod(shape)) if shape else 1
    if size == 0:   # nothing to share (and the pointer may be NULL)
        return empty(shape, dtype, _device("cuda", index))
    n = size
    cuda = _cuda()
    if cuda_device.simulated():
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        class _Host:  # the simulated device pointer is a host address
            __array_interface__ = {"shape": (n,), "typestr": dtype.str,
                                   "data": (ptr, False), "version": 3}
        buf = FakeCUDAArray(np.asarray(_Host()))
    else:
        flat = {"shape": (n,), "typestr": dtype.str, "data": (ptr, False), "strides": None,
                "version": 3, "stream": stream}

        class _Flat:
            __cuda_array_interface__ = flat
        if index == 0:
            buf = cuda.as_cuda_array(_Flat())
        else:
            with cuda.gpus[index]:
                buf = cuda.as_cuda_array(_Flat())
    return CudaArray(buf, shape, dtype, _device("cuda", index), owner=owner)


def c_strides(shape, itemsize):
    """C-order strides of ``shape``, in units of ``itemsize`` (bytes, or 1: elements)."""
    out, acc = [], itemsize
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))

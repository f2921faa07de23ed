"""cuda.dlpack: DLPack capsules of CUDA tensors, both ways, built with ctypes.

Room: CUDA runtime (below the ops). numba-cuda has no DLPack exporter, so this module lays
out DLPack's C structs itself (``dlpack.h``: ``DLTensor``, ``DLManagedTensor``, and from
DLPack 1.0 ``DLManagedTensorVersioned``) with ``ctypes``, as the DLPack Python
specification asks:

- **Export** (``export``): a ``PyCapsule`` named ``"dltensor"`` holding a
  ``DLManagedTensor``, or, when the consumer passes ``max_version >= (1, 0)``, one named
  ``"dltensor_versioned"`` holding a ``DLManagedTensorVersioned`` (version 1.0). Device
  ``(kDLCUDA, index)``, the tensor's shape, strides in elements (always given),
  ``byte_offset`` 0 and the device pointer of its buffer. numgrad keeps the structs and a
  reference to the tensor's storage in ``_LIVE`` until the deleter runs, so the caching
  allocator cannot hand the memory out again while the consumer holds it. The consumer
  renames the capsule ``"used_dltensor"`` and calls the deleter when it is done; a
  capsule dropped unconsumed calls the deleter from its destructor. Either way it runs
  once (``stats`` counts).
- **Streams**: numgrad queues every kernel and copy on the legacy default stream. The
  consumer names the stream it will use; before the capsule is returned, an event
  recorded on the legacy default stream is made a dependency of that stream (an
  asynchronous wait, no host synchronisation), so the consumer's work starts after
  every numgrad kernel queued before. ``None`` and ``1`` are the legacy default stream
  itself (ordered already), ``-1`` asks for no synchronisation, ``2`` is the per-thread
  default stream, other integers are ``cudaStream_t`` handles; ``0`` is ambiguous and
  refused, as the specification says.
- **Import** (``import_capsule``): the producer is asked for a capsule
  (``stream=1``: numgrad computes on the legacy default stream), which is checked
  (device, dtype, C-contiguous strides, version) before it is renamed ``used_*``, then
  wrapped without a copy; the producer's deleter runs when the numgrad storage dies.

Tested under Numba's CUDA simulator, where a device pointer is a host address: the
capsules' layout, the round trip through ``ng.from_dlpack``, the deleter's single run,
the errors and the versioned/unversioned choice. It has NOT been run against PyTorch,
CuPy or JAX on a real GPU, nor has the stream handling.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from numgrad.cuda import array as cuda_array

KDL_CUDA, KDL_CUDA_MANAGED = 2, 13
READ_ONLY, IS_COPIED = 1, 2          # DLPACK_FLAG_BITMASK_*
VERSION = (1, 0)                     # of the versioned structs this module writes

NAME, USED = b"dltensor", b"used_dltensor"
NAME_V, USED_V = b"dltensor_versioned", b"used_dltensor_versioned"

# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6.
_CODES = {"int64": (0, 64), "int32": (0, 32), "float32": (2, 32), "float64": (2, 64),
          "bool": (6, 8), "int16": (0, 16), "int8": (0, 8), "uint8": (1, 8)}
_DTYPES = {(code, bits, 1): np.dtype(name) for name, (code, bits) in _CODES.items()}
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}

_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def _capi(name, restype, *argtypes):
    # Private prototypes: setting argtypes on ctypes.pythonapi's shared function objects
    # would change them for every other library in the process.
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_capsule_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                     _DESTRUCTOR)
_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object,
                     ctypes.c_char_p)
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
# The destructor gets a capsule being freed: raw pointers, never a py_object (which
# would take a reference to an object at refcount 0).
_is_valid_raw = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_get_pointer_raw = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_char_p)

_LIVE = {}      # address of an exported managed tensor -> (its structs, the storage)
stats = {"exported": 0, "released": 0}


def _release(addr):
    """The deleter of an exported tensor: numgrad's reference to the storage goes (its
    memory may be reused once nothing else holds it)."""
    if _LIVE.pop(addr, None) is not None:
        stats["released"] += 1


_deleter = _DELETER(_release)


def _destroy(cap):
    # A capsule nobody consumed still holds its tensor: release it as a consumer would.
    # A consumed one (renamed "used_...") is the consumer's to release.
    for name in (NAME, NAME_V):
        if _is_valid_raw(cap, name):
            _release(_get_pointer_raw(cap, name))


_destructor = _DESTRUCTOR(_destroy)


# ------------------------------------------------------------------------------ export
def export(arr, index, *, versioned, stream=None, copied=False):
    """A DLPack capsule of the ``CudaArray`` ``arr`` on device ``index``, after making the
    consumer's ``stream`` wait for numgrad's queued work (see the module docstring)."""
    code = _CODES.get(arr.dtype.name)
    if code is None:
        raise BufferError(f"numgrad cannot export a CUDA tensor of dtype {arr.dtype} through "
                          f"DLPack ({cuda_array.NAMES_TEXT} are its dtypes)")
    wait_for_numgrad(stream, index)
    ndim = len(arr.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*cuda_array.c_strides(arr.shape, 1))
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = arr.__cuda_array_interface__["data"][0] or None
    t.device = DLDevice(KDL_CUDA, index)
    t.ndim = ndim
    t.dtype = DLDataType(code[0], code[1], 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    if versioned:
        managed.version = DLPackVersion(*VERSION)
        managed.flags = IS_COPIED if copied else 0
    managed.deleter = _deleter
    addr = ctypes.addressof(managed)
    _LIVE[addr] = (managed, shape, strides, arr)
    stats["exported"] += 1
    return _capsule_new(addr, NAME_V if versioned else NAME, _destructor)


def wait_for_numgrad(stream, index):
    """Make the consumer's ``stream`` (the DLPack ``stream`` argument) wait for the work
    numgrad queued on the legacy default stream so far."""
    if stream is None:
        return
    if isinstance(stream, bool) or not isinstance(stream, int):  # (True == 1: test first)
        raise TypeError(f"__dlpack__(): stream must be None or an int for a CUDA tensor, "
                        f"got {type(stream).__name__}")
    if stream == -1 or stream == 1:
        return          # no synchronisation asked, or the legacy default stream itself
    if stream == 0 or stream < -1:
        raise ValueError(f"__dlpack__(): stream={stream} is not a CUDA stream DLPack allows "
                         "(0 is ambiguous): pass 1 for the legacy default stream, 2 for the "
                         "per-thread default stream, or a cudaStream_t handle")
    from numgrad.cuda import device as cuda_device
    if cuda_device.simulated():
        return          # the simulator runs every launch to completion
    from numba import cuda
    with cuda.gpus[index]:
        theirs = cuda.per_thread_default_stream() if stream == 2 else \
            cuda.external_stream(stream)
        done = cuda.event(timing=False)
        done.record(cuda.legacy_default_stream())
        done.wait(theirs)


# ------------------------------------------------------------------------------ import
class _Imported:
    """Holds memory a DLPack producer lent: the producer's deleter runs when the numgrad
    storage over it dies."""


def import_capsule(obj):
    """``(CudaArray, read_only)`` sharing the memory of ``obj``'s CUDA DLPack capsule."""
    cap = _ask(obj)
    versioned = type(cap).__name__ == "PyCapsule" and bool(_is_valid(cap, NAME_V))
    if not versioned and not (type(cap).__name__ == "PyCapsule" and _is_valid(cap, NAME)):
        raise BufferError(f"from_dlpack(): {type(obj).__name__}.__dlpack__() returned "
                          f"{_describe(cap)}, not an unused DLPack capsule")
    addr = _get_pointer(cap, NAME_V if versioned else NAME)
    managed = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(addr)
    if versioned and managed.version.major != VERSION[0]:
        raise BufferError(f"from_dlpack(): the producer wrote DLPack "
                          f"{managed.version.major}.{managed.version.minor}, which numgrad "
                          f"(DLPack {VERSION[0]}.x) cannot read")
    t = managed.dl_tensor
    kind, index = int(t.device.device_type), int(t.device.device_id)
    if kind not in (KDL_CUDA, KDL_CUDA_MANAGED):
        raise BufferError(f"from_dlpack(): the capsule is on DLPack device type {kind}, not "
                          "CUDA (2) as the producer's __dlpack_device__ said")
    key = (int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes))
    dtype = _DTYPES.get(key)
    if dtype is None:
        name = f"{_CODE_NAMES.get(key[0], f'code-{key[0]} ')}{key[1] if key[0] != 6 else ''}"
        raise TypeError(f"from_dlpack(): numgrad has no {name}"
                        f"{f' x{key[2]}' if key[2] != 1 else ''} dtype (its dtypes are "
                        f"{cuda_array.NAMES_TEXT}); convert on the producer's side "
                        "first, e.g. t.double() or t.long()")
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    if t.strides and not _contiguous(shape, [int(t.strides[i]) for i in range(t.ndim)]):
        raise BufferError("from_dlpack(): numgrad wraps C-contiguous CUDA memory only; make "
                          "the tensor contiguous on the producer's side first "
                          "(x.contiguous() / cupy.ascontiguousarray)")
    read_only = versioned and bool(managed.flags & READ_ONLY)
    ptr = (t.data or 0) + int(t.byte_offset)
    release = ctypes.cast(managed.deleter, ctypes.c_void_p).value
    # Consumed from here on: the deleter is ours to call, exactly once.
    _set_name(cap, USED_V if versioned else USED)
    owner = _Imported()
    weakref.finalize(owner, _call_deleter, release, addr)
    try:
        arr = cuda_array.from_pointer(ptr, shape, dtype, index, owner)
    except BaseException:
        del owner      # (runs the deleter)
        raise
    return arr, read_only


def _ask(obj):
    """The producer's capsule for use on the legacy default stream, versioned if it can."""
    try:
        return obj.__dlpack__(stream=1, max_version=VERSION)
    except TypeError:   # a producer from before DLPack 1.0's keywords
        return obj.__dlpack__(stream=1)


def _call_deleter(fn, addr):
    if fn:
        _DELETER(fn)(addr)


def _contiguous(shape, strides):
    if 0 in shape:
        return True
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _describe(cap):
    if type(cap).__name__ != "PyCapsule":
        return f"a {type(cap).__name__}"
    for name in (USED, USED_V):
        if _is_valid(cap, name):
            return "a capsule that was consumed already"
    return "a capsule of another kind"

"""DLPack capsules of CUDA tensors (``cuda.dlpack``), in Numba's simulator.

Under the simulator a CUDA tensor's "device pointer" is the host address of its buffer,
so a capsule can be read back byte by byte. The layout is read with the offsets of
``dlpack.h`` on a 64-bit machine, written out here independently of the module (and
first checked against NumPy's own capsule), so a wrong field order in the module's
ctypes structs would fail here. Not run against PyTorch, CuPy or JAX on a GPU.
"""
from __future__ import annotations

import ctypes
import gc
import weakref

import numpy as np
import pytest
from cuda_cases import require_simulator

import numgrad as ng
import numgrad.cuda.dlpack as cuda_dlpack

DTYPES = {"float32": (2, 32), "float64": (2, 64), "int64": (0, 64), "bool": (6, 8)}

_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi))


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def _u(kind, addr):
    return getattr(ctypes, kind).from_address(addr).value


def read(cap):
    """Everything a consumer reads from a capsule, by dlpack.h's offsets."""
    name = _get_name(cap)
    base = _get_pointer(cap, name)
    out = {"name": name.decode()}
    if name == b"dltensor_versioned":
        out["version"] = (_u("c_uint32", base), _u("c_uint32", base + 4))
        out["flags"] = _u("c_uint64", base + 24)
        out["deleter"] = _u("c_void_p", base + 16)
        t = base + 32
    else:
        out["deleter"] = _u("c_void_p", base + 56)
        t = base
    ndim = _u("c_int32", t + 16)
    shape_p, strides_p = _u("c_void_p", t + 24), _u("c_void_p", t + 32)
    out.update(
        data=_u("c_void_p", t) or 0, device=(_u("c_int32", t + 8), _u("c_int32", t + 12)),
        ndim=ndim, dtype=(_u("c_uint8", t + 20), _u("c_uint8", t + 21), _u("c_uint16", t + 22)),
        shape=tuple(_u("c_int64", shape_p + 8 * i) for i in range(ndim)),
        strides=None if not strides_p else tuple(_u("c_int64", strides_p + 8 * i)
                                                 for i in range(ndim)),
        byte_offset=_u("c_uint64", t + 40))
    return out


def test_the_offsets_used_here_read_numpys_own_capsules():
    a = np.arange(6.0).reshape(2, 3)[:, ::2]            # a strided view
    for max_version, name in ((None, "dltensor"), ((1, 0), "dltensor_versioned")):
        got = read(a.__dlpack__() if max_version is None else
                   a.__dlpack__(max_version=max_version))
        assert got["name"] == name and got["device"] == (1, 0)
        assert got["shape"] == (2, 2) and got["strides"] == (3, 2)
        assert got["dtype"] == (2, 64, 1)
        assert got["data"] + got["byte_offset"] == a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 3)])
def test_capsule_layout(dtype, max_version):
    t = ng.tensor(np.arange(24).reshape(2, 3, 4) % 2, dtype=getattr(ng, dtype), device="cuda")
    cap = t.__dlpack__() if max_version is None else t.__dlpack__(max_version=max_version)
    got = read(cap)
    versioned = max_version is not None and max_version >= (1, 0)
    assert got["name"] == ("dltensor_versioned" if versioned else "dltensor")
    if versioned:
        assert got["version"] == (1, 0) and got["flags"] == 0
    assert got["device"] == (2, 0) == t.__dlpack_device__()
    assert got["ndim"] == 3 and got["shape"] == (2, 3, 4) and got["strides"] == (12, 4, 1)
    assert got["dtype"] == (*DTYPES[dtype], 1)
    assert got["byte_offset"] == 0
    assert got["data"] == t.__cuda_array_interface__["data"][0] != 0
    assert got["deleter"]


def test_scalar_and_empty_tensors():
    got = read(ng.tensor(2.5, device="cuda").__dlpack__())
    assert got["ndim"] == 0 and got["shape"] == () and got["data"]
    got = read(ng.zeros(0, 3, device="cuda").__dlpack__())
    assert got["shape"] == (0, 3)
    assert ng.from_dlpack(ng.zeros(0, 3, device="cuda")).shape == (0, 3)


def test_round_trip_shares_memory():
    t = ng.tensor(np.arange(6.0).reshape(2, 3), device="cuda")
    u = ng.from_dlpack(t)
    assert u.device == t.device and u.shape == t.shape and u.dtype == t.dtype
    assert u.__cuda_array_interface__["data"] == t.__cuda_array_interface__["data"]
    t._data.buf.copy_to_device(np.full(6, 9.0))      # a write into the buffer ...
    np.testing.assert_array_equal(u.cpu().numpy(), np.full((2, 3), 9.0))  # ... read here
    c = ng.from_dlpack(t, copy=True)
    assert c.__cuda_array_interface__["data"] != t.__cuda_array_interface__["data"]
    np.testing.assert_array_equal(c.cpu().numpy(), t.cpu().numpy())


def _released():
    gc.collect()
    return cuda_dlpack.stats["released"]


@pytest.mark.parametrize("consumed", [True, False])
def test_the_deleter_runs_once_and_keeps_the_storage_alive_until_then(consumed):
    t = ng.tensor(np.arange(4.0), device="cuda")
    storage = weakref.ref(t._data)
    start = _released()
    cap = t.__dlpack__(max_version=(1, 0))
    del t
    assert _released() == start and storage() is not None    # the capsule holds it
    if consumed:
        class Producer:
            def __dlpack_device__(self):
                return (2, 0)

            def __dlpack__(self, **kwargs):
                return cap
        u = ng.from_dlpack(Producer())
        assert _get_name(cap) == b"used_dltensor_versioned"
        del cap
        assert _released() == start and storage() is not None  # the importer holds it
        assert u.cpu().numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
        del u
    else:
        del cap
    assert _released() == start + 1
    assert storage() is None


def test_copy_and_host_export():
    t = ng.tensor(np.arange(3.0), device="cuda")
    got = read(t.__dlpack__(max_version=(1, 0), copy=True))
    assert got["flags"] == cuda_dlpack.IS_COPIED
    assert got["data"] != t.__cuda_array_interface__["data"][0]
    host = t.__dlpack__(dl_device=(1, 0))       # a copy, through NumPy's exporter
    assert read(host)["device"] == (1, 0)

    class Host:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            return t.__dlpack__(dl_device=(1, 0), **kwargs)
    np.testing.assert_array_equal(np.from_dlpack(Host()), np.arange(3.0))


def test_export_errors_say_what_to_do():
    t = ng.ones(2, device="cuda")
    with pytest.raises(BufferError, match="require gradient"):
        ng.ones(2, device="cuda", requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match=r"DLPack device \(4, 0\).*t\.cpu\(\)"):
        t.__dlpack__(dl_device=(4, 0))
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(ValueError, match="0 is ambiguous"):
        t.__dlpack__(stream=0)
    for stream in ("default", True, False):   # a bool is no stream, as in PyTorch
        with pytest.raises(TypeError, match="stream must be None or an int"):
            t.__dlpack__(stream=stream)
    for stream in (None, -1, 1, 2, 12345):   # the simulator has nothing to wait for
        read(t.__dlpack__(stream=stream))


class _Patched:
    """A CUDA producer whose capsule (one of numgrad's, then edited) says something
    numgrad cannot take."""

    def __init__(self, edit, versioned=False):
        self.cap = ng.tensor(np.arange(6.0).reshape(2, 3), device="cuda").__dlpack__(
            max_version=(1, 0) if versioned else None)
        base = _get_pointer(self.cap, _get_name(self.cap))
        edit(base, base + 32 if versioned else base)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return self.cap


def _set(kind, addr, value):
    getattr(ctypes, kind).from_address(addr).value = value


@pytest.mark.parametrize("edit, error, match", [
    (lambda b, t: (_set("c_uint8", t + 20, 2), _set("c_uint8", t + 21, 16)),
     TypeError, "no float16 dtype"),
    (lambda b, t: (_set("c_uint8", t + 20, 1), _set("c_uint8", t + 21, 16)),
     TypeError, "no uint16 dtype"),
    (lambda b, t: _set("c_int64", _u("c_void_p", t + 32), 1), BufferError, "C-contiguous"),
    (lambda b, t: _set("c_int32", t + 8, 4), BufferError, "device type 4"),
])
def test_import_errors_leave_the_capsule_to_its_producer(edit, error, match):
    start = _released()
    producer = _Patched(edit)
    with pytest.raises(error, match=match):
        ng.from_dlpack(producer)
    assert _get_name(producer.cap) == b"dltensor"     # not consumed
    del producer
    assert _released() == start + 1                   # its destructor released it


def test_import_of_a_newer_major_version_or_a_used_capsule_is_refused():
    producer = _Patched(lambda b, t: _set("c_uint32", b, 2), versioned=True)
    with pytest.raises(BufferError, match="DLPack 2.0"):
        ng.from_dlpack(producer)
    ng.from_dlpack(_Patched(lambda b, t: None))
    used = _Patched(lambda b, t: None)
    ng.from_dlpack(used)
    with pytest.raises(BufferError, match="consumed already"):
        ng.from_dlpack(used)


def test_read_only_memory_is_copied_unless_copy_is_false():
    producer = _Patched(lambda b, t: _set("c_uint64", b + 24, cuda_dlpack.READ_ONLY),
                        versioned=True)
    src = ng.tensor(np.arange(6.0).reshape(2, 3))
    t = ng.from_dlpack(producer)
    np.testing.assert_array_equal(t.cpu().numpy(), src.numpy())
    ptr = _get_pointer(producer.cap, b"used_dltensor_versioned")
    assert t.__cuda_array_interface__["data"][0] != _u("c_void_p", ptr + 32)
    with pytest.raises(BufferError, match="read-only"):
        ng.from_dlpack(_Patched(lambda b, t: _set("c_uint64", b + 24, cuda_dlpack.READ_ONLY),
                                versioned=True), copy=False)

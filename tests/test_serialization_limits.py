"""ng.save / ng.load under bad input and at scale: keys that cannot round-trip are refused
at save, every lie a file can tell is a LoadError (never NumPy's or Python's own error, never
an allocation of what the file claims), a compressed archive is capped at a stated multiple
of its size, both directions stream (memory measured with tracemalloc), and the temporary
file of a save killed by SIGKILL is removed by the next save."""
from __future__ import annotations

import io
import json
import os
import socket
import struct
import subprocess
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest

import numgrad as ng
from numgrad.serialization import MAX_INFLATION, LoadError


def _saved(obj):
    buf = io.BytesIO()
    ng.save(obj, buf)
    return buf.getvalue()


def _edited(edit, obj=None):
    data = _saved({"a": ng.ones(3), "b": ng.tensor([1, 2])} if obj is None else obj)
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    edit(header)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data[8 + n:]


def _entry(i, key, value):
    def edit(h):
        h["tensors"][i][key] = value
    return edit


def _tree(value):
    def edit(h):
        h["tree"] = value
    return edit


def test_a_key_holding_a_tensor_is_refused_at_save():
    for key in [(ng.ones(1),), ("a", (ng.ones(1),))]:
        with pytest.raises(TypeError, match="ng.save cannot store a dict key"):
            ng.save({"w": ng.zeros(3), key: "k"}, io.BytesIO())
    tree = {("a", (1, None), 2.5): ng.ones(2), (): 3}
    got = ng.load(io.BytesIO(_saved(tree)))
    assert list(got) == list(tree) and got[()] == 3


def _npy(shape, dtype="<f8", data=b""):
    head = {"descr": dtype, "fortran_order": False, "shape": shape}
    text = repr(head).encode()
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


def _zip(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


BAD = {
    "extent_2_70": (_edited(_entry(0, "shape", [2 ** 70])), "lies about sizes"),
    "zero_beside_2_70": (_edited(_entry(0, "shape", [0, 2 ** 70]), {"a": ng.ones(0)}),
                         "cannot hold"),
    "65_dims": (_edited(_entry(0, "shape", [1] * 65)), "at most 64"),
    "device_meta": (_edited(_entry(0, "device", "meta")), "device 'meta'"),
    "device_not_str": (_edited(_entry(0, "device", ["cpu"])), "device"),
    "int_requires_grad": (_edited(_entry(1, "requires_grad", True)), "floating point"),
    "requires_grad_str": (_edited(_entry(0, "requires_grad", "yes")), "requires_grad"),
    "key_tuple_holding_list": (_edited(_tree({"dict": [[{"tuple": [{"list": []}]}, 1]]})),
                               "not a scalar"),
    "key_list": (_edited(_tree({"dict": [[{"list": []}, 1]]})), "not a scalar"),
    "npz_member_not_npy": (_zip({"x.npy": b"hello, not an array"}), "corrupt"),
    "npz_member_other_name": (_zip({"x.txt": b"hi"}), "not a .npy"),
    "npy_claims_1e12": (_npy((10 ** 12,)), "declares 8000000000000 bytes"),
    "npz_member_claims_1e12": (_zip({"x.npy": _npy((10 ** 12,))}), "declares"),
    "npy_structured": (_npy((2,), [("a", "<f8")], b"\0" * 16), "cannot hold"),
    "npy_truncated": (_npy((4,), "<f8", b"\0" * 8), "declares 32 bytes"),
    "npy_version_9": (b"\x93NUMPY\x09\x00" + b"\0" * 16, "corrupt"),
    "npy_too_many_dims": (_npy((1,) * 65), "at most 64"),
}


@pytest.mark.parametrize("data,message", BAD.values(), ids=BAD.keys())
def test_every_lie_is_a_load_error_before_anything_is_allocated(data, message):
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match=message):
            ng.load(io.BytesIO(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20 + 4 * len(data), peak


def _bomb(n=2 ** 20):
    buf = io.BytesIO()
    np.savez_compressed(buf, z=np.zeros(n))  # 8 MiB of zeros in a few KiB
    return buf.getvalue()


def test_a_compressed_archive_is_capped_at_a_multiple_of_its_size():
    data = _bomb()
    assert len(data) * MAX_INFLATION < 8 * 2 ** 20
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match="max_inflation"):
            ng.load(io.BytesIO(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20
    got = ng.load(io.BytesIO(data), max_inflation=None)  # the user vouches for it
    assert got["z"].shape == (2 ** 20,) and not got["z"].numpy().any()


def test_a_member_cannot_hold_more_than_its_declared_size():
    # The zip says 80 bytes; the .npy header inside claims a million floats.
    with pytest.raises(LoadError, match="declares"):
        ng.load(io.BytesIO(_zip({"x.npy": _npy((10 ** 6,), "<f8", b"\0" * 80)},
                                zipfile.ZIP_DEFLATED)))


def test_npy_and_npz_of_other_byte_orders_and_layouts_load_exactly(tmp_path):
    a = np.arange(12, dtype=">f8").reshape(3, 4)
    f = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(tmp_path / "a.npy", a)
    np.savez_compressed(tmp_path / "b.npz", a=a, f=f, h=np.ones(2, np.float16))
    np.testing.assert_array_equal(ng.load(tmp_path / "a.npy").numpy(), a)
    got = ng.load(tmp_path / "b.npz")
    np.testing.assert_array_equal(got["f"].numpy(), f)
    assert got["f"].numpy().flags.c_contiguous and got["h"].dtype == ng.float32


def _peak(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_save_and_load_stream_through_the_file(tmp_path):
    n = 4 * 2 ** 20  # 4 MiB of float32
    x = ng.ones(n // 4)
    path = tmp_path / "big.ng"
    _, saved = _peak(lambda: ng.save({"x": x, "small": ng.zeros(3)}, path))
    assert saved < n // 8, saved  # the tensor's own memory goes to the file, no copy
    got, loaded = _peak(lambda: ng.load(path))
    assert n <= loaded < n + n // 8, loaded  # the result, and nothing of its size besides
    assert got["x"].shape == x.shape and got["x"].numpy().all()
    # A view that is not contiguous costs one copy of itself, not of the whole file.
    _, strided = _peak(lambda: ng.save({"x": x.reshape(2, -1).t()}, path))
    assert strided < n + n // 8, strided


_KILLED_SAVE = """
import os, signal, sys
import numgrad as ng
os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # die just before the rename
ng.save({"w": ng.ones(4)}, sys.argv[1])
"""


def test_a_save_killed_by_sigkill_leaves_a_file_the_next_save_removes(tmp_path):
    path = tmp_path / "ckpt.ng"
    ng.save({"w": ng.zeros(4)}, path)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    r = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(path)], env=env)
    assert r.returncode == -9
    orphans = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert len(orphans) == 1 and str(r.args) and ng.load(path)["w"].sum().item() == 0
    # A live save's temporary file (this process's pid) is left alone.
    live = tmp_path / f".ckpt.ng.{socket.gethostname()}.{os.getpid()}.abcdefgh.tmp"
    live.write_bytes(b"")
    ng.save({"w": ng.ones(4)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.ng", live.name])
    assert ng.load(path)["w"].sum().item() == 4


@pytest.mark.skipif(not ng.cuda.is_available(), reason="needs CUDA or Numba's simulator")
def test_cuda_tensors_stream_through_a_host_buffer_and_come_back_on_the_device():
    x = ng.arange(6, dtype=ng.float32, device="cuda").reshape(2, 3).t()  # not contiguous
    got = ng.load(io.BytesIO(_saved({"x": x})))["x"]
    assert got.device.type == "cuda" and got.shape == (3, 2)
    np.testing.assert_array_equal(got.cpu().numpy(), x.cpu().numpy())
    assert ng.load(io.BytesIO(_saved({"x": x})), map_location="cpu")["x"].device.type == "cpu"

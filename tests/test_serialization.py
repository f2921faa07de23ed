"""ng.save / ng.load: round trips of nested trees, atomic writes, .npz files made from a
PyTorch state_dict, and clear errors (never code execution) for pickles, corrupt and
truncated files, headers that lie, and unknown dtypes."""
from __future__ import annotations

import io
import json
import os
import pickle
import struct

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402
from numgrad.serialization import LoadError  # noqa: E402


def _tree():
    rng = np.random.default_rng(0)
    return {
        "model": {
            "w": ng.tensor(rng.standard_normal((2, 3)).astype(np.float32)),
            "b": ng.tensor(rng.standard_normal(3)),                       # float64
            "steps": ng.tensor([1, -2, 3]),                               # int64
            "mask": ng.tensor([True, False]),                             # bool
            "scale": ng.tensor(2.5),                                      # 0-d float32
            "count": ng.tensor(7),                                        # 0-d int64
            "empty": ng.zeros(0, 4),
        },
        "optimizer": {
            "state": {0: {"step": 3, "exp_avg": ng.ones(2)}, 1: {"momentum_buffer": None}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "params": [0, 1],
                              "amsgrad": False, "foreach": None, "weight_decay": 0.0,
                              "max_norm": float("inf"), "nan": float("nan"), "neg0": -0.0}],
        },
        "name": "run-1",
        "history": [1.5, 2, "x", None, True, (), []],
        "leaf": ng.tensor([1.0, 2.0], requires_grad=True),
    }


def _assert_same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ng.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.requires_grad == b.requires_grad and b.is_leaf
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert not np.shares_memory(a.detach().numpy(), b.detach().numpy())
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b)  # nan, inf and -0.0 exactly
    else:
        assert a == b


def test_round_trip_of_a_nested_tree(tmp_path):
    tree = _tree()
    path = tmp_path / "ckpt.ng"
    ng.save(tree, path)
    _assert_same(tree, ng.load(path))
    _assert_same(tree, ng.load(str(path)))


def test_round_trip_through_a_file_object_and_of_a_bare_tensor():
    buf = io.BytesIO()
    ng.save(ng.tensor([[1, 2], [3, 4]]), buf)
    buf.seek(0)
    _assert_same(ng.tensor([[1, 2], [3, 4]]), ng.load(buf))


def test_loaded_tensors_are_fresh_leaves_with_version_zero(tmp_path):
    ng.save({"p": ng.ones(2, requires_grad=True)}, tmp_path / "p.ng")
    p = ng.load(tmp_path / "p.ng")["p"]
    assert p.requires_grad and p.is_leaf and p._version == 0
    (p * p).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0])


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.ng"
    ng.save({"a": ng.ones(2)}, path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        ng.save({"a": ng.zeros(1000)}, path)
    assert path.read_bytes() == before          # the old checkpoint is intact
    assert os.listdir(tmp_path) == ["ckpt.ng"]  # and the temporary file is gone


def test_save_refuses_objects_it_cannot_store_without_pickle(tmp_path):
    for bad in ({"f": lambda: 0}, [object()], {ng.ones(1): 1}, {"a": {1, 2}}):
        with pytest.raises(TypeError, match="ng.save cannot store"):
            ng.save(bad, tmp_path / "bad.ng")
    assert not os.listdir(tmp_path)


def test_torch_state_dict_saved_as_npz_loads_as_a_dict_of_tensors(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.Linear(4, 2))
    sd = model.state_dict()
    path = tmp_path / "sd.npz"
    np.savez(path, **{k: v.numpy() for k, v in sd.items()})
    got = ng.load(path)
    assert list(got) == list(sd)   # including BatchNorm's int64 num_batches_tracked
    for k, v in sd.items():
        assert isinstance(got[k], ng.Tensor)
        assert_close(got[k], v)
    np.save(tmp_path / "w.npy", sd["0.weight"].numpy())
    assert_close(ng.load(tmp_path / "w.npy"), sd["0.weight"])


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize("make", ["pickle", "torch_save", "torch_save_legacy", "npz_objects"])
def test_pickles_are_refused_and_never_executed(tmp_path, make, monkeypatch):
    path = tmp_path / "evil"
    if make == "pickle":
        path.write_bytes(pickle.dumps({"x": _Boom()}))
    elif make == "torch_save":
        torch.save({"x": torch.ones(2)}, path)
    elif make == "torch_save_legacy":
        torch.save({"x": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    else:
        np.savez(path, x=np.array([_Boom()], dtype=object))
        path = tmp_path / "evil.npz"
    called = []  # what os.system would have run, had anything unpickled the file
    monkeypatch.setattr(os, "system", lambda cmd: called.append(cmd))
    with pytest.raises(LoadError, match="pickle|corrupt") as info:
        ng.load(path)
    assert "ng.load" in str(info.value) and str(path) in str(info.value)
    assert called == []


def _good_bytes():
    buf = io.BytesIO()
    ng.save({"a": ng.ones(3), "b": ng.tensor([1, 2])}, buf)
    return buf.getvalue()


def _with_header(edit):
    data = _good_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    edit(header)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


def _set(path, value):
    def edit(h):
        node = h
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


CORRUPT = {
    "empty": (b"", "truncated"),
    "short": (b"\x01\x02", "truncated"),
    "truncated_header": (_good_bytes()[:20], "truncated"),
    "truncated_data": (_good_bytes()[:-3], "truncated"),
    "trailing_bytes": (_good_bytes() + b"\0" * 8, "does not describe"),
    "huge_length": (struct.pack("<Q", 1 << 62) + b"{}", "truncated"),
    "not_json": (struct.pack("<Q", 4) + b"\xff\xfe{]", "not valid JSON"),
    "json_nan": (struct.pack("<Q", 3) + b"NaN", "not valid JSON"),
    "other_format": (_with_header(_set(["format"], "safetensors")), "not say it is a numgrad"),
    "future_version": (_with_header(_set(["version"], 99)), "version 99"),
    "unknown_dtype": (_with_header(_set(["tensors", 0, "dtype"], "F16")), "unknown dtype 'F16'"),
    "shape_lies": (_with_header(_set(["tensors", 0, "shape"], [4])), "lies about sizes"),
    "offset_lies": (_with_header(_set(["tensors", 1, "offsets"], [4, 20])), "lies about"),
    "offset_past_end": (_with_header(_set(["tensors", 1, "offsets"], [12, 1 << 40])),
                        "lies about"),
    "negative_shape": (_with_header(_set(["tensors", 0, "shape"], [-3])), "malformed shape"),
    "bad_tensor_ref": (_with_header(_set(["tree"], {"tensor": 9})), "does not know"),
    "bad_tag": (_with_header(_set(["tree"], {"code": "os.system('x')"})), "does not know"),
    "bad_zip": (b"PK\x03\x04" + b"\0" * 30, "zip"),
}


@pytest.mark.parametrize("data,message", CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_files_give_clear_errors(data, message):
    with pytest.raises(LoadError, match=message):
        ng.load(io.BytesIO(data))


def test_load_onto_a_missing_cuda_device_says_to_use_map_location(tmp_path, monkeypatch):
    from numgrad import devices
    data = _with_header(_set(["tensors", 0, "device"], "cuda:0"))
    monkeypatch.setattr(devices, "cuda_is_available", lambda: False)
    with pytest.raises(LoadError, match="map_location='cpu'"):
        ng.load(io.BytesIO(data))
    got = ng.load(io.BytesIO(data), map_location="cpu")
    assert got["a"].device.type == "cpu"


def test_a_deeply_nested_header_is_a_clear_error():
    raw = json.dumps({"format": "numgrad", "version": 1, "tree": 0, "tensors": []})
    raw = raw.replace('"tree": 0', '"tree": ' + '{"list": [' * 100000 + ']}' * 100000)
    data = struct.pack("<Q", len(raw)) + raw.encode()
    with pytest.raises(LoadError, match="JSON|nested"):
        ng.load(io.BytesIO(data))

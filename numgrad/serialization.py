"""serialization: ``ng.save`` / ``ng.load``, a file format that never unpickles.

Room: core. Imports tensor, creation and devices (lazily); nothing here can run code
from a file: the header is JSON and the tensors are raw bytes.

Why this layout and not ``.npz``: ``.npz`` holds a flat name -> array map, so the tree
of a ``state_dict`` or an optimizer's ``state_dict`` (nested dicts with int keys,
tuples, floats, None) would need a second encoding beside it, and a zip adds a
decompressor and per-member headers to validate. One JSON header that says both the
tree and where each tensor's bytes are is the whole format (the layout of
safetensors), and every byte of it can be checked before use. ``ng.load`` still reads
``.npz`` and ``.npy`` files (with ``allow_pickle=False``), so a PyTorch ``state_dict``
saved as ``np.savez(path, **{k: v.numpy() for k, v in sd.items()})`` loads as a dict
of tensors.

The file::

    8 bytes      N, the header's length (unsigned little-endian)
    N bytes      UTF-8 JSON: {"format": "numgrad", "version": 1, "tree": ...,
                 "tensors": [{"dtype": "F32", "shape": [2, 3], "offsets": [0, 24],
                              "requires_grad": false, "device": "cpu"}, ...]}
                 (padded with spaces to a multiple of 8)
    the rest     each tensor's bytes, C order, little-endian, back to back; offsets
                 count from the end of the header

In ``tree``, JSON null/true/false/numbers/strings are themselves, and one-key objects
are tagged nodes: ``{"tensor": i}``, ``{"list": [...]}``, ``{"tuple": [...]}``,
``{"dict": [[key, value], ...]}`` (keys of any scalar kind, in order) and
``{"float": "nan" | "inf" | "-inf"}``. Tensors that shared memory are saved as
separate copies.
"""
from __future__ import annotations

import json
import math
import os
import struct
import tempfile

import numpy as np

from numgrad.tensor import Tensor

FORMAT, VERSION = "numgrad", 1
_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"),
           "BOOL": np.dtype(np.bool_)}
_CODE = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int64): "I64",
         np.dtype(np.bool_): "BOOL"}
_MAX_HEADER = 1 << 28  # 256 MiB of JSON is no state_dict's header: a corrupt length
_PICKLE_HINT = ("ng.load never unpickles, since unpickling runs code the file chooses. "
                "Convert the file where it was made, e.g. for a PyTorch state_dict "
                "`np.savez(path, **{k: v.detach().cpu().numpy() for k, v in sd.items()})`, "
                "and ng.load the .npz")


class LoadError(RuntimeError):
    """``ng.load`` met a file that is corrupt, truncated, lying about its layout, of an
    unknown dtype, or in a format it refuses to read (pickle)."""


# ------------------------------------------------------------------- saving
def _encode(obj, tensors):
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return {"tensor": len(tensors) - 1}
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        obj = float(obj)
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, dict):
        return {"dict": [[_encode_key(k), _encode(v, tensors)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {"tuple" if isinstance(obj, tuple) else "list": [_encode(v, tensors)
                                                                for v in obj]}
    raise TypeError(f"ng.save cannot store a {type(obj).__name__}: it stores tensors and "
                    "dicts, lists and tuples of them, with str, int, float, bool and None")


def _encode_key(k):
    if isinstance(k, (dict, list, Tensor)):
        raise TypeError(f"ng.save cannot store a dict key of type {type(k).__name__}: keys "
                        "must be str, int, float, bool, None or tuples of those")
    return _encode(k, [])


def _host_array(t: Tensor) -> np.ndarray:
    a = t.detach().cpu().numpy()
    return np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # keeps 0-d as 0-d


def to_bytes(obj) -> bytes:
    """The file ``ng.save`` writes, as bytes."""
    tensors = []
    tree = _encode(obj, tensors)
    entries, blobs, at = [], [], 0
    for t in tensors:
        a = _host_array(t)
        n = a.nbytes
        entries.append({"dtype": _CODE[np.dtype(a.dtype.newbyteorder("="))],
                        "shape": list(a.shape), "offsets": [at, at + n],
                        "requires_grad": bool(t.requires_grad), "device": str(t.device)})
        blobs.append(a.tobytes())
        at += n
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree,
                         "tensors": entries}, allow_nan=False).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)


def save(obj, f) -> None:
    """Write ``obj`` (a tensor, or dicts/lists/tuples of tensors, str, int, float, bool
    and None, such as a ``state_dict``) to the path or binary file ``f``
    (``torch.save``), in a format ``ng.load`` reads without unpickling. A path is
    written atomically: a temporary file in the same directory, then ``os.replace``, so
    a crash never leaves half a file. Raises TypeError for anything else in ``obj``.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.ng")
    >>> ng.save({"w": ng.ones(2), "step": 3}, path)
    >>> ng.load(path)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    data = to_bytes(obj)
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                               prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ------------------------------------------------------------------ loading
def load(f, map_location=None, *, weights_only=True) -> object:
    """Read what ``ng.save`` wrote to the path or binary file ``f`` (``torch.load``),
    or a ``.npz`` / ``.npy`` file (a ``.npz`` gives a dict of tensors, in order).
    Nothing in the file is ever executed: pickles are refused. Tensors come back on
    the device they were saved from, or on ``map_location`` (``"cpu"``, ``"cuda"``).

    Raises LoadError (a RuntimeError) for a pickle (a ``torch.save`` file among them),
    a corrupt or truncated file, a header whose sizes or offsets do not add up, or an
    unknown dtype. ``weights_only`` is accepted for PyTorch's spelling; loading is
    always weights-only.
    """
    if hasattr(f, "read"):
        data, name = f.read(), getattr(f, "name", "<file>")
    else:
        name = os.fspath(f)
        with open(name, "rb") as fh:
            data = fh.read()
    return from_bytes(data, str(name), map_location)


def from_bytes(data: bytes, name="<bytes>", map_location=None):
    """Parse a file's bytes as ``ng.load`` does."""
    def fail(why):
        return LoadError(f"ng.load: {name}: {why}")

    if data[:4] == b"PK\x03\x04" or data[:6] == b"\x93NUMPY":
        return _load_numpy(data, fail)
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise fail(f"this is a Python pickle (as torch.save writes). {_PICKLE_HINT}")
    if len(data) < 8:
        raise fail(f"the file is truncated or not a numgrad file ({len(data)} bytes; the "
                   "header length alone takes 8)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(len(data) - 8, _MAX_HEADER):
        raise fail(f"the header says it is {n} bytes long but the file has {len(data) - 8} "
                   "bytes after the length: the file is truncated, or not a numgrad file")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise fail(f"the header is not valid JSON ({e}): the file is corrupt") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise fail("the header does not say it is a numgrad file")
    if header.get("version") != VERSION:
        raise fail(f"format version {header.get('version')!r} is not one this numgrad "
                   f"reads ({VERSION}); a newer numgrad may have written it")
    body = memoryview(data)[8 + n:]
    tensors = _read_tensors(header.get("tensors"), body, fail, map_location)
    try:
        return _decode(header.get("tree"), tensors, fail)
    except RecursionError:
        raise fail("the header's tree is nested deeper than Python can rebuild") from None


def _no_constants(word):
    raise ValueError(f"{word} is not JSON")


def _read_tensors(entries, body, fail, map_location):
    if not isinstance(entries, list):
        raise fail("the header's tensor table is missing")
    out, at = [], 0
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise fail(f"tensor {i}'s header entry is not an object")
        code = e.get("dtype")
        if code not in _DTYPES:
            raise fail(f"tensor {i} has unknown dtype {code!r} (numgrad reads "
                       f"{', '.join(_DTYPES)})")
        shape, offsets = e.get("shape"), e.get("offsets")
        if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
            raise fail(f"tensor {i} has a malformed shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int for o in offsets)):
            raise fail(f"tensor {i} has malformed offsets {offsets!r}")
        begin, end = offsets
        dt = _DTYPES[code]
        want = math.prod(shape) * dt.itemsize
        if begin != at or end - begin != want:
            raise fail(f"tensor {i} ({code}, shape {shape}, {want} bytes) is said to span "
                       f"bytes [{begin}, {end}), but it should start at {at} and span {want}: "
                       "the header lies about sizes or offsets")
        if end > len(body):
            raise fail(f"the file is truncated: tensor {i} ends at byte {end} of the data but "
                       f"only {len(body)} bytes follow the header")
        a = np.frombuffer(body[begin:end], dtype=dt).reshape(shape).astype(dt.newbyteorder("="))
        out.append(_tensor(a, e, map_location, fail, i))
        at = end
    if at != len(body):
        raise fail(f"{len(body) - at} bytes follow the last tensor's data: the header does "
                   "not describe the file")
    return out


def _tensor(a, entry, map_location, fail, i):
    t = Tensor._make(np.array(a))  # a fresh, writable, aligned copy
    dev = str(map_location) if map_location is not None else entry.get("device", "cpu")
    if not isinstance(dev, str):
        raise fail(f"tensor {i} has a malformed device {dev!r}")
    if dev != "cpu":
        from numgrad import devices
        if dev.startswith("cuda") and not devices.cuda_is_available():
            raise fail(f"tensor {i} was saved on {dev}, and no CUDA device is available; "
                       "pass map_location='cpu' to load it on the CPU")
        t = Tensor._make(devices.upload(t._data, devices.target(dev)))
    if entry.get("requires_grad") is True:
        t._set_requires_grad(True)  # a fresh leaf, as saved (no version bump)
    return t


def _decode(node, tensors, fail):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, dict) and len(node) == 1:
        ((tag, value),) = node.items()
        if tag == "tensor" and type(value) is int and 0 <= value < len(tensors):
            return tensors[value]
        if tag in ("list", "tuple") and isinstance(value, list):
            items = [_decode(v, tensors, fail) for v in value]
            return tuple(items) if tag == "tuple" else items
        if tag == "dict" and isinstance(value, list) and all(
                isinstance(kv, list) and len(kv) == 2 for kv in value):
            return {_key(_decode(k, tensors, fail), fail): _decode(v, tensors, fail)
                    for k, v in value}
        if tag == "float" and value in ("nan", "inf", "-inf"):
            return float(value)
    raise fail(f"the header's tree has a node numgrad does not know: {str(node)[:80]}")


def _key(k, fail):
    if isinstance(k, (list, dict, Tensor)):
        raise fail("a dict key in the header's tree is not a scalar")
    return k


def _load_numpy(data, fail):
    import io
    import zipfile
    buf = io.BytesIO(data)
    if data[:4] == b"PK\x03\x04":
        try:
            names = zipfile.ZipFile(buf).namelist()
        except zipfile.BadZipFile as e:
            raise fail(f"a corrupt or truncated zip archive ({e})") from None
        if any(n.endswith(".pkl") for n in names):
            raise fail(f"this is a torch.save archive (its data is a pickle). {_PICKLE_HINT}")
        bad = [n for n in names if not n.endswith(".npy")]
        if bad:
            raise fail(f"a zip archive whose member {bad[0]!r} is not a .npy array, so not "
                       "a .npz file")
        buf.seek(0)
    try:
        got = np.load(buf, allow_pickle=False)
        if isinstance(got, np.ndarray):
            return _from_array(got, fail, "the array")
        with got:
            return {k: _from_array(got[k], fail, repr(k)) for k in got.files}
    except LoadError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise fail(f"a corrupt, truncated or pickled NumPy file ({e})") from None


def _from_array(a, fail, what):
    from numgrad.creation import _to_array
    try:
        return Tensor._make(_to_array(a))  # numgrad's dtype rules: float16 -> float32, ...
    except TypeError as e:
        raise fail(f"{what} has dtype {a.dtype}, which numgrad cannot hold ({e})") from None

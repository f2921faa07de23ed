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

Both directions stream through the file: ``ng.save`` writes the header, then each
tensor's memory as it is (a copy only of a tensor that is not contiguous little-endian
host memory, one at a time), and ``ng.load`` checks the whole header against the file's
size before it allocates anything, then reads each tensor straight into its own fresh
array. So the extra memory of either is at most one copy of the largest tensor, and no
file can make ``ng.load`` allocate more than the file holds. A compressed ``.npz`` can
declare more than it holds, so its declared sizes are capped at ``max_inflation`` times
the file's size (``MAX_INFLATION``, 100, by default).
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import socket
import struct
import tempfile
import zipfile
import zlib

import numpy as np

from numgrad.tensor import Tensor

FORMAT, VERSION = "numgrad", 1
# safetensors' dtype codes, little-endian as it stores them.
_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"),
           "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
           "U8": np.dtype("u1"), "BOOL": np.dtype(np.bool_)}
_CODE = {dt.newbyteorder("="): code for code, dt in _DTYPES.items()}
_MAX_HEADER = 1 << 28  # 256 MiB of JSON is no state_dict's header: a corrupt length
_MAX_DIMS = 64        # PyTorch's limit on a tensor's dimensions
MAX_INFLATION = 100   # a .npz may declare at most this many times its file's size
_DEVICE = re.compile(r"cpu|cuda(:\d+)?")  # whole strings only: used with fullmatch
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
    # A key holds no tensor (the tree's tensor table is the values'), nor, at any depth,
    # anything unhashable: a tuple key is checked all the way down.
    if isinstance(k, tuple):
        return {"tuple": [_encode_key(v) for v in k]}
    if isinstance(k, (dict, list, set, Tensor)):
        raise TypeError(f"ng.save cannot store a dict key of type {type(k).__name__}: keys "
                        "must be str, int, float, bool, None or tuples of those")
    return _encode(k, [])


def _host_array(t: Tensor) -> np.ndarray:
    """``t``'s values as contiguous little-endian host memory: its own array when it is
    that already (no copy), else one copy."""
    a = t.detach().cpu().numpy()
    return np.asarray(a, dtype=a.dtype.newbyteorder("<"), order="C")  # keeps 0-d as 0-d


def _header(obj):
    """``(the bytes before the tensors' data, the tensors)``; nothing is copied."""
    tensors = []
    tree = _encode(obj, tensors)
    entries, at = [], 0
    for t in tensors:
        n = math.prod(t.shape) * t.dtype.np.itemsize
        entries.append({"dtype": _CODE[t.dtype.np], "shape": list(t.shape),
                        "offsets": [at, at + n], "requires_grad": bool(t.requires_grad),
                        "device": str(t.device)})
        at += n
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree,
                         "tensors": entries}, allow_nan=False).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header, tensors


def _write(header, out) -> None:
    """Write ``_header(obj)``'s prefix, then each tensor's bytes."""
    prefix, tensors = header
    out.write(prefix)
    for t in tensors:
        a = _host_array(t)
        if a.size:
            out.write(a.reshape(-1).view(np.uint8).data)  # the array's own memory
        del a  # a copy (a CUDA tensor's, a strided view's) lives one tensor at a time


def to_bytes(obj) -> bytes:
    """The file ``ng.save`` writes, as bytes."""
    buf = io.BytesIO()
    _write(_header(obj), buf)
    return buf.getvalue()


def save(obj, f) -> None:
    """Write ``obj`` (a tensor, or dicts/lists/tuples of tensors, str, int, float, bool
    and None, such as a ``state_dict``) to the path or binary file ``f``
    (``torch.save``), in a format ``ng.load`` reads without unpickling. The tensors'
    memory is written as it is, so saving needs at most one extra copy of the largest
    tensor (of a CUDA or non-contiguous one). A path is written atomically: a temporary
    file in the same directory (``.NAME.HOST.PID.XXXX.tmp``), then ``os.replace``, so a
    crash never leaves half a file; a later save of the same path removes the temporary
    files of saves whose process on this host is gone (killed before it could). Raises
    TypeError for anything else in ``obj``, or a dict key holding a tensor or a list.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.ng")
    >>> ng.save({"w": ng.ones(2), "step": 3}, path)
    >>> ng.load(path)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    header = _header(obj)  # a TypeError here writes nothing, and leaves no temporary file
    if hasattr(f, "write"):
        _write(header, f)
        return
    path = os.path.abspath(os.fspath(f))
    folder, base = os.path.split(path)
    _remove_orphans(folder, base)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=_tmp_prefix(base), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            _write(header, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _tmp_prefix(base, pid=None):
    return f".{base}.{socket.gethostname()}.{os.getpid() if pid is None else pid}."


def _remove_orphans(folder, base):
    """Delete the temporary files that saves of ``base`` on this host left when their
    process died before it could (SIGKILL, a power cut): those whose process is gone.
    A live save's file is never touched (its pid answers)."""
    head = _tmp_prefix(base, pid="")[:-1]  # then the pid, a dot, mkstemp's letters
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not (name.startswith(head) and name.endswith(".tmp")):
            continue
        pid = name[len(head):].split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or a pid we cannot ask about): keep its file
    return True


# ------------------------------------------------------------------ loading
def load(f, map_location=None, *, weights_only=True, max_inflation=MAX_INFLATION) -> object:
    """Read what ``ng.save`` wrote to the path or binary file ``f`` (``torch.load``),
    or a ``.npz`` / ``.npy`` file (a ``.npz`` gives a dict of tensors, in order).
    Nothing in the file is ever executed: pickles are refused. Tensors come back on
    the device they were saved from, or on ``map_location`` (``"cpu"``, ``"cuda"``).

    Loading streams: every size in the file is checked against the file's own size
    before anything is allocated, and each tensor is read straight into its array, so
    ``ng.load`` allocates the tensors it returns and nothing of their size besides (a
    CUDA tensor passes through one host buffer). A compressed ``.npz`` may declare more
    than its file holds: ``ng.load`` refuses one whose members declare more than
    ``max_inflation`` times the file's size (100 by default; ``None`` lifts the cap, for
    a trusted archive of, say, mostly zeros).

    Raises LoadError (a RuntimeError) for a pickle (a ``torch.save`` file among them),
    a corrupt or truncated file, a header whose sizes, offsets, dims (at most 64),
    dtypes, devices or ``requires_grad`` do not add up, or an archive over the cap.
    ``weights_only`` is accepted for PyTorch's spelling; loading is always weights-only.
    """
    if hasattr(f, "read"):
        return _load_stream(f, str(getattr(f, "name", "<file>")), map_location, max_inflation)
    name = os.fspath(f)
    with open(name, "rb") as fh:
        return _load_stream(fh, str(name), map_location, max_inflation)


def from_bytes(data: bytes, name="<bytes>", map_location=None, max_inflation=MAX_INFLATION):
    """Parse a file's bytes as ``ng.load`` does."""
    return _load_stream(io.BytesIO(data), name, map_location, max_inflation)


def _load_stream(fh, name, map_location, max_inflation):
    def fail(why):
        return LoadError(f"ng.load: {name}: {why}")

    try:
        start = fh.tell()
        size = fh.seek(0, os.SEEK_END) - start
        fh.seek(start)
    except (AttributeError, OSError, ValueError):  # a pipe: read it whole
        fh = io.BytesIO(fh.read())
        start, size = 0, len(fh.getbuffer())
    magic = fh.read(8)
    fh.seek(start)
    if magic[:4] == b"PK\x03\x04":
        return _load_npz(fh, size, fail, max_inflation)
    if magic[:6] == b"\x93NUMPY":
        return _read_npy(fh, size, fail, "the array")
    if magic[:1] == b"\x80" and magic[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise fail(f"this is a Python pickle (as torch.save writes). {_PICKLE_HINT}")
    if size < 8:
        raise fail(f"the file is truncated or not a numgrad file ({size} bytes; the "
                   "header length alone takes 8)")
    fh.seek(start + 8)
    (n,) = struct.unpack("<Q", magic)
    if n > min(size - 8, _MAX_HEADER):
        raise fail(f"the header says it is {n} bytes long but the file has {size - 8} "
                   "bytes after the length: the file is truncated, or not a numgrad file")
    try:
        header = json.loads(fh.read(n).decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise fail(f"the header is not valid JSON ({e}): the file is corrupt") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise fail("the header does not say it is a numgrad file")
    if header.get("version") != VERSION:
        raise fail(f"format version {header.get('version')!r} is not one this numgrad "
                   f"reads ({VERSION}); a newer numgrad may have written it")
    specs = _check_table(header.get("tensors"), size - 8 - n, fail, map_location)
    tensors = [_tensor(_read_into(fh, dt, shape, fail, f"tensor {i}"), dev, grad, fail, i)
               for i, (dt, shape, dev, grad) in enumerate(specs)]
    try:
        return _decode(header.get("tree"), tensors, fail)
    except RecursionError:
        raise fail("the header's tree is nested deeper than Python can rebuild") from None


def _no_constants(word):
    raise ValueError(f"{word} is not JSON")


def _check_table(entries, body, fail, map_location):
    """Each tensor's ``(dtype, shape, device, requires_grad)``, after checking the whole
    table against the ``body`` bytes the file has after its header: nothing is allocated
    for a file that lies."""
    if not isinstance(entries, list):
        raise fail("the header's tensor table is missing")
    specs, at = [], 0
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise fail(f"tensor {i}'s header entry is not an object")
        code = e.get("dtype")
        if not isinstance(code, str) or code not in _DTYPES:
            raise fail(f"tensor {i} has unknown dtype {str(code)[:80]!r} (numgrad reads "
                       f"{', '.join(_DTYPES)})")
        shape, offsets = e.get("shape"), e.get("offsets")
        if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
            raise fail(f"tensor {i} has a malformed shape {str(shape)[:80]}")
        if len(shape) > _MAX_DIMS:
            raise fail(f"tensor {i} has {len(shape)} dimensions; a tensor has at most "
                       f"{_MAX_DIMS}")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int for o in offsets)):
            raise fail(f"tensor {i} has malformed offsets {str(offsets)[:80]}")
        begin, end = offsets
        dt = _DTYPES[code]
        want = math.prod(shape) * dt.itemsize  # Python ints: a 2**70 extent is just big
        if begin != at or end - begin != want:
            raise fail(f"tensor {i} ({code}, shape {str(shape)[:80]}, {want} bytes) is said "
                       f"to span bytes [{begin}, {end}), but it should start at {at} and span "
                       f"{want}: the header lies about sizes or offsets")
        if end > body:
            raise fail(f"the file is truncated: tensor {i} ends at byte {end} of the data but "
                       f"only {body} bytes follow the header")
        grad = e.get("requires_grad", False)
        if type(grad) is not bool:
            raise fail(f"tensor {i} has a malformed requires_grad {str(grad)[:80]}")
        if grad and code not in ("F32", "F64"):
            raise fail(f"tensor {i} is {code} and marked requires_grad, but only tensors of "
                       "floating point dtype can require gradients")
        dev = e.get("device", "cpu")
        if not (isinstance(dev, str) and _DEVICE.fullmatch(dev)):
            raise fail(f"tensor {i} has device {str(dev)[:80]!r}; numgrad loads onto 'cpu' or "
                       "'cuda[:N]'")
        specs.append((dt, shape, str(map_location) if map_location is not None else dev,
                       grad))
        at = end
    if at != body:
        raise fail(f"{body - at} bytes follow the last tensor's data: the header does "
                   "not describe the file")
    return specs


def _read_into(fh, dt, shape, fail, what):
    """A fresh array of ``shape`` filled from ``fh`` (its size already checked), in the
    native byte order."""
    try:
        a = np.empty(shape, dt)
    except (ValueError, MemoryError) as e:  # an empty shape with a 2**70 extent beside a 0
        raise fail(f"{what} has a shape NumPy cannot hold ({str(shape)[:80]}: {e})") from None
    buf = a.reshape(-1).view(np.uint8).data
    got, n = 0, a.nbytes
    while got < n:
        k = fh.readinto(buf[got:])
        if not k:
            raise fail(f"the file is truncated: {what} has {got} of its {n} bytes")
        got += k
    return a if dt.isnative else a.byteswap().view(dt.newbyteorder("="))


def _tensor(a, dev, grad, fail, i):
    t = Tensor._make(a)  # a fresh array of its own: no copy
    if dev != "cpu":
        import numgrad.devices as devices
        if dev.startswith("cuda") and not devices.cuda_is_available():
            raise fail(f"tensor {i} was saved on {dev}, and no CUDA device is available; "
                       "pass map_location='cpu' to load it on the CPU")
        t = Tensor._make(devices.upload(t._data, devices.target(dev)))
    if grad:
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
    if isinstance(k, tuple):
        for v in k:
            _key(v, fail)
    elif isinstance(k, (list, dict, Tensor)):
        raise fail("a dict key in the header's tree is not a scalar or a tuple of scalars")
    return k


# ------------------------------------------------------------ .npz and .npy
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
               NotImplementedError, struct.error, KeyError)


def _load_npz(fh, size, fail, max_inflation):
    try:
        zf = zipfile.ZipFile(fh)
        infos = zf.infolist()
    except _ZIP_ERRORS as e:
        raise fail(f"a corrupt or truncated zip archive ({e})") from None
    with zf:
        names = [i.filename for i in infos]
        if any(n.endswith(".pkl") for n in names):
            raise fail(f"this is a torch.save archive (its data is a pickle). {_PICKLE_HINT}")
        bad = [n for n in names if not n.endswith(".npy")]
        if bad:
            raise fail(f"a zip archive whose member {bad[0]!r} is not a .npy array, so not "
                       "a .npz file")
        declared = sum(i.file_size for i in infos)
        if max_inflation is not None and declared > max_inflation * max(size, 1):
            raise fail(f"the archive's members declare {declared} bytes, more than "
                       f"{max_inflation} times the file's {size} bytes; pass a larger "
                       "max_inflation (or None) to ng.load if you trust this file")
        out = {}
        for info in infos:
            what = repr(info.filename[:-4])
            try:
                with zf.open(info) as member:
                    out[info.filename[:-4]] = _read_npy(member, info.file_size, fail, what)
            except LoadError:
                raise
            except _ZIP_ERRORS as e:
                raise fail(f"{what}: a corrupt or truncated archive member ({e})") from None
        return out


def _read_npy(fp, size, fail, what):
    """One ``.npy`` array of at most ``size`` bytes (its header included) from ``fp``,
    checked before anything of its declared size is allocated."""
    at = fp.tell()
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise ValueError(f".npy format version {version} (numgrad reads 1.0 and 2.0)")
    except Exception as e:  # noqa: BLE001  NumPy parses the header with tokenize and ast,
        # whose errors on corrupt text are many (TokenError, SyntaxError, ValueError...)
        raise fail(f"{what}: a corrupt, truncated or pickled NumPy file ({e})") from None
    if dtype.hasobject:
        raise fail(f"{what} holds Python objects, stored as a pickle. {_PICKLE_HINT}")
    if len(shape) > _MAX_DIMS:
        raise fail(f"{what} has {len(shape)} dimensions; a tensor has at most {_MAX_DIMS}")
    import numgrad.dtypes as dtypes
    try:
        target = dtypes.from_numpy_dtype(dtype)  # numgrad's rules: float16 -> float32, ...
    except TypeError as e:
        raise fail(f"{what} has dtype {dtype}, which numgrad cannot hold ({e})") from None
    want, have = math.prod(shape) * dtype.itemsize, size - (fp.tell() - at)
    if want > have:
        raise fail(f"{what}'s header declares {want} bytes of data ({dtype}, shape "
                   f"{str(shape)[:80]}) but the file holds {have}: it is truncated or lies")
    a = _read_into(fp, dtype, shape[::-1] if fortran else shape, fail, what)
    if fortran:
        a = np.ascontiguousarray(a.T)
    return Tensor._make(a if a.dtype == target.np else a.astype(target.np))

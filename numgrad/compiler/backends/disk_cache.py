"""backends.disk_cache: generated kernel modules on disk, verified before anything in them runs.

Room: compiler. Shared by the CPU backend (``backends.cpu.cache``: Numba) and the CUDA
backend (``backends.cuda.cache``: numba-cuda); each says what its modules are with a
``Kind`` (name prefix, the helper modules they import, the Numba caching module whose
files it writes). Numba's ``cache=True`` (and numba-cuda's) only works for functions
defined in a real source file, so each generated module is written to
``$NUMGRAD_CACHE_DIR`` (default ``~/.cache/numgrad``) under a name that hashes its
source and the helper modules it imports. That directory is a directory of code this
process runs, so (as pip's cache and Python's own ``__pycache__`` handling do) numgrad
trusts only what it can vouch for:

- The directory and its ``__pycache__`` are created 0700. At first use a directory
  owned by anyone but this user (or root), or writable by group or others, is refused
  with one warning, and kernels are compiled in memory for the rest of the process.
- Module source is never imported from disk: numgrad compiles the source string it
  generated itself (the file on disk only has to match it, for Numba's cache), so no
  ``.pyc`` is written or read and a swapped module or planted bytecode never runs.
- Numba's index (``.nbi``, a pickle) and data (``.nbc``: a pickle; numba-cuda's holds
  the kernel's cubin) files: every byte Numba unpickles is first checked against the
  SHA-256 in the entry's manifest (``<module>.manifest``, 0600, written atomically by
  this process after Numba saved). No manifest or a mismatch is a miss: Numba compiles
  again and overwrites the file, which is never unpickled (``_install_numba_hooks``,
  once per caching module: ``numba.core.caching`` and ``numba.cuda.core.caching`` have
  the same index/data classes).
- A read-only directory (prepared in advance) is used for loading; what it lacks is
  compiled in memory (one warning). ``cache=False`` reads and writes nothing.
- Size: after an entry is stored, the least recently used entries (manifest mtime,
  touched at each load) are deleted while the total exceeds ``NUMGRAD_CACHE_MAX_MB``
  (default ``DEFAULT_MAX_MB``).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import linecache
import os
import pickle
import stat
import sys
import tempfile
import threading
import types
import warnings
from dataclasses import dataclass

import numgrad.config as config
from numgrad.ops.registry import HELPERS

# One import at a time: a module is in sys.modules before its body has run (Numba's
# cache needs that), and another thread must not take it from there half-made.
_LOAD_LOCK = threading.RLock()

# Every entry's name starts with this (a backend's Kind may add to it).
PREFIX = "numgrad_kernels_"
DEFAULT_MAX_MB = config.FLAGS["NUMGRAD_CACHE_MAX_MB"].default
_NUMBA_SUBDIR = "__pycache__"


@dataclass(frozen=True, eq=False)
class Kind:
    """What one backend's generated modules are.

    ``prefix``: their names' start (``PREFIX`` or longer); ``helpers``: paths of the
    modules their source imports (a change to any is a new module name); ``caching``:
    the Numba caching module whose index and data files their kernels write (verified
    through the manifest); ``loading``: a context manager the module body runs in;
    ``hit(module, fresh)``: whether loading it was a disk hit (``fresh``: its source
    was written just now)."""
    prefix: str
    helpers: tuple
    caching: str
    hit: object
    loading: object = contextlib.nullcontext


def configured_dir() -> str:
    """The cache directory the environment names (it may not exist or be usable)."""
    d = config.get("NUMGRAD_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "numgrad")
    return os.path.abspath(d)


def cache_dir() -> str:
    return configured_dir()


def max_bytes() -> int:
    try:
        mb = config.get("NUMGRAD_CACHE_MAX_MB")
    except ValueError:
        mb = DEFAULT_MAX_MB
    return int(mb * 1024 * 1024)


class _ProcessState:
    """What this process has decided and seen about the cache, in one place."""

    def __init__(self):
        self.dirs = {}        # configured path -> DiskCache, decided once per process
        self.active = set()   # directories (rw or ro) whose Numba files numgrad verifies
        self.armed = set()    # (numba_dir, caching module) whose files go through ours
        self.warned = False   # the one warning about an unusable directory was given
        self.digests = {}     # Kind -> digest of its helper modules (in every module name)
        self.file_digests = {}  # path -> sha256 of a file defining helpers (read once)
        self.expected = {}    # absolute path of a Numba cache file -> the SHA-256 it must have
        self.dirty = set()    # (numba_dir, module name) whose Numba files this process wrote
        self.refused = []     # (path, why) refused during the current import
        self.hooks = {}       # caching module -> whether its reads and writes go through ours


_S = _ProcessState()

# ------------------------------------------------------------ the directory
class DiskCache:
    """A cache directory as this process found it: ``mode`` is "rw", "ro" or "off"."""

    def __init__(self, path, mode, reason=""):
        self.path, self.mode, self.reason = path, mode, reason
        self.numba_dir = os.path.join(path, _NUMBA_SUBDIR)

    def __repr__(self):
        return f"DiskCache({self.path!r}, {self.mode!r}, {self.reason!r})"


def _warn_once(message):
    if not _S.warned:
        _S.warned = True
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def _trusted_owner(st):
    return st.st_uid in (os.geteuid(), 0)


def untrusted(path):
    """Why ``path`` (a directory of code numgrad would run) cannot be trusted, or None."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot stat it ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if not _trusted_owner(st):
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002))
                           if st.st_mode & bit)
        return f"it is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _open_dir(d):
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as exc:
        return DiskCache(d, "off", f"cannot be created ({exc.strerror or exc})")
    why = untrusted(d)
    sub = os.path.join(d, _NUMBA_SUBDIR)
    if why is None and os.path.lexists(sub):
        why = untrusted(sub)
        if why is not None:
            why = f"its {_NUMBA_SUBDIR} {why[3:] if why.startswith('it ') else why}"
    if why is not None:
        return DiskCache(d, "off", why)
    writable = os.access(d, os.W_OK)
    if writable and not os.path.lexists(sub):
        try:
            os.mkdir(sub, 0o700)
        except OSError:
            writable = False
    if writable and not os.access(sub, os.W_OK):
        writable = False
    return DiskCache(d, "rw" if writable else "ro", "" if writable else "it is not writable")


def disk() -> DiskCache:
    """The configured cache directory, checked once per process (one warning if refused)."""
    d = configured_dir()
    dc = _S.dirs.get(d)
    if dc is None:
        with _LOAD_LOCK:
            dc = _S.dirs.get(d)
            if dc is None:
                dc = _open_dir(d)
                if dc.mode == "off":
                    _warn_refused(dc)
                _S.dirs[d] = dc
    return dc


def _warn_refused(dc):
    _warn_once(f"numgrad refused its kernel cache {dc.path}: {dc.reason}; "
               "compiling kernels in memory (no disk cache) in this process")


def _numba_disk(kind) -> DiskCache:
    """``disk()`` for ``kind``'s Numba files: their reads and writes verified
    (``_install_numba_hooks``, which imports Numba, so only here and not for
    ``llvm.kernel``'s object files). "off" for this kind alone if its Numba lacks the
    internals the verification goes through."""
    dc = disk()
    if dc.mode != "off" and (dc.numba_dir, kind.caching) not in _S.armed:
        with _LOAD_LOCK:
            if not _install_numba_hooks(kind.caching):
                dc = DiskCache(dc.path, "off", f"this {kind.caching.split('.core')[0]} lacks "
                                               "the cache internals numgrad verifies its "
                                               "files through")
                _warn_refused(dc)
                return dc
            _S.active.add(dc.numba_dir)
            _S.armed.add((dc.numba_dir, kind.caching))
    return dc


# ------------------------------------------------------------------ naming
def _helpers_digest(kind):
    h = hashlib.sha256()
    for path in kind.helpers:
        with open(path, "rb") as f:  # missing: a stale list, fail loudly
            h.update(f.read())
    return h.hexdigest()[:12]


def _code_fingerprint(fn) -> str:
    code = getattr(fn, "__code__", None)
    return repr(fn) if code is None else _code_repr(code)


def _code_repr(code) -> str:
    # A nested code object (a lambda or comprehension in the helper) reprs with its address,
    # which differs per process: spell it by content instead.
    consts = tuple(_code_repr(c) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return repr((code.co_code, consts, code.co_names, code.co_varnames))


def _file_digest(path: str) -> str:
    digest = _S.file_digests.get(path)
    if digest is None:
        with open(path, "rb") as f:
            digest = _S.file_digests[path] = hashlib.sha256(f.read()).hexdigest()
    return digest


def _registered_helpers_digest() -> str:
    # A kernel calls the helpers of the rows it uses, wherever they are defined: numgrad's
    # own (all in ops/scalar_helpers.py today, which the backend's file list hashes too, but a
    # row may keep its helper beside it) and a program's own code (``ng.ops.register``). A later process, or a later numgrad, that defines a name with
    # another body must not load the kernel built from the first one, so each helper's file
    # (or, for code without a file, its bytecode) is part of the name too.
    parts = set()
    for name, h in HELPERS.items():
        for fn in (h.body, h.cpu, h.cuda):
            if fn is None:
                continue
            path = getattr(sys.modules.get(getattr(fn, "__module__", None)), "__file__", None)
            if path and (getattr(fn, "__module__", "") or "").startswith("numgrad."):
                parts.add(f"file:{_file_digest(path)}")
            else:
                parts.add(f"{name}:{_code_fingerprint(fn)}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:12] if parts else ""


def module_name(kind, source: str) -> str:
    """The name of ``kind``'s module for ``source`` (its entry's name on disk)."""
    digest = _S.digests.get(kind)
    if digest is None:
        digest = _S.digests[kind] = _helpers_digest(kind)
    digest += _registered_helpers_digest()
    h = hashlib.sha256((digest + source).encode()).hexdigest()[:20]
    return f"{kind.prefix}{h}"


def compile_counts(module):
    """``(loaded from the cache, compiled)``: overloads of the module's Numba dispatchers."""
    hits = misses = 0
    for obj in vars(module).values():
        stats = getattr(obj, "stats", None)
        if stats is not None and hasattr(stats, "cache_hits"):
            hits += sum(stats.cache_hits.values())
            misses += sum(stats.cache_misses.values())
    return hits, misses


# ------------------------------------------------------------------- loading
def load_module(kind, source: str, verbose=False, use_disk=True):
    """Import ``kind``'s module for ``source`` (through the disk cache unless ``use_disk``
    is false or the cache is unusable); ``(module, disk_hit)``."""
    with _LOAD_LOCK:
        name = module_name(kind, source)
        mod = sys.modules.get(name)
        if mod is not None:
            return mod, False
        dc = _numba_disk(kind) if use_disk else None
        if dc is None or dc.mode == "off":
            return _in_memory(kind, name, source, verbose), False
        if dc.mode == "ro":
            path = os.path.join(dc.path, name + ".py")
            if not _matches(path, source):
                _warn_once(f"numgrad's kernel cache {dc.path} is not writable: kernels it "
                           "does not hold are compiled in memory in this process")
                return _in_memory(kind, name, source, verbose), False
            try:
                return _load_from_disk(kind, dc, name, source, verbose, store=False)
            except Exception:  # nothing to repair in a read-only cache: compile in memory
                sys.modules.pop(name, None)
                return _in_memory(kind, name, source, verbose), False
        for attempt in range(2):
            try:
                return _load_from_disk(kind, dc, name, source, verbose, store=True)
            except _Unwritable as exc:
                _warn_once(f"numgrad could not write its kernel cache {dc.path} "
                           f"({exc.__cause__}): compiling kernels in memory in this process")
                return _in_memory(kind, name, source, verbose), False
            except Exception as exc:  # corrupt entry: wipe it and its Numba files, rebuild
                sys.modules.pop(name, None)
                if attempt == 1:
                    raise
                if verbose:
                    print(f"[numgrad.jit] cache entry {name} unusable ({exc!r}); rebuilding")
                _remove_entry(dc, name)
        raise AssertionError("unreachable")


def _in_memory(kind, name, source, verbose):
    """Compile ``source`` with Numba's cache off, writing nothing anywhere."""
    if verbose:
        print(f"[numgrad.jit] compiling {name} in memory")
    filename = f"<numgrad kernels {name}>"
    text = source.replace("cache=True", "cache=False")
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    return _exec(kind, name, text, filename, file_backed=False)


def _exec(kind, name, source, filename, file_backed):
    code = compile(source, filename, "exec", dont_inherit=True)
    mod = types.ModuleType(name)
    if file_backed:
        mod.__file__ = filename  # Numba's cache locates a function by its module's file
    sys.modules[name] = mod  # before exec: Numba's cache looks the module up by name
    try:
        with kind.loading():
            exec(code, mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def _load_from_disk(kind, dc, name, source, verbose, store):
    path = os.path.join(dc.path, name + ".py")
    fresh = False
    if not _matches(path, source):
        if os.path.lexists(path):
            _refused(f"{path} does not hold the source numgrad generated for it; rewritten")
        _remove_entry(dc, name)
        try:
            _write_atomic(path, source.encode("utf-8"))
        except OSError as exc:  # full, or made read-only since the start
            raise _Unwritable() from exc
        fresh = True
    else:
        _read_manifest(dc, name)
    _ignore_bytecode(dc, name, store)
    if verbose:
        print(f"[numgrad.jit] {'compiling' if fresh else 'loading'} {path}")
    del _S.refused[:]
    mod = _exec(kind, name, source, path, file_backed=True)
    for p, why in dict(_S.refused).items():
        _refused(f"{p}: {why}; not unpickled, the kernel was compiled again")
    del _S.refused[:]
    if store:
        stored = _write_manifests(dc)
        if not stored:
            _touch(os.path.join(dc.path, name + ".manifest"))
        else:
            evict(dc, keep={n for n in sys.modules if n.startswith(PREFIX)})
    return mod, bool(kind.hit(mod, fresh))


# ------------------------------------------------------------ object code
# backends.cpu.llvm.kernel's compiled kernels: <name>.o beside <name>.manifest, which holds
# the object's SHA-256. Both are written atomically, the manifest last; the bytes are
# handed to the JIT linker only if they hash to what a trusted manifest says.
def load_object(name):
    """The object code stored as ``name``, verified, or None (a miss)."""
    dc = disk()
    if dc.mode == "off":
        return None
    manifest = _trusted_json(os.path.join(dc.path, name + ".manifest"))
    digest = manifest.get("object") if manifest else None
    if not isinstance(digest, str):
        return None
    path = os.path.join(dc.path, name + ".o")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != digest:
        _refused(f"{path}: its content hash does not match the manifest; compiled again")
        return None
    _touch(os.path.join(dc.path, name + ".manifest"))
    return data


def store_object(name, data):
    """Store object code as ``name`` (quietly nothing if the cache is off or read-only)."""
    dc = disk()
    if dc.mode != "rw":
        return
    try:
        _write_atomic(os.path.join(dc.path, name + ".o"), data)
        _write_atomic(os.path.join(dc.path, name + ".manifest"), json.dumps(
            {"version": 1, "object": hashlib.sha256(data).hexdigest()}).encode())
    except OSError:
        return
    evict(dc, keep={name} | {n for n in sys.modules if n.startswith(PREFIX)})


class _Unwritable(Exception):
    pass


def is_built(kind, source: str) -> bool:
    """Whether this source has been compiled into the disk cache before (by any process)."""
    dc = disk()
    if dc.mode == "off":
        return False
    return os.path.exists(os.path.join(dc.path, module_name(kind, source) + ".manifest"))


def _refused(message):
    warnings.warn(f"numgrad refused a kernel cache file: {message}", RuntimeWarning,
                  stacklevel=5)


def _ignore_bytecode(dc, name, writable):
    # numgrad never imports bytecode for its kernels; one that is there was not written by
    # numgrad, so say so (and delete it where we can).
    pyc = os.path.join(dc.numba_dir, f"{name}.{sys.implementation.cache_tag}.pyc")
    if os.path.lexists(pyc):
        _refused(f"{pyc} ignored: numgrad compiles kernel modules from their verified "
                 "source and never loads their bytecode")
        if writable:
            try:
                os.remove(pyc)
            except OSError:
                pass


def _matches(path, source):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomic(path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _touch(path):
    try:
        os.utime(path)
    except OSError:
        pass


def _entry_files(dc, name):
    out = [os.path.join(dc.path, name + ext) for ext in (".py", ".manifest", ".built", ".o")]
    try:
        out += [os.path.join(dc.numba_dir, f) for f in os.listdir(dc.numba_dir)
                if f.startswith(name + ".")]
    except OSError:
        pass
    return out


def _remove_entry(dc, name):
    for p in _entry_files(dc, name):
        _S.expected.pop(p, None)
        try:
            os.remove(p)
        except OSError:
            pass


# ----------------------------------------------------------------- manifests


def _trusted_json(path):
    """The JSON object in ``path`` if it is a regular file that only its owner (this user
    or root) can write, else None (one warning when it is there but not trusted)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or not _trusted_owner(st) or st.st_mode & 0o022:
            _refused(f"{path} is not a regular file only its owner can write; ignored")
            return None
        try:
            out = json.loads(f.read().decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
    return out if isinstance(out, dict) else None


def _read_manifest(dc, name):
    manifest = _trusted_json(os.path.join(dc.path, name + ".manifest"))
    files = manifest.get("files") if manifest else None
    if not isinstance(files, dict):
        return
    for base, digest in files.items():
        if os.sep not in base and base.startswith(name + ".") and isinstance(digest, str):
            _S.expected[os.path.join(dc.numba_dir, base)] = digest


def _write_manifests(dc):
    """Write the manifests of the entries whose Numba files this process saved."""
    done = False
    for numba_dir, name in sorted(_S.dirty):
        if numba_dir != dc.numba_dir:
            continue
        files = {os.path.basename(p): h for p, h in _S.expected.items()
                 if os.path.dirname(p) == numba_dir and os.path.basename(p).startswith(name + ".")}
        body = json.dumps({"version": 1, "files": files}, sort_keys=True).encode()
        try:
            _write_atomic(os.path.join(dc.path, name + ".manifest"), body)
            done = True
        except OSError:
            pass
    _S.dirty.difference_update({k for k in _S.dirty if k[0] == dc.numba_dir})
    return done


def _under_active(path):
    return os.path.dirname(path) in _S.active


def _verified_bytes(path):
    """The bytes of a Numba cache file, or None unless they hash to what the manifest says."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    expected = _S.expected.get(path)
    if expected is None:  # a miss, quietly: entries from before manifests look like this
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        _S.refused.append((path, "its content hash does not match the manifest"))
        return None
    return data


def _record(path):
    try:
        os.chmod(path, 0o600)  # Numba writes 0644; the directory is private anyway
        with open(path, "rb") as f:
            _S.expected[path] = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return
    _S.dirty.add((os.path.dirname(path), os.path.basename(path).split(".", 1)[0]))


def _install_numba_hooks(modname="numba.core.caching"):
    """Route the cache reads and writes of Numba's caching module ``modname`` (or
    numba-cuda's, which has the same classes) for numgrad's directories through the
    manifest (installed once per module; other files take Numba's own path). False if
    that module lacks the internals named here: the disk cache is then not used for it."""
    done = _S.hooks.get(modname)
    if done is not None:
        return done
    try:
        caching = importlib.import_module(modname)
        idcf = caching.IndexDataCacheFile
        base = (caching._SourceFileBackedLocatorMixin, caching._CacheLocator)
        needed = ("_load_index", "_load_data", "_save_index", "_save_data", "_data_path")
        if not all(hasattr(idcf, n) for n in needed) or not isinstance(
                getattr(caching.CacheImpl, "_locator_classes", None), list):
            raise AttributeError
    except (ImportError, AttributeError):
        _S.hooks[modname] = False
        return False
    orig = {n: getattr(idcf, n) for n in needed}

    def _load_index(self):
        if not _under_active(self._index_path):
            return orig["_load_index"](self)
        data = _verified_bytes(self._index_path)
        if data is None:
            return {}
        f = io.BytesIO(data)
        if pickle.load(f) != self._version:
            return {}
        stamp, overloads = pickle.loads(f.read())
        return overloads if stamp == self._source_stamp else {}

    def _load_data(self, name):
        path = self._data_path(name)
        if not _under_active(path):
            return orig["_load_data"](self, name)
        data = _verified_bytes(path)
        if data is None:
            raise OSError(f"{path} failed verification")  # Numba treats it as a miss
        return pickle.loads(data)

    def _save_index(self, overloads):
        if not _under_active(self._index_path):
            return orig["_save_index"](self, overloads)
        try:
            orig["_save_index"](self, overloads)
        except OSError:
            return  # read-only or full: the kernel still runs, it is just not cached
        _record(self._index_path)

    def _save_data(self, name, data):
        path = self._data_path(name)
        if not _under_active(path):
            return orig["_save_data"](self, name, data)
        try:
            orig["_save_data"](self, name, data)
        except OSError:
            return
        _record(path)

    class NumgradLocator(*base):
        """Numba's files for numgrad's modules go next to them, in the verified
        ``__pycache__``, whatever NUMBA_CACHE_DIR says; never elsewhere."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(os.path.dirname(py_file), _NUMBA_SUBDIR)

        def get_cache_path(self):
            return self._cache_path

        def ensure_cache_path(self):
            try:
                os.makedirs(self._cache_path, mode=0o700, exist_ok=True)
            except OSError:
                pass  # read-only: saves are skipped (_save_index)

        @classmethod
        def from_function(cls, py_func, py_file):
            d = os.path.dirname(os.path.abspath(py_file))
            if (os.path.basename(py_file).startswith(PREFIX)
                    and os.path.join(d, _NUMBA_SUBDIR) in _S.active):
                return cls(py_func, py_file)
            return None

    for n, fn in (("_load_index", _load_index), ("_load_data", _load_data),
                  ("_save_index", _save_index), ("_save_data", _save_data)):
        setattr(idcf, n, fn)
    caching.CacheImpl._locator_classes.insert(0, NumgradLocator)
    _S.hooks[modname] = True
    return True


# ---------------------------------------------------------- size and clearing
def entries(dc):
    """{module name: [total bytes, last use (mtime), [paths]]} of the cache's entries."""
    out = {}
    for folder in (dc.path, dc.numba_dir):
        try:
            it = list(os.scandir(folder))
        except OSError:
            continue
        for e in it:
            if not e.name.startswith(PREFIX) or not e.is_file(follow_symlinks=False):
                continue
            name = e.name.split(".", 1)[0]
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            ent = out.setdefault(name, [0, 0.0, []])
            ent[0] += st.st_size
            if e.name.endswith((".manifest", ".py")):
                ent[1] = max(ent[1], st.st_mtime)
            ent[2].append(e.path)
    return out


def evict(dc, keep=(), limit=None):
    """Delete least recently used entries until the cache fits ``limit`` bytes."""
    limit = max_bytes() if limit is None else limit
    ents = entries(dc)
    total = sum(e[0] for e in ents.values())
    removed = 0
    for name, (size, _, paths) in sorted(ents.items(), key=lambda kv: kv[1][1]):
        if total <= limit:
            break
        if name in keep:
            continue
        for p in paths:
            _S.expected.pop(p, None)
            try:
                os.remove(p)
            except OSError:
                pass
        total -= size
        removed += 1
    return removed


def info():
    """A description of the configured cache, for ``python -m numgrad cache info``."""
    d = configured_dir()
    if not os.path.isdir(d):
        return {"path": d, "status": "absent", "entries": 0, "bytes": 0, "max_bytes": max_bytes()}
    dc = _open_dir(d)
    ents = entries(dc) if dc.mode != "off" else {}
    status = {"rw": "trusted", "ro": "trusted, read-only"}.get(dc.mode, "refused")
    return {"path": d, "status": status + (f" ({dc.reason})" if dc.reason else ""),
            "entries": len(ents), "bytes": sum(e[0] for e in ents.values()),
            "max_bytes": max_bytes()}


def clear():
    """Delete every entry of the configured cache; returns how many. Refuses (raises
    PermissionError) to touch a directory numgrad would not trust."""
    d = configured_dir()
    if not os.path.isdir(d):
        return 0
    dc = _open_dir(d)
    if dc.mode == "off":
        raise PermissionError(f"numgrad does not trust {d} ({dc.reason}); not clearing it")
    return evict(dc, limit=-1)

"""codegen.cache: generated kernel modules on disk, so a new process compiles nothing twice.

Room: compiler. Numba's ``cache=True`` only works for functions defined in a
real source file (not ``exec``), so each generated module is written to
``$NUMGRAD_CACHE_DIR`` (default: the user's cache dir) under a name that hashes
its source and the helper modules it imports, registered in ``sys.modules``
before it runs, and imported. A module that fails to load (corrupt or
truncated file, stale Numba index) is deleted and rebuilt, never a crash.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading

from .numba_load import light_cache_loads

# One import at a time: a module is in sys.modules before its body has run (Numba's
# cache needs that), and another thread must not take it from there half-made.
_LOAD_LOCK = threading.RLock()

_HELPER_FILES = ("scalar.py", "scalar_vec.py", "vmath_ir.py", "llvm_attrs.py", "arrays_ir.py")


def cache_dir() -> str:
    d = os.environ.get("NUMGRAD_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "numgrad")
    os.makedirs(d, exist_ok=True)
    return d


def _helpers_digest():
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in _HELPER_FILES:
        p = os.path.join(here, name)
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:12]


_DIGEST = None


def module_name(source: str) -> str:
    global _DIGEST
    if _DIGEST is None:
        _DIGEST = _helpers_digest()
    h = hashlib.sha256((_DIGEST + source).encode()).hexdigest()[:20]
    return f"numgrad_kernels_{h}"


def _disk_hits(module):
    hits = 0
    for obj in vars(module).values():
        stats = getattr(obj, "stats", None)
        if stats is not None and hasattr(stats, "cache_hits"):
            hits += sum(stats.cache_hits.values())
    return hits


def load_module(source: str, verbose=False):
    """Import (writing first if needed) the module for ``source``; ``(module, disk_hit)``."""
    with _LOAD_LOCK:
        return _load_module(source, verbose)


def _load_module(source, verbose):
    name = module_name(source)
    mod = sys.modules.get(name)
    if mod is not None:
        return mod, False
    d = cache_dir()
    path = os.path.join(d, name + ".py")
    for attempt in range(2):
        try:
            if not _matches(path, source):
                _write_atomic(path, source)
            if verbose:
                print(f"[numgrad.jit] compiling {path}")
            mod = _import(name, path)
            _mark_built(d, name)
            return mod, _disk_hits(mod) > 0
        except Exception as exc:  # corrupt entry: wipe it and its Numba index, rebuild once
            sys.modules.pop(name, None)
            if attempt == 1:
                raise
            if verbose:
                print(f"[numgrad.jit] cache entry {path} unusable ({exc!r}); rebuilding")
            _remove_entry(d, name)
    raise AssertionError("unreachable")


def is_built(source: str) -> bool:
    """Whether a process has imported (so Numba has compiled and cached) this source."""
    return os.path.exists(os.path.join(cache_dir(), module_name(source) + ".built"))


def _mark_built(d, name):
    marker = os.path.join(d, name + ".built")
    if not os.path.exists(marker):
        try:
            open(marker, "w").close()
        except OSError:  # a read-only cache still works; it just recompiles tiers
            pass


def _matches(path, source):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomic(path, source):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(source)
    os.replace(tmp, path)


def _import(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # before exec: Numba's cache looks the module up by name
    with light_cache_loads():
        spec.loader.exec_module(mod)
    return mod


def _remove_entry(d, name):
    for p in (os.path.join(d, name + ".py"), os.path.join(d, name + ".built")):
        try:
            os.remove(p)
        except OSError:
            pass
    pyc = os.path.join(d, "__pycache__")
    if os.path.isdir(pyc):
        for f in os.listdir(pyc):
            if f.startswith(name):
                try:
                    os.remove(os.path.join(pyc, f))
                except OSError:
                    shutil.rmtree(os.path.join(pyc, f), ignore_errors=True)

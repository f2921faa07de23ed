"""backends.cpu.numba_load: load cached kernels without Numba's whole-registry refresh.

Room: compiler. Before it reads a cached overload, Numba's ``Cache.load_overload``
calls ``target_context.refresh()``, which imports and installs every lowering and
typing registry Numba has (unicode, dicts, random, linalg, ...). In a new
process that is about half of the time to a first result (docs/design-notes.md,
"Warm start") and none of it is needed to run machine code that is
already compiled: that needs the C helpers (installed when the target context is
made), the NRT (``rtsys.initialize``), the threading layer (the overload's own
``reload_init``) and the environments (rebuilt from the cache's pickle).

So while numgrad imports one of its kernel modules, ``load_overload`` only
initialises the NRT. A cache miss is unaffected: Numba's compiler refreshes both
contexts itself before it compiles (``CompilerBase.__init__``). If this Numba
lacks the internals named here, loads take Numba's own path.
"""
from __future__ import annotations

import contextlib

import numgrad.config as config


def _light_load_overload(self, sig, target_context):
    from numba.core.runtime import nrt

    nrt.rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)
    return None  # the guard swallowed a spurious I/O error: a miss, so Numba compiles


def _patchable():
    try:
        from numba.core import caching
        from numba.core.runtime import nrt
    except ImportError:
        return None
    cache = getattr(caching, "Cache", None)
    needed = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    if cache is None or not all(hasattr(cache, n) for n in needed):
        return None
    if not hasattr(getattr(nrt, "rtsys", None), "initialize"):
        return None
    return cache


@contextlib.contextmanager
def light_cache_loads():
    """Within this block, Numba's cache loads skip the registry refresh.

    Callers hold ``cache._LOAD_LOCK``; another thread's Numba cache load in the
    meantime takes the light path too, which is as correct for it as for us.
    ``NUMGRAD_LIGHT_LOAD=0`` turns this off.
    """
    cache = _patchable() if config.get("NUMGRAD_LIGHT_LOAD") else None
    if cache is None:
        yield
        return
    original = cache.__dict__.get("load_overload")  # None: inherited, so delete ours after
    cache.load_overload = _light_load_overload
    try:
        yield
    finally:
        if original is None:
            del cache.load_overload
        else:
            cache.load_overload = original

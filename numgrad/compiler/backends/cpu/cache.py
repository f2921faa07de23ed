"""backends.cpu.cache: the CPU backend's kernel modules in the verified disk cache.

Room: compiler. The cache itself (trusted directory, manifests, verified Numba files,
atomic writes, eviction) is ``backends.disk_cache``, shared with the CUDA backend; this
module says what a CPU module is (``KIND``: the helpers its source imports, Numba's
``numba.core.caching`` files, loaded through ``numba_load.light_cache_loads``) and binds
the cache's functions to it. A CPU load is a disk hit when Numba loaded an overload from
the cache.
"""
from __future__ import annotations

import os

import numgrad.compiler.backends.disk_cache as _disk

from .numba_load import light_cache_loads

_HERE = os.path.dirname(os.path.abspath(__file__))
# What generated modules import: a change to any of them is a new module name.
_HELPER_FILES = ("scalar.py", "scalar_vec.py", "arrays_ir.py", "accumulate_ir.py",
                 "llvm/vmath.py", "llvm/vmath_numba.py", "llvm/attrs.py", "llvm/body.py",
                 "llvm/kernel.py", "../../../ops/scalar_helpers.py")

KIND = _disk.Kind(prefix=_disk.PREFIX,
                  helpers=tuple(os.path.join(_HERE, f) for f in _HELPER_FILES),
                  caching="numba.core.caching",
                  hit=lambda module, fresh: _disk.compile_counts(module)[0] > 0,
                  loading=light_cache_loads)


def module_name(source: str) -> str:
    """The name of the CPU module for ``source``."""
    return _disk.module_name(KIND, source)


def load_module(source: str, verbose=False, use_disk=True):
    """``(module, disk_hit)`` for ``source`` (``disk_cache.load_module``)."""
    return _disk.load_module(KIND, source, verbose=verbose, use_disk=use_disk)


def is_built(source: str) -> bool:
    """Whether this source has been compiled into the disk cache before (by any process)."""
    return _disk.is_built(KIND, source)

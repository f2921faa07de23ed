"""backends.cuda.cache: the CUDA backend's kernel modules in the verified disk cache.

Room: compiler. A rendered CUDA module goes through ``backends.disk_cache`` as a CPU
module does: its source is written under the cache directory (the file only has to
match the source numgrad generated, which is what runs), and each kernel is
``@cuda.jit(signature, cache=True)``, so numba-cuda compiles it when the module is
loaded and keeps the result in its own index (``.nbi``) and data (``.nbc``, holding
the cubin) files beside it. Both are pickles: ``disk_cache`` checks every byte against
the entry's manifest before numba-cuda unpickles it (``numba.cuda.core.caching``'s
classes are hooked as Numba's are), so a planted or altered file is a miss, compiled
again, never loaded.

A CUDA load is a disk hit when the module's source was already on disk and no kernel
had to be compiled for it: on a GPU every kernel's cubin came from numba-cuda's cache;
under Numba's simulator, which compiles nothing, the verified source itself.
"""
from __future__ import annotations

import os

import numgrad.compiler.backends.disk_cache as _disk

_BACKENDS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What generated modules import: a change to either is a new module name.
_HELPER_FILES = ("cuda/scalar.py", "../../ops/scalar_helpers.py")


def _hit(module, fresh):
    _, misses = _disk.compile_counts(module)
    return not fresh and not misses


KIND = _disk.Kind(prefix=_disk.PREFIX + "cuda_",
                  helpers=tuple(os.path.join(_BACKENDS, f) for f in _HELPER_FILES),
                  caching="numba.cuda.core.caching", hit=_hit)


def module_name(source: str) -> str:
    """The name of the CUDA module for ``source``."""
    return _disk.module_name(KIND, source)


def load_module(source: str, verbose=False, use_disk=True):
    """``(module, disk_hit)`` for ``source`` (``disk_cache.load_module``): its kernels
    compiled (or loaded from numba-cuda's verified cache) for the current device."""
    return _disk.load_module(KIND, source, verbose=verbose, use_disk=use_disk)

"""backends.cpu.window_loops: ``ops.window_kernels``' Numba loops through the verified cache.

Room: compiler. The ops' window loops (max-pool gradients, the convolution windows'
adjoint) are one module of Numba source per dtype (``window_kernels.source``); this loads
it as a CPU kernel module (``cache.load_module``: its file, Numba's index and data files
checked against the manifest before anything is unpickled), so a new process loads the
compiled loops instead of compiling them (about 1-1.5 s per dtype). The package root puts
``load`` into ``window_kernels.load_module`` (ops cannot import the compiler).
"""
from __future__ import annotations

from . import cache


def load(source: str):
    """The module of the window loops ``source``, loaded through the disk cache.

    >>> from numgrad.ops import window_kernels
    >>> hasattr(load(window_kernels.source("float64")), "_pool_route")
    True
    """
    return cache.load_module(source)[0]

"""backends.cpu.omp: Numba's OpenMP workers go to sleep soon after a parallel loop.

Room: compiler. libgomp's workers spin for a long while after each parallel region
(GOMP_SPINCOUNT, 300,000 by default, about milliseconds) before they sleep. A compiled
plan runs its prange kernels between NumPy steps (matmul) and Python (the engine
between forward and backward), and the spinning worker slows that work down several
times on a machine with few cores; 10,000 spins keep the prange loop's own speed and
give the cores back (docs/design-notes.md, "OpenMP spin count").

libgomp reads the variable once, when it is loaded. ``tune()`` sets it just while
Numba loads its threading layer (which numgrad's first parallel kernel would do
anyway) and removes it again, so a libgomp loaded later (torch bundles its own) sees
the environment the user set. It does nothing if the user set OMP_WAIT_POLICY or
GOMP_SPINCOUNT, if Numba's threads already run, or with NUMGRAD_OMP_TUNING=0.
"""
from __future__ import annotations

import os

import numgrad.config as config

SPINCOUNT = "10000"

_done = False


def tune() -> bool:
    """Once per process, before the first parallel kernel; True if the count was set."""
    global _done
    if _done:
        return False
    _done = True
    if (not config.get("NUMGRAD_OMP_TUNING") or "OMP_WAIT_POLICY" in os.environ
            or "GOMP_SPINCOUNT" in os.environ):
        return False
    import numba
    from numba.np.ufunc import parallel
    if getattr(parallel, "_is_initialized", True):
        return False  # Numba's threads run already: too late, and not ours to change
    os.environ["GOMP_SPINCOUNT"] = SPINCOUNT
    try:
        numba.get_num_threads()  # loads the threading layer (and libgomp) now
    finally:
        del os.environ["GOMP_SPINCOUNT"]
    return True

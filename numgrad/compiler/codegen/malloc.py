"""codegen.malloc: start glibc's malloc where it ends up anyway in array-heavy processes.

Room: compiler. A compiled call allocates its outputs (and a kernel its temporaries)
afresh each time. glibc serves blocks over M_MMAP_THRESHOLD (128 KiB at start) with
mmap, and gives free memory at the top of the heap back to the OS past
M_TRIM_THRESHOLD; both start low and rise only as large blocks are freed, up to 32 MiB
and 64 MiB. Until then every call touches fresh pages: a loop of W2's jit(v&g) at 1e5
ran 1.03 ms per call instead of 0.53-0.60 ms, W5's 4.3 ms instead of 1.5 ms, the
difference being page faults. ``tune()`` sets the two thresholds to those maxima once,
when numgrad compiles its first plan: the state glibc itself reaches after freeing one
32 MiB block, so nothing unusual, only reached at once. Up to 64 MiB of freed memory may
then stay with the process. ``NUMGRAD_MALLOC_TUNING=0`` leaves malloc alone; other C
libraries (no ``mallopt``) are left alone too.
"""
from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what its dynamic rule pairs with it

_done = False
applied = False  # whether this process's thresholds were set


def tune() -> bool:
    """Apply the thresholds once per process; True if they were set (by this call)."""
    global _done, applied
    if _done:
        return False
    _done = True
    if os.environ.get("NUMGRAD_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    applied = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    return applied

"""malloc_tuning: start glibc's malloc where it ends up anyway in array-heavy processes.

Room: below the ops (imports config only), so eager dispatch and the compiler both reach it.
A compiled call allocates its outputs (and a kernel its temporaries) afresh each time, and
an eager op its output. glibc serves blocks over M_MMAP_THRESHOLD (128 KiB at start) with
mmap, and gives free memory at the top of the heap back to the OS past M_TRIM_THRESHOLD;
both start low and rise only as large blocks are freed, up to 32 MiB and 64 MiB. Until
then every call touches fresh pages, and page faults can take as long as the kernels
(docs/design-notes.md, "malloc thresholds"). ``tune()`` sets the two thresholds to those
maxima once, when numgrad compiles its first plan or an eager op first makes an array of
``EAGER_LARGE`` bytes or more (``ops.dispatch``; an eager LeNet step took 2,500-3,300 page
faults without it): the state glibc itself reaches after freeing one 32 MiB block, so
nothing unusual, only reached at once. A process of small tensors only is left alone.

Blocks over 32 MiB (4M float64 elements) are still mmapped, whatever the threshold:
32 MiB is glibc's ceiling for it. So ``tune()`` also turns mmap off for malloc
(``M_MMAP_MAX=0``): large blocks then come from the heap too, and a freed one is reused
by the next call instead of mapped and faulted in afresh (no page faults per call at
all). The cost is memory kept: up to ``TRIM_THRESHOLD`` (an eighth of physical memory,
between 64 MiB and 4 GiB) of freed heap stays with the process instead of going back to
the OS. ``NUMGRAD_MALLOC_TUNING=0`` leaves malloc alone; other C libraries (no
``mallopt``) are left alone too.
"""
from __future__ import annotations

import ctypes
import os
import sys

import numgrad.config as config

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
EAGER_LARGE = 128 << 10  # glibc's starting mmap threshold: the blocks whose pages churn


def _trim_threshold():
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 0
    return int(min(max(ram // 8, 2 * MMAP_THRESHOLD), 4 << 30) // 2 * 2)


TRIM_THRESHOLD = _trim_threshold()

_done = False
applied = False  # whether this process's thresholds were set


def tune() -> bool:
    """Apply the thresholds once per process; True if they were set (by this call)."""
    global _done, applied
    if _done:
        return False
    _done = True
    if not config.get("NUMGRAD_MALLOC_TUNING") or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    ok = mallopt(_M_MMAP_MAX, 0) == 1 and ok
    applied = mallopt(_M_TRIM_THRESHOLD, min(TRIM_THRESHOLD, 2**31 - 1)) == 1 and ok
    return applied

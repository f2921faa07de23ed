"""profiler.recorder: where timed events go while ``ng.profiler.profile()`` records.

Room: core (imports nothing of numgrad). The autograd engine and the compiled programs
look at ``active`` (one global read) and time their steps only while a profile records;
eager ops are timed by swapping ``Primitive.__call__`` for the profile's duration
(``numgrad.profiler``), so an op costs nothing extra when no profile is on.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

active = None   # the Profile recording now (every thread's events go to it), or None
now = time.perf_counter_ns


class Event:
    """One timed step: ``name``, ``cat`` (op, backward, jit, kernel, user), start and
    duration in ns, the thread, and the input shapes when the profile records them."""

    __slots__ = ("name", "cat", "start", "dur", "tid", "shapes")

    def __init__(self, name, cat, start, dur, tid, shapes=None):
        self.name, self.cat, self.start, self.dur = name, cat, start, dur
        self.tid, self.shapes = tid, shapes


def add(name, cat, start, shapes=None):
    """Record a step that began at ``start`` (``now()``) and ends now."""
    prof = active
    if prof is not None:
        prof._events.append(Event(name, cat, start, now() - start, threading.get_ident(),
                                  shapes))


@contextmanager
def span(name, cat):
    """Time the ``with`` block as one event (nothing is recorded without a profile)."""
    if active is None:
        yield
        return
    t0 = now()
    try:
        yield
    finally:
        add(name, cat, t0)

"""numgrad.profiler: where the time goes, in ``torch.profiler``'s shape.

>>> import numgrad as ng
>>> x = ng.ones(100, requires_grad=True)
>>> with ng.profiler.profile() as prof:
...     (x.sin() * x).sum().backward()
>>> "numgrad::sin" in prof.key_averages().table()
True

Eager mode records one event per op (``numgrad::mul``) and per backward node
(``autograd::engine::evaluate_function: MulBackward0``); a compiled call records its
stages the first time (``jit::trace``, ``jit::autodiff``, ``jit::passes``,
``jit::schedule``, ``jit::render``, ``jit::build``, ``jit::load``) and every run of its
programs and kernels (``jit::forward f``, ``kernel f_k0``, ``numgrad::matmul`` for a
step between kernels). ``record_function(name)`` adds a span of your own. Events nest:
self time is an event's time less that of the events inside it, on its thread.
``export_chrome_trace(path)`` writes a file that ``chrome://tracing`` or Perfetto opens.
CUDA kernels are timed on the host (their launch, and the synchronisation a read causes).
"""
from __future__ import annotations

import enum
import functools
import json
import os
import threading
from collections import defaultdict

from numgrad.profiler import recorder

__all__ = ["profile", "record_function", "ProfilerActivity", "EventList", "FunctionEventAvg"]

_lock = threading.Lock()
_plain_call = None  # Primitive.__call__ as it was before the recording profile swapped it


class ProfilerActivity(enum.Enum):
    """What to profile (``torch.profiler.ProfilerActivity``): host code on the CPU, and CUDA
    work as the host sees it."""
    CPU = "cpu"
    CUDA = "cuda"


def _timed_apply(prim, *args, **params):
    # Stands in for Primitive.__call__ while a profile records: the call it replaced, timed.
    t0 = recorder.now()
    try:
        return _plain_call(prim, *args, **params)
    finally:
        prof = recorder.active
        if prof is not None:
            shapes = None
            if prof.record_shapes:
                shapes = tuple(tuple(getattr(a, "shape", ())) for a in args)
            recorder.add("numgrad::" + prim.name, "op", t0, shapes)


class profile:
    """Record what numgrad runs inside the ``with`` block (``torch.profiler.profile``).

    ``activities`` (a list of ``ProfilerActivity``; default both), ``record_shapes``
    (keep each op's input shapes, for ``key_averages(group_by_input_shape=True)``) and
    ``on_trace_ready`` (called with the profile when it stops) are PyTorch's;
    ``profile_memory``, ``with_stack``, ``with_flops``, ``with_modules`` and ``schedule``
    are accepted and not acted on (numgrad records every step). One profile records at a
    time, across threads; a second one nested inside raises RuntimeError.
    """

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 use_cuda=None):
        self.activities = set(activities) if activities else set(ProfilerActivity)
        self.record_shapes = bool(record_shapes)
        self.on_trace_ready = on_trace_ready
        self._events = []
        self._saved_call = None
        self.step_num = 0

    # ----------------------------------------------------------------- recording
    def start(self):
        from numgrad.ops.registry import Primitive
        with _lock:
            if recorder.active is not None:
                raise RuntimeError("Profiler is already enabled: one ng.profiler.profile() "
                                   "records at a time")
            global _plain_call
            self._saved_call = _plain_call = Primitive.__call__
            Primitive.__call__ = _timed_apply
            recorder.active = self

    def stop(self):
        from numgrad.ops.registry import Primitive
        with _lock:
            if recorder.active is self:
                recorder.active = None
                Primitive.__call__ = self._saved_call
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """Mark the end of one training step (PyTorch's schedules count these)."""
        self.step_num += 1

    # ----------------------------------------------------------------- reading
    def events(self):
        """Every recorded event, in the order they ended."""
        return list(self._events)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The events summed per name (and input shapes, if asked): an ``EventList`` whose
        ``table()`` prints them."""
        self_time = _self_times(self._events)
        groups = defaultdict(lambda: FunctionEventAvg())
        for e in self._events:
            key = (e.name, e.shapes if group_by_input_shape else None)
            groups[key].add(e, self_time[id(e)], group_by_input_shape)
        return EventList(sorted(groups.values(), key=lambda a: -a.cpu_time_total))

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): one complete
        event ("ph": "X") per step, times in microseconds."""
        pid = os.getpid()
        t0 = min((e.start for e in self._events), default=0)
        trace = {"traceEvents": [
            {"name": e.name, "cat": e.cat, "ph": "X", "pid": pid, "tid": e.tid,
             "ts": (e.start - t0) / 1e3, "dur": e.dur / 1e3,
             "args": {} if e.shapes is None else {"Input Dims": [list(s) for s in e.shapes]}}
            for e in self._events], "displayTimeUnit": "ms"}
        tmp = f"{path}.{pid}.tmp"
        with open(tmp, "w") as f:
            json.dump(trace, f)
        os.replace(tmp, path)  # a reader never sees half a file
        return path


def _self_times(events):
    """Each event's own time: its duration less that of the events directly inside it
    (same thread, starting and ending within it)."""
    out = {}
    by_thread = defaultdict(list)
    for e in events:
        out[id(e)] = e.dur
        by_thread[e.tid].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start, -e.dur))
        stack = []
        for e in evs:
            while stack and stack[-1].start + stack[-1].dur <= e.start:
                stack.pop()
            if stack and e.start + e.dur <= stack[-1].start + stack[-1].dur:
                out[id(stack[-1])] -= e.dur
            stack.append(e)
    return out


class FunctionEventAvg:
    """One row of ``key_averages()``: ``key``, ``count``, ``cpu_time_total`` and
    ``self_cpu_time_total`` (microseconds, as PyTorch's), ``cpu_time`` (the mean),
    ``input_shapes``."""

    def __init__(self):
        self.key, self.count, self.input_shapes = None, 0, None
        self.cpu_time_total = self.self_cpu_time_total = 0.0

    def add(self, e, self_ns, by_shape=False):
        self.key = e.name
        if by_shape:  # (a row of several shapes has none to show)
            self.input_shapes = e.shapes if e.shapes is not None else ()
        self.count += 1
        self.cpu_time_total += e.dur / 1e3
        self.self_cpu_time_total += self_ns / 1e3

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_us(self.self_cpu_time_total)}"
                f" cpu_time={_us(self.cpu_time)} count={self.count}>")


class EventList(list):
    """``key_averages()``'s rows; ``table()`` prints them as PyTorch does."""

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """A text table, one row per name: self and total time (and their share of all
        self time), the mean, the count; sorted by ``sort_by`` (``"cpu_time_total"``,
        ``"self_cpu_time_total"``, ``"count"``, ``"cpu_time"``; PyTorch's ``cuda_*``
        keys sort by the host time here), at most ``row_limit`` rows."""
        key = (sort_by or "cpu_time_total").replace("cuda", "cpu").replace("device", "cpu")
        if key not in ("cpu_time_total", "self_cpu_time_total", "count", "cpu_time"):
            raise ValueError(f"sort_by={sort_by!r}: expected one of cpu_time_total, "
                             "self_cpu_time_total, cpu_time, count")
        rows = sorted(self, key=lambda a: -getattr(a, key))
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total_self = sum(a.self_cpu_time_total for a in self) or 1.0
        w = min(max([len(a.key) for a in rows] + [4]), max_name_column_width)
        cols = ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls")
        shapes = any(a.input_shapes is not None for a in rows)
        head = f"{'Name':<{w}}  " + "  ".join(f"{c:>12}" for c in cols) + (
            "  Input Shapes" if shapes else "")
        line = "-" * len(head)
        out = ([header] if header else []) + [line, head, line]
        for a in rows:
            name = a.key if len(a.key) <= w else a.key[: w - 3] + "..."
            vals = (f"{100 * a.self_cpu_time_total / total_self:.2f}%",
                    _us(a.self_cpu_time_total),
                    f"{100 * a.cpu_time_total / total_self:.2f}%", _us(a.cpu_time_total),
                    _us(a.cpu_time), str(a.count))
            out.append(f"{name:<{w}}  " + "  ".join(f"{v:>12}" for v in vals)
                       + (f"  {list(map(list, a.input_shapes or ()))}" if shapes else ""))
        out += [line, f"Self CPU time total: {_us(total_self)}"]
        return "\n".join(out)

    def __str__(self):
        return self.table()


def _us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class record_function:
    """A span of your own in the profile (``torch.profiler.record_function``): a context
    manager or a decorator."""

    def __init__(self, name, args=None):
        self.name = name
        self._t0 = None

    def __enter__(self):
        self._t0 = recorder.now()
        return self

    def __exit__(self, *exc):
        recorder.add(self.name, "user", self._t0)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper

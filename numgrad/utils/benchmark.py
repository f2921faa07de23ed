"""Timing Python statements (``torch.utils.benchmark``): ``Timer`` runs a statement, a
``Measurement`` holds the times and prints them as PyTorch's does.

>>> from numgrad.utils.benchmark import Timer
>>> m = Timer("x + 1", globals={"x": ng.ones(3)}).timeit(10)
>>> m.number_per_run, len(m.times)
(10, 1)
"""
from __future__ import annotations

import dataclasses
import sys
import textwrap
import timeit as _timeit

import numpy as np

__all__ = ["Timer", "Measurement", "TaskSpec"]

_IQR_WARN_THRESHOLD = 0.1        # PyTorch's: an IQR above 10% of the median is worth a warning
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a Timer measures (its statement, setup and labels), without its globals."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label, else a one-line statement, else the statement indented."""
        sub = self.sub_label
        if self.label is not None:
            return self.label + (f": {sub}" if sub else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {sub}" if sub else "")
        return f"stmt:{f' ({sub})' if sub else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{s}\n" if "\n" in s else s for s in sections if s])


def select_unit(t: float) -> tuple[str, float]:
    """The unit (ns, us, ms, s) that puts ``t`` seconds in [1, 1000), and its scale."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(np.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


@dataclasses.dataclass(repr=False)
class Measurement:
    """The times one Timer call measured: ``raw_times`` each ran the statement
    ``number_per_run`` times; ``times`` are per run; ``median``, ``mean``, ``iqr`` summarize."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __getattr__(self, name):  # the task spec's fields read through, as PyTorch's
        if name in {f.name for f in dataclasses.fields(TaskSpec)} | {"title"}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q):
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q))

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    def _warnings(self):
        if self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            if self.meets_confidence(_IQR_WARN_THRESHOLD):
                return []
            msg = "This could indicate system fluctuation."
        else:
            msg = "This suggests significant environmental influence."
        return [f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the "
                f"median measurement.\n           {msg}"]

    def __repr__(self) -> str:
        n, med = len(self.times), self.median
        unit, scale = select_unit(med)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{med / scale:.2f} {unit}"]
        if n >= 4:
            p25, p75 = self._quantile(0.25), self._quantile(0.75)
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25 / scale:.2f} to "
                         f"{p75 / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        return "\n".join(lines + self._warnings()).strip()


class Timer:
    """Time the Python statement ``stmt`` run with ``globals`` after ``setup``
    (``torch.utils.benchmark.Timer``; Python statements only). ``torch`` in the statement is
    numgrad unless ``globals`` says otherwise.

    >>> Timer("ng.ones(2) * 2").timeit(5).number_per_run
    5

    Raises ValueError for a statement that is not a string or a language other than Python.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer=_timeit.default_timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language="python"):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if str(getattr(language, "value", language)).lower() not in ("python", "py"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             "this code can simply be moved to `setup`.")
        # As PyTorch's, ``torch`` needs no global: it is the package (loaded by now, as this
        # module is part of it; read from sys.modules since no module imports the package).
        package = sys.modules["numgrad"]
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", package)
        self._globals.setdefault("ng", package)
        stmt, setup = textwrap.dedent(stmt).strip(), textwrap.dedent(setup).strip()
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)

    def _time(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)  # (no real statement runs in under 1 ns)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run ``stmt`` ``number`` times (after a short warm-up): one measurement."""
        self._time(max(int(number // 100), 2))
        return Measurement(number, [self._time(number)], self._task_spec)

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Measure blocks of runs until ``min_run_time`` seconds were spent, the block size
        chosen so that the timer's own overhead is negligible."""
        overhead = float(np.median([self._time(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._time(number)
            if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or \
                    taken > min_run_time or number * 10 > 2147483647:
                break
            number *= 10
        times, total = [], 0.0
        while total < min_run_time:
            t = self._time(number)
            times.append(t)
            total += t
            if callback:
                callback(number, t)
        return Measurement(number, times, self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

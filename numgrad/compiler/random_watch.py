"""compiler.random_watch: refuse a trace that draws from a global random generator.

Room: compiler. Numbers drawn while tracing would be frozen into the compiled plan, so
every call would see the same ones. ``RandomWatch`` is entered around the trace and
sees the draws of the tracing thread only: another thread drawing at the same time (a
Dask worker's event loop, a data-loading thread) has nothing to do with this trace.

- Python's ``random`` module: its functions end in C methods of ``random._inst``
  (``random``, ``getrandbits``, ``seed``...), which a ``sys.setprofile`` hook of this
  thread sees as ``c_call`` events.
- numgrad's generator: numgrad draws from it through ``creation._generator()`` (and
  ``manual_seed`` replaces it); the same hook sees those Python calls.
- NumPy's global generator (``np.random.*``): its methods are Cython functions, which
  Python's profiler does not see. A ``sys.settrace`` hook of this thread stops at the
  user's lines that name it (``np.random.rand(3)``, ``rand(3)`` imported from
  ``numpy.random``) and compares its state before and after each. When no other thread
  is running, its state before and after the whole trace is compared too, which also
  catches a draw made inside library code; with other threads running, such a draw is
  not seen.

Each error names the user's file and line. Nothing is installed on a call that does not
trace. A profiler's or debugger's hook is never replaced: a hook that is taken falls back
to comparing that generator's state before and after the trace, process-wide (another
thread's draws then count), without a line. ``executed`` holds the code objects that ran
while tracing (the guards keep only what code that ran read), None when the profile hook
was taken.
"""
from __future__ import annotations

import builtins
import functools
import linecache
import os
import pickle
import random
import sys
import sysconfig

import numpy as np

from numgrad.errors import TracingError

_LIBS = tuple({os.path.dirname(os.path.dirname(os.path.abspath(__file__)))} | {
    os.path.abspath(sysconfig.get_paths()[k]) for k in ("stdlib", "purelib", "platlib")})

NUMPY = "NumPy's global random generator (np.random.*)"
PYTHON = "Python's random module"
NUMGRAD = "numgrad's random generator (ng.rand, ng.randn, ...)"

# Methods of Python's generator that leave its state alone.
_READS = frozenset({"getstate", "__getstate__", "__reduce__", "__reduce_ex__", "__repr__",
                    "__sizeof__", "__copy__", "__deepcopy__"})
# Names that, loaded on a line, may reach NumPy's global generator (np.random.normal).
_NP_METHODS = frozenset(n for n in dir(np.random.RandomState) if not n.startswith("_"))
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLASSDEREF",
          "LOAD_ATTR", "LOAD_METHOD"}


@functools.lru_cache(maxsize=8192)
def _is_user(code):
    return not os.path.abspath(code.co_filename).startswith(_LIBS)


@functools.lru_cache(maxsize=8192)
def _numpy_lines(code):
    """``{line: names loaded on it}`` for the lines of the user's ``code`` that load the
    name of a NumPy generator method (None when there are none, or for library code)."""
    if not _is_user(code) or not _NP_METHODS.intersection(code.co_names):
        return None
    import dis
    lines, line = {}, None
    for ins in dis.get_instructions(code):
        pos = ins.positions
        if pos is not None and pos.lineno is not None:
            line = pos.lineno   # the line a "line" event reports for this instruction
        if ins.opname in _LOADS and isinstance(ins.argval, str):
            lines.setdefault(line, set()).add(ins.argval)
    out = {n: tuple(names) for n, names in lines.items() if _NP_METHODS.intersection(names)}
    return out or None


def _numpy_state():
    return pickle.dumps(np.random.mtrand._rand.get_state())


def _generators():
    """``{what: generator}``, read now (``ng.manual_seed`` replaces numgrad's)."""
    import numgrad.creation as creation
    return {PYTHON: random._inst, NUMPY: np.random.mtrand._rand, NUMGRAD: creation._rng}


def _states(whats):
    gens = _generators()
    out = []
    for what in whats:
        g = gens[what]
        st = g.getstate() if isinstance(g, random.Random) else (
            g.get_state() if isinstance(g, np.random.RandomState) else g.bit_generator.state)
        out.append((id(g), pickle.dumps(st)))
    return out


def _alone():
    return len(sys._current_frames()) <= 1


def _user_line(frame):
    """``at file:line: `text``` of the innermost user frame at or above ``frame``."""
    f = frame
    while f is not None and not _is_user(f.f_code):
        f = f.f_back
    f = f or frame
    return _at(f.f_code.co_filename, f.f_lineno)


def _at(filename, line):
    text = linecache.getline(filename, line).strip()
    return f"at {filename}:{line}" + (f": `{text}`" if text else "")


class RandomWatch:
    """Entered around a trace (see the module docstring); raises TracingError on exit if
    the tracing thread drew from a global random generator."""

    def __enter__(self):
        import numgrad.creation as creation
        self.drawn = self.where = None
        self._py = random._inst
        self._np = np.random.mtrand._rand
        self._draws = {creation._generator.__code__, creation.manual_seed.__code__}
        self._pending = None    # (file, line, NumPy state) of the user line being run
        self._profiling = sys.getprofile() is None
        self._tracing = sys.gettrace() is None
        self._lines_from = None  # the frame whose call turned line tracing on
        # Compared before and after: what a taken hook cannot watch, and NumPy's generator
        # (for draws inside library code) while this is the only thread.
        self._compare = [] if self._profiling else [PYTHON, NUMGRAD]
        if _alone() or not self._tracing:
            self._compare.append(NUMPY)
        self._before = _states(self._compare)
        self.executed = set() if self._profiling else None
        if self._profiling:
            # Line tracing (costly) is turned on only while a user function that names a
            # NumPy generator method runs (_profiler).
            sys.setprofile(self._profiler())
        elif self._tracing:
            sys.settrace(self._call)
        return self

    def __exit__(self, exc_type, *exc):
        if self._profiling:
            sys.setprofile(None)
        if self._tracing and (self._lines_from is not None or not self._profiling):
            sys.settrace(None)
        if self._pending is not None:
            self._check()
        if exc_type is not None:
            return False
        if self.drawn is None:
            after = _states(self._compare)
            for what, before, now in zip(self._compare, self._before, after):
                if now != before and (what != NUMPY or not self._tracing or _alone()):
                    self.drawn = what
                    break
        if self.drawn is not None:
            raise TracingError(
                f"the function draws from {self.drawn} {self.where or 'while tracing'}: "
                "@ng.jit would freeze the numbers drawn during tracing into the compiled "
                "plan, so every call would see the same ones. Draw them outside the jitted "
                "function and pass them in as tensor arguments.")
        return False

    def _found(self, what, where):
        if self.drawn is None:
            self.drawn, self.where = what, where

    # ------------------------------------------------------- sys.setprofile
    def _profiler(self):
        """The profile hook: a closure over locals, as it runs for every call and C call
        of the trace (a bound method costs twice as much a call)."""
        py, draws, add = self._py, self._draws, self.executed.add

        def profile(frame, event, arg):
            if event == "call":
                code = frame.f_code
                add(code)
                if code in draws:
                    self._found(NUMGRAD, _user_line(frame))
                elif self._lines_from is None and _numpy_lines(code) is not None:
                    self._trace_lines(frame)
            elif event == "c_call":
                if getattr(arg, "__self__", None) is py and arg.__name__ not in _READS:
                    self._found(PYTHON, _user_line(frame))
            elif event == "return" and frame is self._lines_from:
                self._untrace_lines()
        return profile

    def _trace_lines(self, frame):
        if not self._tracing:
            return
        self._lines_from = frame
        sys.settrace(self._call)    # for the frames it calls
        frame.f_trace = self._line  # its own trace "call" event has passed

    def _untrace_lines(self):
        self._lines_from = None
        sys.settrace(None)
        if self._pending is not None:
            self._check()

    # --------------------------------------------------------- sys.settrace
    def _call(self, frame, event, arg):
        if self._pending is not None:
            self._check()
        return self._line if _numpy_lines(frame.f_code) is not None else None

    def _line(self, frame, event, arg):
        if self._pending is not None:
            self._check()
        if event == "line":
            names = _numpy_lines(frame.f_code).get(frame.f_lineno)
            if names is not None and self._names_numpy(frame, names):
                self._pending = (frame.f_code.co_filename, frame.f_lineno, _numpy_state())
        return self._line

    def _names_numpy(self, frame, names):
        """Whether a name loaded on the line is bound to NumPy, its generator or one of the
        generator's methods (``np`` in ``np.random.rand``, ``rand`` imported alone)."""
        scopes = (frame.f_locals, frame.f_globals, builtins.__dict__)
        for n in names:
            for scope in scopes:
                v = scope.get(n, scope)
                if v is not scope:
                    try:
                        hit = v is np or v is np.random or v is self._np \
                            or getattr(v, "__self__", None) is self._np
                    except Exception:  # noqa: BLE001  (a hook must never raise into user code)
                        hit = False
                    if hit:
                        return True
                    break
        return False

    def _check(self):
        filename, line, before = self._pending
        self._pending = None
        if _numpy_state() != before:
            self._found(NUMPY, _at(filename, line))

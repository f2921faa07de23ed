"""Draws from global random generators while tracing: refused when the tracing thread
draws (naming the line), never because another thread drew at the same time.

The other thread stands for a Dask worker's event loop or a data-loading thread: it
draws from Python's ``random`` and NumPy's global generator in a tight loop while the
main thread traces fresh functions. ``backend="numpy"`` keeps each trace cheap (no Numba
compile).
"""
from __future__ import annotations

import random
import sys
import threading

import numpy as np
import pytest

import numgrad as ng

DRAWS = {"numpy": "np.random.rand(3)", "numgrad": "ng.randn(3).numpy()",
         "python": "[random.random() for _ in range(3)]",
         "python-lib": "[random.randint(0, 9) for _ in range(3)]",
         "numpy-alias": "rand(3)"}


class Drawer:
    """A thread drawing from ``random`` and ``np.random`` until stopped."""

    def __init__(self):
        self.draws = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            random.random()
            np.random.rand(2)
            self.draws += 1

    def __enter__(self):
        self._old = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)     # hand the GIL back and forth often
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._old)


def _fresh(k):
    ns = {"ng": ng}
    exec(f"def f{k}(x):\n    y = ng.tanh(x * {k + 1.0})\n    return (y * y).sum()\n", ns)
    return ng.jit(ns[f"f{k}"], backend="numpy")


def _drawing(draw):
    ns = {"ng": ng, "np": np, "random": random, "rand": np.random.rand}
    exec(f"def f(x):\n    noise = ng.tensor({DRAWS[draw]}, dtype=ng.float32)\n"
         "    return x + noise\n", ns)
    return ng.jit(ns["f"], backend="numpy")


def test_another_threads_draws_do_not_fail_a_trace():
    x = ng.ones(4)
    with Drawer() as drawer:
        start = drawer.draws
        for k in range(20):
            assert float(_fresh(k)(x)) > 0
        assert drawer.draws > start     # the other thread did draw meanwhile


@pytest.mark.parametrize("draw", sorted(DRAWS))
@pytest.mark.parametrize("where", ["main", "worker"])
def test_a_draw_by_the_tracing_thread_is_refused_naming_the_line(draw, where):
    f = _drawing(draw)
    errors = []

    def call():
        try:
            f(ng.ones(3))
        except ng.TracingError as exc:
            errors.append(str(exc))

    with Drawer():
        if where == "main":
            call()
        else:
            t = threading.Thread(target=call)
            t.start()
            t.join()
    assert len(errors) == 1, errors
    assert "random" in errors[0] and ":2" in errors[0]   # line 2 drew
    assert "Draw them outside the jitted function" in errors[0]


def test_dropout_inside_a_traced_function_draws_at_run_time():
    # numgrad's dropout is an op of the plan (a fresh mask each call), not a draw while
    # tracing: it is not refused, and two calls see two masks.
    f = ng.jit(lambda x: ng.nn.functional.dropout(x, 0.5), backend="numpy")
    x = ng.ones(64)
    a, b = f(x).numpy(), f(x).numpy()
    assert f.stats.traces == 1 and (a != b).any()


@pytest.mark.parametrize("hook", ["settrace", "setprofile"])
def test_a_debuggers_hook_is_kept_and_a_draw_still_refused(hook):
    seen = []

    def debugger(frame, event, arg):
        seen.append(event)

    f = _drawing("python")
    getattr(sys, hook)(debugger)
    try:
        with pytest.raises(ng.TracingError, match="Python's random module"):
            f(ng.ones(3))
        assert getattr(sys, hook.replace("set", "get"))() is debugger
    finally:
        getattr(sys, hook)(None)
    assert seen

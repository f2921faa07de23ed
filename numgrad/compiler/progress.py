"""compiler.progress: one line on stderr when a compile takes longer than about a second.

Room: compiler. ``compiling(name)`` wraps the build of one plan, and each compile a plan
makes later (its multi-threaded tier at the second call, the one-pass forward and
backward of ``compiler.speculate``: ``plan.Plan.late``); the CPU backend calls
``note(role, module, kernels)`` before it imports a generated module. A timer thread
waits ``NUMGRAD_PROGRESS_DELAY`` seconds
(default 1; ``NUMGRAD_PROGRESS=0`` silences it) and then prints what is being
compiled and how far it got: kernels are compiled one by one while the module is
imported, so the ones already bound in it are done. In a terminal the line
is rewritten in place; elsewhere (Jupyter, logs) it is completed once at the end. Nothing is
printed on a cache hit, which never gets here, or for a fast compile.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

import numgrad.config as config

_ROLE = {"fwd": "forward", "bwd": "backward", "fwd_nograd": "forward",
         "tier": "multi-threaded tier", "joint": "forward and backward in one pass"}
_local = threading.local()


def _delay():
    if not config.get("NUMGRAD_PROGRESS"):
        return None
    try:
        return config.get("NUMGRAD_PROGRESS_DELAY")
    except ValueError:
        return config.FLAGS["NUMGRAD_PROGRESS_DELAY"].default


class _Reporter:
    def __init__(self, name, what):
        self.name = name
        self.what = what
        self.module = None
        self.kernels = ()
        self.compiled = []      # (what, kernels) of each program this build compiled
        self.t0 = time.perf_counter()
        self.shown = False
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.stream = sys.stderr
        self.live = _interactive(self.stream)
        self.handle = None      # Jupyter: the display that the line is drawn in

    def text(self):
        return f"numgrad: compiling {self.name} ({self.parts(running=True)})…"

    def parts(self, running=False):
        """What this build compiled so far, one part per program: ``forward 3 kernels +
        backward 1/2 kernels`` (the last one counted as Numba binds its kernels while
        ``running``); the stage's name before any program was noted."""
        if not self.compiled:
            return self.what
        mod = sys.modules.get(self.module) if self.module else None
        out = []
        for i, (what, n) in enumerate(self.compiled):
            if running and i == len(self.compiled) - 1 and n:
                # A kernel's name is bound in its module once Numba has compiled it.
                k = 0 if mod is None else sum(1 for name in self.kernels if name in vars(mod))
                out.append(f"{what} {k}/{n} kernel{'s' if n > 1 else ''}")
            else:
                out.append(f"{what} {n} kernel{'s' if n != 1 else ''}")
        return " + ".join(out)

    def run(self, delay):
        if self.done.wait(delay):
            return
        with self.lock:
            if self.done.is_set():
                return
            self.shown = True
            if "ipykernel" in sys.modules:
                # A notebook: a plain output line updated in place (not a red stderr box
                # that reads as an error); the saved notebook keeps the final text only.
                self.handle = _display(self.text())
            if self.handle is None:
                self._write(self.text(), end="")
        while self.live and not self.done.wait(0.5):
            with self.lock:
                if not self.done.is_set():
                    self._write("\r" + self.text(), end="")

    def finish(self, ok):
        with self.lock:
            self.done.set()
            if self.shown:
                took = time.perf_counter() - self.t0
                if self.handle is not None:
                    verdict = f"done in {took:.1f} s" if ok else f"failed after {took:.1f} s"
                    self.handle.update({"text/plain": f"numgrad: compiled {self.name}: "
                                        f"{verdict} ({self.parts()})"}, raw=True)
                elif not ok:
                    self._write(f"\rnumgrad: compiling {self.name} failed after {took:.1f} s"
                                if self.live else f" failed after {took:.1f} s")
                elif self.live:
                    self._write(f"\rnumgrad: compiled {self.name} in {took:.1f} s "
                                f"({self.parts()})" + " " * 20)
                else:
                    self._write(f" done in {took:.1f} s ({self.parts()})")

    def _write(self, s, end="\n"):
        try:
            self.stream.write(s + end)
            self.stream.flush()
        except (OSError, ValueError):
            pass


def _display(text):
    try:
        from IPython.display import display
        return display({"text/plain": text}, raw=True, display_id=True)
    except Exception:  # noqa: BLE001 - no IPython display: the stream line instead
        return None


def _interactive(stream):
    # A terminal redraws the line in place. Jupyter would too, but a saved notebook keeps
    # every redraw as an output of its own, so there the line is completed once instead.
    if "ipykernel" in sys.modules:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def compiling(name, what="tracing"):
    """Report on this compile if it runs past the delay; nested builds share the outer line."""
    delay = _delay()
    if delay is None or getattr(_local, "current", None) is not None:
        yield
        return
    rep = _Reporter(name, what)
    _local.current = rep
    timer = threading.Thread(target=rep.run, args=(delay,), daemon=True,
                             name="numgrad-progress")
    timer.start()
    ok = False
    try:
        yield
        ok = True
    finally:
        _local.current = None
        rep.finish(ok)


def note(role, module=None, kernels=()):
    """Codegen: the plan being built now compiles ``role``'s ``kernels`` (names) in
    ``module`` (a module name)."""
    rep = getattr(_local, "current", None)
    if rep is not None:
        rep.what = _ROLE.get(role, role)
        rep.module = module
        rep.kernels = tuple(kernels)
        rep.compiled.append((rep.what, len(rep.kernels)))

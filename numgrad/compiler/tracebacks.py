"""compiler.tracebacks: user errors raised while tracing show the user's frames only.

Room: compiler. A mistake inside an ``@ng.jit`` function (tensor-dependent control
flow, a shape mismatch) is raised from deep in the tracer, autodiff and dispatch:
60-120 lines of numgrad frames before the message. As JAX's traceback filtering
does, the traceback is rebuilt from the frames outside the numgrad package (the
call site and the user's function); the two numgrad frames that re-raise it
carry ``__tracebackhide__``, which IPython and pytest honour. Errors that never
passed through the user's code (a codegen bug) keep every frame, and
``NUMGRAD_TRACEBACK_FILTERING=off`` keeps them for all.
"""
from __future__ import annotations

import os
import types

import numgrad.config as config
from numgrad.errors import TracingError

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTE = ("numgrad removed its internal frames from this traceback (all but the call that "
        "raised it); set NUMGRAD_TRACEBACK_FILTERING=off to see them")


def enabled() -> bool:
    return config.get("NUMGRAD_TRACEBACK_FILTERING")


def _internal(frame) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(_PKG + os.sep)


def user_frames(tb):
    """The traceback ``tb`` with every frame inside numgrad left out (or None)."""
    kept = []
    while tb is not None:
        if not _internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def is_user_error(exc) -> bool:
    """A TracingError, or an error raised while the user's function was being traced."""
    if isinstance(exc, TracingError):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if not _internal(tb.tb_frame):
            return True
        tb = tb.tb_next
    return False


def filtered(exc):
    """``exc`` with its traceback filtered if it is a user error and filtering is on,
    else None (re-raise it as it is)."""
    if not enabled() or not is_user_error(exc):
        return None
    exc = exc.with_traceback(user_frames(exc.__traceback__))
    if hasattr(exc, "add_note") and NOTE not in getattr(exc, "__notes__", ()):
        exc.add_note(NOTE)
    return exc


def at_boundary(exc):
    """``exc`` to re-raise from the public call (``CompiledFunction.__call__``): a filtered
    error drops the numgrad frames it passed through on its way up, so the traceback shows
    that one call and then the user's own frames."""
    if NOTE in getattr(exc, "__notes__", ()):
        return exc.with_traceback(user_frames(exc.__traceback__))
    return exc

"""autograd.anomaly: ``set_detect_anomaly`` / ``detect_anomaly``, as in ``torch.autograd``.

Room: autograd (low half; imports only the standard library and NumPy). While anomaly
detection is on, every backward node remembers the stack of the forward call that
created it. When a node's backward fails (an in-place change to a saved tensor, say),
the error names the node and where it was created, and a warning carries the full
forward traceback, as PyTorch's does. With ``check_nan`` a backward that returns NaN
raises ``Function 'XBackward0' returned nan values in its 0th output.``
"""
from __future__ import annotations

import functools
import os
import traceback
import warnings
import weakref

import numpy as np

enabled = False  # read by the op dispatcher and the engine on every node: keep it a plain flag
_check_nan = True
_traces: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled() -> bool:
    """Whether backward nodes record where they were created (``torch.is_anomaly_enabled``)."""
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether a backward returning NaN raises (``torch.is_anomaly_check_nan_enabled``)."""
    return _check_nan


def _set(mode, check_nan):
    global enabled, _check_nan
    enabled, _check_nan = bool(mode), bool(check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off (``torch.autograd.set_detect_anomaly``).

    Takes effect at once; as a context manager it restores the previous setting on exit.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (enabled, _check_nan)
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> bool:
        _set(*self._prev)
        return False


class detect_anomaly:
    """Anomaly detection inside a ``with`` block or a decorated function
    (``torch.autograd.detect_anomaly``); warns that it slows things down, as PyTorch does."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._prev = (enabled, _check_nan)
        _set(True, self.check_nan)

    def __exit__(self, *exc) -> bool:
        _set(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = (enabled, _check_nan)
            _set(True, self.check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(*prev)
        return wrapper


def record(node) -> None:
    """Remember the forward stack that created ``node`` (numgrad's own frames left out)."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE)]
    _traces[node] = frames


def creation_site(node) -> str | None:
    """``file:line in function`` of the user code that created ``node``, if recorded."""
    frames = _traces.get(node)
    if not frames:
        return None
    f = frames[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def run(node, grads):
    """``node.apply(grads)`` with anomaly checks: failures name the node's creation site."""
    name = node.name()
    try:
        outs = node.apply(grads)
    except Exception as e:
        frames = _traces.get(node)
        if frames is not None:
            warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the "
                          "error:\n" + "".join(traceback.format_list(frames)), UserWarning,
                          stacklevel=2)
        site = creation_site(node)
        if site is None or not isinstance(e, (RuntimeError, TypeError, ValueError)):
            raise
        raise type(e)(f"{e} [anomaly detection: the failing backward is {name}, created at "
                      f"{site}]") from e
    if _check_nan:
        for i, r in enumerate(outs):
            d = getattr(r, "_data", None)
            if type(d) is np.ndarray and d.dtype.kind == "f" and np.isnan(d).any():
                raise RuntimeError(f"Function '{name}' returned nan values in its {i}th output.")
    return outs

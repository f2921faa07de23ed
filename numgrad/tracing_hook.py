"""tracing_hook: the one switch through which a running ``@ng.jit`` trace sees concrete tensors.

Room: leaf (imports NumPy, nothing of numgrad). While some thread traces, the compiler sets
``capture`` to a function: ``capture(t)`` returns the traced stand-in of a concrete tensor
the traced function reached from outside its arguments (a closure, global or attribute),
or ``t`` itself where it is a constant. Eager code calls ``standin(t)`` before it uses a
tensor's concrete data, so a captured parameter becomes an input of the plan instead of a
frozen value. A module of its own because ``numgrad.tensor`` is shadowed on the package by
the ``ng.tensor`` factory, and every room needs to reach this switch.
"""
from __future__ import annotations

import numpy as np

capture = None


def standin(t):
    """The traced stand-in of the concrete tensor ``t`` while a trace runs, else None."""
    if capture is None:
        return None
    d = t._data
    if type(d) is not np.ndarray and not hasattr(d, "_ng_device"):  # traced already
        return None
    lifted = capture(t)
    return None if lifted is t else lifted

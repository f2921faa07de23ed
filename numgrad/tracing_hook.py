"""tracing_hook: the one switch through which a running ``@ng.jit`` trace sees concrete tensors.

Room: leaf (imports NumPy, nothing of numgrad). While some thread traces, the compiler sets
``capture`` to a function: ``capture(t)`` returns the traced stand-in of a concrete tensor
the traced function reached from outside its arguments (a closure, global or attribute),
or ``t`` itself where it is a constant. Eager code calls ``standin(t)`` before it uses a
tensor's concrete data, so a captured parameter becomes an input of the plan instead of a
frozen value. A module of its own because ``numgrad.tensor`` is shadowed on the package by
the ``ng.tensor`` factory, and every room needs to reach this switch.

It also tells a traced Python number apart (``weak``): a Python float argument that
``@ng.jit`` traces as a 0-d input (``compiler.jit_function``) is a tensor whose payload is
marked ``_ng_weak``; type promotion treats it as the Python number it stands for, and code
that needs that number itself (``as_number``) makes the trace fail, so the argument stays
a constant of the plan.
"""
from __future__ import annotations

import numpy as np

capture = None


def concrete(d) -> bool:
    """Whether the payload ``d`` holds values (a NumPy array, or a device payload such as
    a CUDA array) rather than standing for them in a trace."""
    return type(d) is np.ndarray or hasattr(d, "_ng_device")


def standin(t):
    """The traced stand-in of the concrete tensor ``t`` while a trace runs, else None."""
    if capture is None:
        return None
    if not concrete(t._data):  # traced already
        return None
    lifted = capture(t)
    return None if lifted is t else lifted


def weak(x):
    """Whether ``x`` is a traced Python number: a Python float argument traced as a 0-d
    input, or a value computed from such floats and Python numbers alone."""
    return getattr(getattr(x, "_data", None), "_ng_weak", False)


def as_number(x):
    """``x``, where an op takes a Python number (a parameter baked into its kernel): a
    traced Python number has no value to give, so this raises the tracer's TracingError
    and the argument stays a constant of the plan (``compiler.jit_function``)."""
    if weak(x):
        x._concrete("number")
    return x

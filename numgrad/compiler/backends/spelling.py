"""backends.spelling: typed literals and casts in generated Numba source (CPU and CUDA).

Room: compiler. The registry's scalar lowerings (``op.scalar(args, dtype, params,
spell)``) ask a backend's ``Spell`` for literals and casts. NumPy's scalar types read the
same in ``numba.njit`` and ``numba.cuda.jit`` code; only the module a kernel takes its
NaN and infinity constants from differs (``np`` in CPU kernels, ``math`` in CUDA ones).
"""
from __future__ import annotations

import math

import numpy as np


class Spell:
    """How a backend spells typed literals (``lit``) and casts (``cast``)."""

    def __init__(self, consts="np"):
        self.consts = consts  # the module kernels read nan and inf from

    def lit(self, value, dtype):
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            return "True" if bool(value) else "False"
        if dtype.kind in "iu":
            return f"np.{dtype.name}({int(value)})"
        v = float(value)
        if math.isnan(v):
            return f"np.{dtype.name}({self.consts}.nan)"
        if math.isinf(v):
            return f"np.{dtype.name}({'' if v > 0 else '-'}{self.consts}.inf)"
        return f"np.{dtype.name}({v!r})"

    @staticmethod
    def wrapped(expr, dtype):
        """``expr`` cast back to an integer ``dtype`` narrower than int64: Numba computes
        int8/int16/int32 arithmetic in int64, and each value must wrap as PyTorch's does
        before the next op reads it (``(x_int8 * 100) // 3``)."""
        dtype = np.dtype(dtype)
        if dtype.kind in "iu" and dtype.itemsize < 8:
            return f"np.{dtype.name}({expr})"
        return expr

    @staticmethod
    def cast(expr, dtype):
        return f"np.{np.dtype(dtype).name}({expr})"

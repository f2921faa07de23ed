"""ops.floor_division: ``floor_divide`` (``//``), the quotient rounded down, as PyTorch's.

Room: ops. One elementwise registry row: integers stay integers (``int8 // int8`` is int8,
wrapping as PyTorch's), floats divide and floor as NumPy's and PyTorch's ``div_floor`` do
(``x // 0.`` is +-inf or NaN). PyTorch has no derivative for it: a result that requires
grad has a ``NotImplemented`` node whose backward raises its RuntimeError. Eagerly, an
integer zero divisor raises PyTorch's RuntimeError; a compiled kernel cannot raise and
gives 0 there (NumPy's integer division by zero).
"""
from __future__ import annotations

import numpy as np

import numgrad.ops.elementwise as E
import numgrad.ops.scalar_helpers as H
from numgrad.ops.no_derivative import refuse
from numgrad.ops.registry import Api, defop
from numgrad.ops.special import refuse_integer_zero_divisor


def _np_floor_divide(x, y):
    refuse_integer_zero_divisor(x, y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.floor_divide(x, y)


def _bools(operands):
    # Promotion decides: a bool with an int is an int, two bools are refused, as PyTorch's.
    if all(E._is_bool(a) for a in operands):
        return NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")
    return None


def _no_derivative(g):  # raises at backward, eager or compiled (ops.no_derivative)
    return refuse(g, RuntimeError, "derivative for aten::floor_divide is not implemented")


floor_divide = defop(
    "floor_divide", inputs=("x", "y"), impl=_np_floor_divide, kind="elementwise",
    lowering="floordiv({0}, {1})", node="NotImplemented", helpers=(H.floordiv, H.ffloordiv),
    scalar=lambda args, dt, params, spell:  # floats: PyTorch's div_floor, integers: NumPy's
        f"{'ffloordiv' if dt.kind == 'f' else 'floordiv'}({args[0]}, {args[1]})",
    check=_bools,
    api=Api(doc="``input // other``: the quotient rounded down (``torch.floor_divide``,\n"
                "``jax.numpy.floor_divide``); integers stay integers. Raises RuntimeError for "
                "an\ninteger zero divisor, and from backward (PyTorch has no derivative).",
            inplace=True))
floor_divide.defvjp(_no_derivative, _no_derivative)

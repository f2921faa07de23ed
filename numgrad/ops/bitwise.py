"""ops.bitwise: ``bitwise_and/or/xor/not`` (``&``, ``|``, ``^``, ``~``) of integer and bool
tensors, as elementwise primitives without gradients.

Room: ops. Of bools they are the logical ops; floating operands raise PyTorch's
NotImplementedError (``"bitwise_and_cpu" not implemented for 'Float'``), and ``~`` of a
float tensor its TypeError.
"""
from __future__ import annotations

import numbers

import numpy as np

import numgrad.dtypes as _dt
import numgrad.ops.scalar_helpers as H
from numgrad.ops.registry import Api, defop
from numgrad.tensor import Tensor

# PyTorch's dtype names in its "not implemented for" errors (Half too, which numgrad lacks).
_ERROR_NAMES = {**_dt.SCALAR_NAMES, "float16": "Half"}


def _result_dtype(operands):
    keys = []
    for a in operands:
        if isinstance(a, Tensor):
            keys.append((a.dtype, a.ndim, False))
        elif isinstance(a, (numbers.Number, np.bool_)) and not isinstance(a, complex):
            keys.append((_dt.of_scalar(a), 0, True))
        else:
            return None  # not an operand at all: dispatch's TypeError says so
    return _dt.promote(keys)


def _integral_only(name):
    """A registry ``check``: PyTorch refuses a floating result dtype, with this error."""
    def check(operands):
        rd = _result_dtype(operands)
        if rd is not None and rd.is_floating_point:
            return NotImplementedError(f'"{name}_cpu" not implemented for '
                                       f"'{_ERROR_NAMES.get(rd.name, rd.name)}'")
        return None
    return check


def _not_scalar(args, dt, params, spell):
    # Python's ~ of a bool is an int (~True is -2): a bool's NOT is `not`.
    return f"(not {args[0]})" if dt == np.bool_ else f"(~{args[0]})"


def _binary(name, impl, op):
    return defop(name, inputs=("x", "y"), impl=impl, kind="elementwise",
                 lowering=f"({{0}} {op} {{1}})", check=_integral_only(name), python_exact=True,
                 api=Api(doc=f"``input {op} other``, bit by bit, of integer or bool tensors "
                             f"(``torch.{name}``);\nNotImplementedError for floating "
                             "operands. Never requires grad.", inplace=True))


bitwise_and = _binary("bitwise_and", np.bitwise_and, "&")
bitwise_or = _binary("bitwise_or", np.bitwise_or, "|")
bitwise_xor = _binary("bitwise_xor", np.bitwise_xor, "^")
bitwise_not = defop("bitwise_not", inputs=("x",), impl=np.invert, kind="elementwise",
                    lowering="bitwise_not({0})", scalar=_not_scalar,
                    check=_integral_only("bitwise_not"), python_exact=True,
                    api=Api(doc="``~input``: each bit flipped, of an integer or bool tensor "
                                "(``torch.bitwise_not``);\nNotImplementedError for floating "
                                "input. Never requires grad.", inplace=True))


def _no_bools(name):
    """``_integral_only``, and bool operands refused too (PyTorch shifts no bools)."""
    integral = _integral_only(name)

    def check(operands):
        if _result_dtype(operands) is _dt.bool_:
            return NotImplementedError(f'"{name}_cpu" not implemented for \'Bool\'')
        return integral(operands)
    return check


# Shifts as PyTorch's (and NumPy's): a count of the width or more, or a negative one, gives
# 0 (-1 for a negative value shifted right); the kernels' helpers are in ops.scalar_helpers.
def _shift(name, short, symbol):
    impl = np.left_shift if short == "lshift" else np.right_shift
    return defop(name, inputs=("x", "y"), impl=impl, kind="elementwise",
                 lowering=short + "({0}, {1})", check=_no_bools(short),
                 helpers=(getattr(H, short),),
                 api=Api(doc=f"``input {symbol} other``: the bits of integer tensors shifted "
                             f"(``torch.{name}``); a count of the\nwidth or more, or a "
                             "negative one, gives 0 (-1 for a negative value shifted right).\n"
                             "NotImplementedError for floating or bool operands. Never "
                             "requires grad.", inplace=True))


bitwise_left_shift = _shift("bitwise_left_shift", "lshift", "<<")
bitwise_right_shift = _shift("bitwise_right_shift", "rshift", ">>")
for _p in (bitwise_and, bitwise_or, bitwise_xor, bitwise_not,
           bitwise_left_shift, bitwise_right_shift):
    _p.defvjp(*[None] * len(_p.inputs))


def invert(x):
    """``~x`` (``torch.Tensor.__invert__``): NOT of a bool tensor, bitwise NOT of an integer
    one; TypeError for a floating tensor, as PyTorch.

    >>> ~ng.tensor([True, False]), ~ng.tensor([0, 5])
    (tensor([False,  True]), tensor([-1, -6]))
    """
    if x.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(x)

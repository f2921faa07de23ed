"""ops.special: erf, log1p, expm1, remainder and fmod as elementwise primitives.

Room: ops. These need their own scalar lowering (``log(1 + x)`` loses every digit of a
small ``x``; ``erf`` has no spelling in other primitives), so each is a registry row
that fuses under ``@ng.jit`` like ``exp``. Everything else of its kind is a
composite over primitives (``ops.composites``).
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.ops.scalar_helpers as H
from numgrad.ops.registry import Api, defop
import numgrad.ops.elementwise as E

_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def _np_erf(x):
    return _erf_vec(x).astype(x.dtype, copy=False) if x.size else x.copy()


def refuse_integer_zero_divisor(x, y):
    """PyTorch's RuntimeError for an integer division by zero (``%``, ``fmod``, ``//``),
    where NumPy gives 0 with a warning. Eager only: a compiled kernel cannot raise."""
    if x.dtype.kind in "iub" and y.dtype.kind in "iub" and not np.all(y):
        raise RuntimeError("ZeroDivisionError")


def _np_fmod(x, y):
    refuse_integer_zero_divisor(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(x, y)


def _np_remainder(x, y):
    refuse_integer_zero_divisor(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.remainder(x, y)


_EW = "elementwise"
def _erf_scalar(args, dt, params, spell):
    if dt == np.float32:
        # The eager impl computes erf in float64 and rounds once (erff differs near 0).
        return spell.cast(f"erf({spell.cast(args[0], np.dtype(np.float64))})", dt)
    return f"erf({args[0]})"


def _fmod_scalar(args, dt, params, spell):
    # Floats: C's fmod (ffmod); integers: the sign rule on Python's % (fmod).
    return f"{'ffmod' if dt.kind == 'f' else 'fmod'}({args[0]}, {args[1]})"


erf = defop("erf", inputs=("x",), impl=_np_erf, kind=_EW, lowering="erf({0})", floating=True,
            scalar=_erf_scalar, helpers=(H.erf,),
            api=Api(doc="The error function (``torch.erf``, ``jax.scipy.special.erf``).",
                    inplace=True))
log1p = defop("log1p", inputs=("x",), impl=np.log1p, kind=_EW, lowering="log1p({0})",
              floating=True, helpers=(H.log1p,),
              api=Api(doc="``log(1 + input)``, exact for small inputs (``torch.log1p``, "
                          "``jax.numpy.log1p``).", inplace=True))
expm1 = defop("expm1", inputs=("x",), impl=np.expm1, kind=_EW, lowering="expm1({0})",
              floating=True, helpers=(H.expm1,),
              api=Api(doc="``exp(input) - 1``, exact for small inputs (``torch.expm1``, "
                          "``jax.numpy.expm1``).", inplace=True))
remainder = defop("remainder", inputs=("x", "y"), impl=_np_remainder, kind=_EW,
                  lowering="remainder({0}, {1})", node="RemainderBackward0",
                  helpers=(H.remainder,),
                  api=Api(doc="Python's ``%``: the remainder takes the divisor's sign "
                              "(``torch.remainder``,\n``jax.numpy.remainder``).", inplace=True))
fmod = defop("fmod", inputs=("x", "y"), impl=_np_fmod, kind=_EW, lowering="fmod({0}, {1})",
             scalar=_fmod_scalar, node="FmodBackward0", helpers=(H.ffmod, H.fmod),
             api=Api(doc="C's ``fmod``: the remainder takes the dividend's sign (``torch.fmod``,"
                         "\n``jax.numpy.fmod``).", inplace=True))
# Adding an elementwise op is this one row (and its vjp): eager, tracer, autodiff, every
# kernel backend (they compile its ``hypot`` helper) and the public ng.hypot read it.
hypot = defop("hypot", inputs=("x", "y"), impl=np.hypot, kind=_EW, lowering="hypot({0}, {1})",
              floating=True, helpers=(H.hypot,),
              api=Api(doc="``sqrt(input**2 + other**2)`` without overflow or underflow in the "
                          "squares\n(``torch.hypot``, ``jax.numpy.hypot``); integer operands "
                          "are computed as floats.", method=False))
hypot.defvjp(lambda g, x, out: g * (x / out), lambda g, y, out: g * (y / out))

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
erf.defvjp(lambda g, x: g * (E.exp(-(x * x)) * _TWO_OVER_SQRT_PI))
log1p.defvjp(lambda g, x: g / (x + 1))
expm1.defvjp(lambda g, out: g * (out + 1))
# x - out is y * floor(x / y) (remainder) or y * trunc(x / y) (fmod): a step function of
# x, so its gradient w.r.t. x is zero almost everywhere and the y-gradient is -that / y.
remainder.defvjp(lambda g: g, lambda g, x, y, out: g * -((x - out) / y).detach())
fmod.defvjp(lambda g: g, lambda g, x, y, out: g * -((x - out) / y).detach())

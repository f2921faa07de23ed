"""backends.cpu.scalar: the scalar functions that lowering templates name, for Numba kernels.

Room: compiler. Templates in the op registry say ``exp({0})``, ``relu({0})``...;
a generated kernel imports its helpers from here (or from ``scalar_vec``,
which swaps in vectorisable transcendentals). Every helper is inlined.
"""
from __future__ import annotations

import math
import re

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from numgrad.compiler.backends.cpu.accumulate_ir import radd  # noqa: F401 (kernels call it)
from numgrad.compiler.backends.cpu.arrays_ir import alloc, full, view  # noqa: F401 (kernels call them)

# noalias_args (why: backends.cpu.llvm.attrs). Numba passes an array as (meminfo, parent,
# nitems, itemsize, data, shape..., strides...); field 4 is the data pointer. Generated
# loop functions name their arrays f_<name>.
_DATA_ARG = re.compile(r"^arg\.f_[a-z]+\.4$")


@intrinsic
def noalias_args(typingctx):
    """Mark the data pointers of the calling function's f_* array arguments noalias."""
    def codegen(context, builder, signature, args):
        for a in builder.function.args:
            if _DATA_ARG.match(a.name) and isinstance(a.type, ir.PointerType):
                a.add_attribute("noalias")
        return context.get_dummy_value()
    return types.none(), codegen


# Plain libm versions, used when ``ng.jit(vector_math=False)``; ``scalar_vec`` replaces
# them with ``vmath_ir``'s vectorisable polynomials (the default).
def _libm(fn):
    @njit(inline="always")
    def call(x):
        return fn(x)
    return call


exp, log, tanh, sin, cos = (_libm(f) for f in (math.exp, math.log, math.tanh, math.sin,
                                                math.cos))
sin_paired, cos_paired = sin, cos  # scalar_vec's are inlined for sin/cos pairs


@njit(inline="always")
def sigmoid(x):
    # Split by sign so exp never overflows, as the eager impl does.
    # (No `+ x * 0`: at +-inf that is NaN, where sigmoid is 1 and 0.)
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


@njit(inline="always")
def sqrt(x):
    return np.sqrt(x)


# relu and sign take their zero/one from the emitter (typed literals): `x * 0` kept the
# type but is NaN at +-inf, which made relu(-inf) and the gradient of abs at inf NaN.
@njit(inline="always")
def relu(x, zero):
    # PyTorch's `x < 0 ? 0 : x`: relu(-0) is -0, NaN passes.
    return zero if x < 0 else x


@njit(inline="always")
def sign(x, zero, one):
    # PyTorch's sign: +0 at +-0 and at NaN.
    if x > 0:
        return one
    if x < 0:
        return -one
    return zero


@njit(inline="always")
def clamp(x, lo, hi):
    # NaN passes through, as np.clip and torch.clamp do.
    y = lo if x < lo else x
    return hi if y > hi else y


@njit(inline="always")
def clamp_min(x, lo):
    return lo if x < lo else x


@njit(inline="always")
def clamp_max(x, hi):
    return hi if x > hi else x


@njit(inline="always")
def maximum(a, b):
    # np.maximum's rule (the eager impl): NaN wins, and of two equal values (-0, +0) the
    # second, as torch's vectorised loop also gives.
    return a if (a > b or a != a) else b


@njit(inline="always")
def minimum(a, b):
    return a if (a < b or a != a) else b


@njit(inline="always")
def power(a, b):
    return a ** b


@njit(inline="always")
def ipower(a, b):
    # Integer powers as PyTorch computes them: negative exponents give 1 for 1, +-1
    # for -1, 0 otherwise (the eager impl does the same on NumPy).
    if b >= 0:
        return a ** b
    if a == 1:
        return a
    if a == -1:
        return a if b % 2 else -a
    return a * 0


HELPERS = ["exp", "log", "tanh", "sigmoid", "sin", "cos", "sqrt", "relu", "sign", "clamp",
           "clamp_min", "clamp_max", "maximum", "minimum", "power", "ipower"]


# Issue 11's ops (numgrad/ops/special.py). Numba lowers math.erf/log1p/expm1 to libm.
@njit(inline="always")
def erf(x):
    return math.erf(x)


@njit(inline="always")
def log1p(x):
    return math.log1p(x)


@njit(inline="always")
def expm1(x):
    return math.expm1(x)


@njit(inline="always")
def remainder(a, b):
    # Python's % (and torch.remainder): the result takes the divisor's sign.
    return a % b


@njit(inline="always")
def fmod(a, b):
    # C's fmod (and torch.fmod) for integers: the result takes the dividend's sign.
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return r


@njit(inline="always")
def ffmod(a, b):
    # Floats: C's own fmod, as the eager np.fmod (fmod(-0., y) is -0, fmod(x, inf) is x;
    # Python's %, which Numba's is, gives +0 and inf there, and rounds when it adds b).
    return np.fmod(a, b)


@njit(inline="always")
def hypot(a, b):
    # C's hypot, as np.hypot: no overflow in the squares, inf wins over NaN.
    return math.hypot(a, b)


HELPERS += ["erf", "log1p", "expm1", "remainder", "fmod", "ffmod", "hypot"]

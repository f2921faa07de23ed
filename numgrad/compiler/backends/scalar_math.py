"""backends.scalar_math: the scalar helpers lowering templates name, written once.

Room: compiler. The registry's templates (``exp({0})``, ``relu({0})``...) read the same
in ``numba.njit`` and ``numba.cuda.jit`` source. These are plain Python functions; each
backend decorates them for its kernels (``cpu.scalar``: ``numba.njit``, ``cuda.scalar``:
CUDA device functions, both inlined) and adds the few whose bodies differ per target
(``sqrt``, ``ipower``, ``ffmod``; the CPU's vector math in ``cpu.scalar_vec``). Each keeps
eager mode's special-value rule (NaN passes clamp, relu(-0) is -0, sign(NaN) is 0...).
"""
from __future__ import annotations

import math


# libm (CPU) or libdevice (CUDA, ``__nv_exp``...), both within 1-2 ulp.
def exp(x):
    return math.exp(x)


def log(x):
    return math.log(x)


def tanh(x):
    return math.tanh(x)


def sin(x):
    return math.sin(x)


def cos(x):
    return math.cos(x)


def erf(x):
    return math.erf(x)


def log1p(x):
    return math.log1p(x)


def expm1(x):
    return math.expm1(x)


def sigmoid(x):
    # Split by sign so exp never overflows, as the eager impl does.
    # (No `+ x * 0`: at +-inf that is NaN, where sigmoid is 1 and 0.)
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


# relu and sign take their zero/one from the emitter (typed literals): `x * 0` kept the
# type but is NaN at +-inf, which made relu(-inf) and the gradient of abs at inf NaN.
def relu(x, zero):
    # PyTorch's `x < 0 ? 0 : x`: relu(-0) is -0, NaN passes.
    return zero if x < 0 else x


def sign(x, zero, one):
    # PyTorch's sign: +0 at +-0 and at NaN.
    if x > 0:
        return one
    if x < 0:
        return -one
    return zero


def clamp(x, lo, hi):
    # NaN passes through, as np.clip and torch.clamp do.
    y = lo if x < lo else x
    return hi if y > hi else y


def clamp_min(x, lo):
    return lo if x < lo else x


def clamp_max(x, hi):
    return hi if x > hi else x


def maximum(a, b):
    # np.maximum's rule (the eager impl): NaN wins, and of two equal values (-0, +0) the
    # second, as torch's vectorised loop also gives.
    return a if (a > b or a != a) else b


def minimum(a, b):
    return a if (a < b or a != a) else b


def power(a, b):
    return a ** b


def remainder(a, b):
    # Python's % (and torch.remainder): the result takes the divisor's sign.
    return a % b


def fmod(a, b):
    # C's fmod (and torch.fmod) for integers: the result takes the dividend's sign.
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return r


def hypot(a, b):
    # C's hypot, as np.hypot: no overflow in the squares, inf wins over NaN.
    return math.hypot(a, b)


SHARED = (exp, log, tanh, sin, cos, erf, log1p, expm1, sigmoid, relu, sign, clamp,
          clamp_min, clamp_max, maximum, minimum, power, remainder, fmod, hypot)

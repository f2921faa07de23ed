"""backends.cuda.scalar: the scalar functions lowering templates name, for CUDA kernels.

Room: compiler. The registry's templates (``exp({0})``, ``relu({0})``...) read the same
in ``numba.njit`` and ``numba.cuda.jit`` source; ``backends.cpu.scalar`` defines the names
for the CPU, this module for CUDA (device functions, inlined). The transcendentals are
CUDA's own: Numba lowers ``math.*`` to libdevice (``__nv_exp``...), which is within 1-2
ulp, as the CPU's vector math is; porting ``vmath_ir``'s polynomials would not be faster
on a GPU, where these kernels are memory-bound. Each function keeps the CPU helper's
special-value rule (NaN passes clamp, relu(-0) is -0, sign(NaN) is 0...), and every
name of ``backends.cpu.scalar.HELPERS`` is defined here (tests/cuda checks it).
"""
from __future__ import annotations

import math

from numba import cuda

_device = cuda.jit(device=True, inline="always")


@_device
def exp(x):
    return math.exp(x)


@_device
def log(x):
    return math.log(x)


@_device
def tanh(x):
    return math.tanh(x)


@_device
def sin(x):
    return math.sin(x)


@_device
def cos(x):
    return math.cos(x)


@_device
def sqrt(x):
    return math.sqrt(x)


@_device
def sigmoid(x):
    # Split by sign so exp never overflows, as the eager impl does.
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


@_device
def relu(x, zero):
    return zero if x < 0 else x


@_device
def sign(x, zero, one):
    if x > 0:
        return one
    if x < 0:
        return -one
    return zero


@_device
def clamp(x, lo, hi):
    y = lo if x < lo else x
    return hi if y > hi else y


@_device
def clamp_min(x, lo):
    return lo if x < lo else x


@_device
def clamp_max(x, hi):
    return hi if x > hi else x


@_device
def maximum(a, b):
    # np.maximum's rule: NaN wins; of two equal values the second.
    return a if (a > b or a != a) else b


@_device
def minimum(a, b):
    return a if (a < b or a != a) else b


@_device
def power(a, b):
    return a ** b


@_device
def ipower(a, b):
    # Integer powers as PyTorch computes them (negative exponents: 1, +-1 or 0).
    if b >= 0:
        r = a * 0 + 1
        base = a
        e = b
        while e > 0:  # by squaring: a ** b of two int64s is not lowered on CUDA
            if e & 1:
                r = r * base
            base = base * base
            e = e >> 1
        return r
    if a == 1:
        return a
    if a == -1:
        return a if b % 2 else -a
    return a * 0


@_device
def hypot(a, b):
    return math.hypot(a, b)


@_device
def erf(x):
    return math.erf(x)


@_device
def log1p(x):
    return math.log1p(x)


@_device
def expm1(x):
    return math.expm1(x)


@_device
def remainder(a, b):
    # Python's % (and torch.remainder): the result takes the divisor's sign.
    return a % b


@_device
def fmod(a, b):
    # C's fmod for integers: the result takes the dividend's sign.
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return r


@_device
def ffmod(a, b):
    # Floats: C's fmod (libdevice's), as the eager np.fmod.
    return math.fmod(a, b)

"""backends.cuda.scalar: the scalar functions lowering templates name, for CUDA kernels.

Room: compiler. The helpers of ``backends.scalar_math`` as CUDA device functions
(inlined), and the three whose CUDA bodies differ from the CPU's. The transcendentals are
CUDA's own: Numba lowers ``math.*`` to libdevice (``__nv_exp``...), which is within 1-2
ulp, as the CPU's vector math is; porting ``vmath_ir``'s polynomials would not be faster
on a GPU, where these kernels are memory-bound. Each function keeps the CPU helper's
special-value rule (NaN passes clamp, relu(-0) is -0, sign(NaN) is 0...), and every
name of ``backends.cpu.scalar.HELPERS`` is defined here (tests/compiler/backends/cuda checks it).
"""
from __future__ import annotations

import math

from numba import cuda

from numgrad.compiler.backends import scalar_math as _shared

_device = cuda.jit(device=True, inline="always")


(exp, log, tanh, sin, cos, erf, log1p, expm1, sigmoid, relu, sign, clamp, clamp_min, clamp_max,
 maximum, minimum, power, remainder, fmod, hypot) = (_device(f) for f in _shared.SHARED)


@_device
def sqrt(x):
    return math.sqrt(x)


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
def ffmod(a, b):
    # Floats: C's fmod (libdevice's), as the eager np.fmod.
    return math.fmod(a, b)

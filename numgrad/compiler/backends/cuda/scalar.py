"""backends.cuda.scalar: the scalar functions lowering templates name, for CUDA kernels.

Room: compiler. The helpers of ``backends.scalar_math`` as CUDA device functions
(inlined), and the three whose CUDA bodies differ from the CPU's. The transcendentals are
CUDA's own: Numba lowers ``math.*`` to libdevice (``__nv_exp``...), which is within 1-2
ulp, as the CPU's vector math is (under Numba's simulator, NumPy's, for IEEE results);
porting ``llvm.vmath``'s polynomials would not be faster on a GPU, where these kernels are
memory-bound. Each function keeps the CPU helper's special-value rule (NaN passes clamp,
relu(-0) is -0, sign(NaN) is 0...), and every name of ``backends.cpu.scalar.HELPERS`` is
defined here (tests/compiler/backends/cuda checks it).
"""
from __future__ import annotations

import math
import types

import numpy as np
from numba import cuda

from numgrad.compiler.backends import scalar_math as _shared
from numgrad.cuda import device as _cuda_device

_device = cuda.jit(device=True, inline="always")


def _ieee(ufunc):
    def f(*args):
        with np.errstate(all="ignore"):
            return ufunc(*args)
    f.__name__ = ufunc.__name__
    return f


# ``math``'s functions with IEEE results, for Numba's simulator. It runs kernels as
# Python on NumPy scalars, where ``math.exp(1000.0)`` raises OverflowError and
# ``math.log(0.0)`` or ``math.sin(inf)`` ValueError; on a GPU libdevice returns inf, -inf
# and NaN, as eager mode does. NumPy's ufuncs give those (and keep float32 in float32).
_IEEE_MATH = types.SimpleNamespace(
    **{u.__name__: _ieee(u) for u in (np.exp, np.log, np.tanh, np.sin, np.cos, np.log1p,
                                      np.expm1, np.sqrt, np.fmod, np.hypot)},
    erf=math.erf)  # (total: erf(+-inf) is +-1, erf(NaN) NaN)


def _on_ieee_math(f):
    """``f`` (a ``scalar_math`` helper) with ``math`` read as ``_IEEE_MATH``."""
    g = types.FunctionType(f.__code__, {**f.__globals__, "math": _IEEE_MATH}, f.__name__,
                           f.__defaults__, f.__closure__)
    g.__qualname__, g.__doc__ = f.__qualname__, f.__doc__
    return g


# What the helpers call for math: libdevice on a GPU, IEEE NumPy under the simulator.
if _cuda_device.simulated():
    _math, _helpers = _IEEE_MATH, tuple(_on_ieee_math(f) for f in _shared.SHARED)
else:
    _math, _helpers = math, _shared.SHARED
(exp, log, tanh, sin, cos, erf, log1p, expm1, sigmoid, relu, sign, clamp, clamp_min, clamp_max,
 maximum, minimum, power, remainder, fmod, hypot) = (_device(f) for f in _helpers)


@_device
def sqrt(x):
    return _math.sqrt(x)


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
    return _math.fmod(a, b)

"""ops.scalar_helpers: the scalar functions the registry's lowerings call, as ``Helper`` rows.

Room: ops. Imports ``math`` and NumPy only. A lowering template says ``exp({0})`` or
``clamp_min({0}, {1})``; the row that says it lists the helpers it calls
(``Primitive.helpers``), and each backend builds its kernels' namespace from those rows:
``backends.cpu.scalar`` compiles them with ``numba.njit``, ``backends.cuda.scalar`` as
CUDA device functions (both inlined). ``body`` reads the same in both; ``cpu``/``cuda`` are
the few whose bodies differ per target. Each keeps eager mode's special-value rule (NaN
passes clamp, relu(-0) is -0, sign(NaN) is 0...). ``llvm`` says how the hand-written LLVM
loop body (``backends.cpu.llvm.body``) spells it: its IR, llvm.vmath's polynomial, or, on
purpose, not at all (``"numba"``: such a body stays a Numba loop).
"""
from __future__ import annotations

import math

import numpy as np

from numgrad.ops.registry import Helper


# libm (CPU) or libdevice (CUDA, ``__nv_exp``...), both within 1-2 ulp.
def _exp(x):
    return math.exp(x)


def _log(x):
    return math.log(x)


def _tanh(x):
    return math.tanh(x)


def _sin(x):
    return math.sin(x)


def _cos(x):
    return math.cos(x)


def _erf(x):
    return math.erf(x)


def _log1p(x):
    return math.log1p(x)


def _expm1(x):
    return math.expm1(x)


def _sigmoid(x):
    # Split by sign so exp never overflows, as the eager impl does.
    # (No `+ x * 0`: at +-inf that is NaN, where sigmoid is 1 and 0.)
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


# relu and sign take their zero/one from the emitter (typed literals): `x * 0` kept the
# type but is NaN at +-inf, which made relu(-inf) and the gradient of abs at inf NaN.
def _relu(x, zero):
    # PyTorch's `x < 0 ? 0 : x`: relu(-0) is -0, NaN passes.
    return zero if x < 0 else x


def _sign(x, zero, one):
    # PyTorch's sign: +0 at +-0 and at NaN.
    if x > 0:
        return one
    if x < 0:
        return -one
    return zero


def _clamp(x, lo, hi):
    # torch.clamp: a NaN in x passes through, and a NaN bound makes every element NaN (the
    # bounds are literals, so the `!=` self-tests fold away for a number bound).
    y = lo if x < lo or lo != lo else x
    return hi if y > hi or hi != hi else y


def _clamp_min(x, lo):
    return lo if x < lo or lo != lo else x


def _clamp_max(x, hi):
    return hi if x > hi or hi != hi else x


def _maximum(a, b):
    # np.maximum's rule (the eager impl): NaN wins, and of two equal values (-0, +0) the
    # second, as torch's vectorised loop also gives.
    return a if (a > b or a != a) else b


def _minimum(a, b):
    return a if (a < b or a != a) else b


def _power(a, b):
    return a ** b


def _remainder(a, b):
    # Python's % (and torch.remainder): the result takes the divisor's sign.
    return a % b


def _fmod(a, b):
    # C's fmod (and torch.fmod) for integers: the result takes the dividend's sign.
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return r


def _hypot(a, b):
    # C's hypot, as np.hypot: no overflow in the squares, inf wins over NaN.
    return math.hypot(a, b)


def _sqrt_cpu(x):
    return np.sqrt(x)


def _sqrt_cuda(x):
    return math.sqrt(x)


def _ipower_cpu(a, b):
    # Integer powers as PyTorch computes them: negative exponents give 1 for 1, +-1
    # for -1, 0 otherwise (the eager impl does the same on NumPy).
    if b >= 0:
        return a ** b
    if a == 1:
        return a
    if a == -1:
        return a if b % 2 else -a
    return a * 0


def _ipower_cuda(a, b):
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


def _ffmod_cpu(a, b):
    # Floats: C's own fmod, as the eager np.fmod (fmod(-0., y) is -0, fmod(x, inf) is x;
    # Python's %, which Numba's is, gives +0 and inf there, and rounds when it adds b).
    return np.fmod(a, b)


def _ffmod_cuda(a, b):
    # Floats: C's fmod (libdevice's), as the eager np.fmod.
    return math.fmod(a, b)


def _h(name, body=None, **kw):
    return Helper(name, body, **kw)


# The llvm.vmath transcendentals (vector polynomials in long LLVM bodies).
exp, log, tanh, sin, cos, sigmoid, expm1 = (
    _h(n, f, llvm="vmath") for n, f in (("exp", _exp), ("log", _log), ("tanh", _tanh),
                                        ("sin", _sin), ("cos", _cos), ("sigmoid", _sigmoid),
                                        ("expm1", _expm1)))
relu = _h("relu", _relu, llvm="ir")
sqrt = _h("sqrt", cpu=_sqrt_cpu, cuda=_sqrt_cuda, llvm="ir")
abs = _h("abs", llvm="ir")  # noqa: A001  (Python's builtin, which Numba compiles)
# No IR version yet: a long body that calls one of these stays a Numba loop, on purpose.
erf, log1p, sign, clamp, clamp_min, clamp_max, maximum, minimum, power, remainder, fmod, \
    hypot = (_h(n, f, llvm="numba") for n, f in (
        ("erf", _erf), ("log1p", _log1p), ("sign", _sign), ("clamp", _clamp),
        ("clamp_min", _clamp_min), ("clamp_max", _clamp_max), ("maximum", _maximum),
        ("minimum", _minimum), ("power", _power), ("remainder", _remainder), ("fmod", _fmod),
        ("hypot", _hypot)))
ipower = _h("ipower", cpu=_ipower_cpu, cuda=_ipower_cuda, llvm="numba")
ffmod = _h("ffmod", cpu=_ffmod_cpu, cuda=_ffmod_cuda, llvm="numba")


# The inverse and hyperbolic trigonometric family, base-2/10 logs and exp2 (ops.trig): libm
# (CPU) or libdevice (CUDA). Outside the domain they are NaN (asin(2)) or +-inf (atanh(1)),
# as NumPy's are eagerly; no IR version, so such a long loop body stays a Numba loop.
def _asin(x):
    return math.asin(x)


def _acos(x):
    return math.acos(x)


def _atan(x):
    return math.atan(x)


def _sinh(x):
    return math.sinh(x)


def _cosh(x):
    return math.cosh(x)


def _asinh(x):
    return math.asinh(x)


def _acosh(x):
    return math.acosh(x)


def _atanh(x):
    return math.atanh(x)


def _log2(x):
    return math.log2(x)


def _log10(x):
    return math.log10(x)


def _exp2(x):
    # C's exp2 is not in Python's math (before 3.11) nor Numba's; pow(2, x) is exact at
    # the integers and within an ulp elsewhere.
    return math.pow(2.0, x)


def _atan2(y, x):
    return math.atan2(y, x)


asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log2, log10, exp2, atan2 = (
    _h(n, f, llvm="numba") for n, f in (
        ("asin", _asin), ("acos", _acos), ("atan", _atan), ("sinh", _sinh), ("cosh", _cosh),
        ("asinh", _asinh), ("acosh", _acosh), ("atanh", _atanh), ("log2", _log2),
        ("log10", _log10), ("exp2", _exp2), ("atan2", _atan2)))


# Shifts and floor division of the small integer dtypes' family (ops.bitwise,
# ops.floor_division). Here, not beside their rows: the CPU kernel cache keys on this
# file's text, so a change to a body reaches kernels already on disk. Kernels compute in
# int64 and cast back to the dtype (``Spell.wrapped``), so only counts past int64's width
# need their own rule: they give 0 (-1 for a negative value shifted right), as PyTorch's.
def _lshift(a, b):
    if b < 0 or b > 63:
        return a * 0
    return a << b


def _rshift(a, b):
    return a >> (b if 0 <= b < 63 else 63)  # a negative count shifts everything out too


def _floordiv_cpu(a, b):
    return np.floor_divide(a, b)  # Numba's: NumPy's rounding, and 0 for an integer / 0


def _floordiv_cuda(a, b):
    return a // b


def _ffloordiv(a, b):
    # Floats: PyTorch's div_floor (as NumPy's floor_divide eagerly): the quotient of the
    # exact remainder, so x // -inf is -1 for a positive x and inf // 2 is NaN, where
    # Numba's np.floor_divide gives -0 and inf. One body for the CPU and CUDA: math.floor is
    # an integer in Numba, so a finite div's floor is div less its fraction (C's fmod).
    if b == 0:
        return a / b
    mod = math.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1
    if div == 0:
        return math.copysign(div, a / b)
    if math.isinf(div) or math.isnan(div):
        return div
    fl = div - math.fmod(div, 1.0)
    if fl > div:
        fl -= 1
    if div - fl > 0.5:
        fl += 1
    return fl


lshift = _h("lshift", _lshift, llvm="numba")
rshift = _h("rshift", _rshift, llvm="numba")
floordiv = _h("floordiv", cpu=_floordiv_cpu, cuda=_floordiv_cuda, llvm="numba")
ffloordiv = _h("ffloordiv", _ffloordiv, llvm="numba")

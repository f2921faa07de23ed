"""codegen.scalar: the scalar functions that lowering templates name, for Numba kernels.

Room: compiler. Templates in the op registry say ``exp({0})``, ``relu({0})``...;
a generated kernel imports its helpers from here. Transcendentals come from
``vmath`` (vectorisable polynomials) so fused loops stay SIMD; the rest are
one-liners that LLVM inlines. Every helper keeps the argument's float width.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

try:  # the vectorisable implementations; plain libm if they fail to load
    from numgrad.compiler.codegen.vmath import exp, log, tanh, sigmoid, sin, cos  # noqa: F401
except Exception:  # pragma: no cover - only when vmath cannot build on this LLVM
    @njit(inline="always")
    def exp(x):
        return math.exp(x)

    @njit(inline="always")
    def log(x):
        return math.log(x)

    @njit(inline="always")
    def tanh(x):
        return math.tanh(x)

    @njit(inline="always")
    def sin(x):
        return math.sin(x)

    @njit(inline="always")
    def cos(x):
        return math.cos(x)

    @njit(inline="always")
    def sigmoid(x):
        return 1.0 / (1.0 + math.exp(-x))


@njit(inline="always")
def sqrt(x):
    return np.sqrt(x)


@njit(inline="always")
def relu(x):
    return x if x > 0 else x * 0


@njit(inline="always")
def sign(x):
    return (x > 0) - (x < 0) + x * 0


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
    # NaN-propagating, like np.maximum.
    return a if (a > b or a != a) else b


@njit(inline="always")
def minimum(a, b):
    return a if (a < b or a != a) else b


@njit(inline="always")
def power(a, b):
    return a ** b


HELPERS = ["exp", "log", "tanh", "sigmoid", "sin", "cos", "sqrt", "relu", "sign", "clamp",
           "clamp_min", "clamp_max", "maximum", "minimum", "power"]

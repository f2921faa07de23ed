"""backends.cuda.scalar: the scalar functions lowering templates name, for CUDA kernels.

Room: compiler. The registry's scalar helpers (``ops.registry.Helper`` rows, their bodies
in ``ops.scalar_helpers`` or beside the row) as CUDA device functions (inlined). The
transcendentals are CUDA's own: Numba lowers ``math.*`` to libdevice (``__nv_exp``...),
which is within 1-2 ulp, as the CPU's vector math is (under Numba's simulator, NumPy's, for
IEEE results); porting ``llvm.vmath``'s polynomials would not be faster on a GPU, where
these kernels are memory-bound. Each function keeps the CPU helper's special-value rule
(NaN passes clamp, relu(-0) is -0, sign(NaN) is 0...); every helper the CPU backend
compiles is defined here too (tests/compiler/backends/cuda checks it).
"""
from __future__ import annotations

import math
import types

import numpy as np
from numba import cuda

from numgrad.ops import registry as _registry
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
class _IEEEMath(types.SimpleNamespace):
    def __getattr__(self, name):  # the rest of ``math`` (a helper a later row brings)
        return getattr(math, name)


_IEEE_MATH = _IEEEMath(
    **{u.__name__: _ieee(u) for u in (np.exp, np.log, np.tanh, np.sin, np.cos, np.log1p,
                                      np.expm1, np.sqrt, np.fmod, np.hypot)},
    erf=math.erf)  # (total: erf(+-inf) is +-1, erf(NaN) NaN)


def _on_ieee_math(f):
    """``f`` (a helper's body) with ``math`` read as ``_IEEE_MATH``."""
    g = types.FunctionType(f.__code__, {**f.__globals__, "math": _IEEE_MATH}, f.__name__,
                           f.__defaults__, f.__closure__)
    g.__qualname__, g.__doc__ = f.__qualname__, f.__doc__
    return g


# One device function per ``ops.registry.Helper`` row some row's lowering calls (its
# ``cuda`` body, else its shared ``body``), generated from the registry: on a GPU they call
# libdevice through ``math``, under the simulator IEEE NumPy. A row registered later
# (``ng.ops.register``) adds its helpers here at once.
_SIMULATED = _cuda_device.simulated()
_BUILT = {}


def _follow(prim, added):
    for h in prim.helpers:
        if added and h.name not in _BUILT:
            body = h.cuda or h.body
            if body is not None:  # (None: a Python builtin Numba compiles, such as abs)
                globals()[h.name] = _BUILT[h.name] = _device(
                    _on_ieee_math(body) if _SIMULATED else body)
        elif not added and h.name not in _registry.HELPERS and h.name in _BUILT:
            del _BUILT[h.name]
            globals().pop(h.name, None)


_registry.subscribe(_follow)

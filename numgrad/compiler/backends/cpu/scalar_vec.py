"""backends.cpu.scalar_vec: ``scalar`` with vectorisable transcendentals from ``llvm.vmath``.

Room: compiler. A kernel that imports from here keeps its loops SIMD through
exp/log/tanh/sigmoid/sin/cos (about 1-2 ns per float64 element instead of 4-18 ns
of scalar libm). ``llvm.vmath`` emits each function as LLVM IR (``vmath_numba`` makes
them callable from Numba), so a call site costs milliseconds of compile time, like
``math.exp``.
"""
from numgrad.compiler.backends.cpu import scalar as _scalar
from numgrad.compiler.backends.cpu.scalar import *  # noqa: F401,F403
from numgrad.compiler.backends.cpu.llvm import vmath_numba as _vmath_numba
from numgrad.compiler.backends.cpu.llvm.vmath_numba import (  # noqa: F401
    exp, log, tanh, sigmoid, sin, cos, sin_paired, cos_paired)
from numgrad.ops import registry as _registry


def _follow(prim, added):
    # A helper registered after import (``ng.ops.register``): scalar's, as for the others.
    for h in prim.helpers:
        if hasattr(_vmath_numba, h.name):
            continue
        if added and h.name in vars(_scalar):
            globals()[h.name] = getattr(_scalar, h.name)
        elif not added and h.name not in _registry.HELPERS:
            globals().pop(h.name, None)


_registry._LISTENERS.append(_follow)  # (after scalar's own: it reads what scalar built)

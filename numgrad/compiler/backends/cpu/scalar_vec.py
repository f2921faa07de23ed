"""backends.cpu.scalar_vec: ``scalar`` with vectorisable transcendentals from ``llvm.vmath``.

Room: compiler. A kernel that imports from here keeps its loops SIMD through
exp/log/tanh/sigmoid/sin/cos (about 1-2 ns per float64 element instead of 4-18 ns
of scalar libm). ``llvm.vmath`` emits each function as LLVM IR (``vmath_numba`` makes
them callable from Numba), so a call site costs milliseconds of compile time, like
``math.exp``.
"""
from numgrad.compiler.backends.cpu.scalar import *  # noqa: F401,F403
from numgrad.compiler.backends.cpu.llvm.vmath_numba import (  # noqa: F401
    exp, log, tanh, sigmoid, sin, cos, sin_paired, cos_paired)

"""backends.cpu.scalar: the scalar functions that lowering templates name, for Numba kernels.

Room: compiler. Templates in the op registry say ``exp({0})``, ``relu({0})``...;
a generated kernel imports its helpers from here (or from ``scalar_vec``,
which swaps in vectorisable transcendentals). Every helper is inlined.
"""
from __future__ import annotations

import re

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from numgrad.compiler.backends import scalar_math as _shared
from numgrad.compiler.backends.cpu.accumulate_ir import radd  # noqa: F401 (kernels call it)
from numgrad.compiler.backends.cpu.arrays_ir import alloc, full, view  # noqa: F401 (kernels)

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


# The helpers both backends share (plain libm transcendentals, used when
# ``ng.jit(vector_math=False)``; ``scalar_vec`` replaces them with ``llvm.vmath``'s
# vectorisable polynomials, the default).
_inline = njit(inline="always")
(exp, log, tanh, sin, cos, erf, log1p, expm1, sigmoid, relu, sign, clamp, clamp_min, clamp_max,
 maximum, minimum, power, remainder, fmod, hypot) = (_inline(f) for f in _shared.SHARED)
sin_paired, cos_paired = sin, cos  # scalar_vec's are inlined for sin/cos pairs


@_inline
def sqrt(x):
    return np.sqrt(x)


@_inline
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


@_inline
def ffmod(a, b):
    # Floats: C's own fmod, as the eager np.fmod (fmod(-0., y) is -0, fmod(x, inf) is x;
    # Python's %, which Numba's is, gives +0 and inf there, and rounds when it adds b).
    return np.fmod(a, b)


HELPERS = [f.__name__ for f in _shared.SHARED] + ["sqrt", "ipower", "ffmod"]

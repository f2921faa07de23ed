"""backends.cpu.scalar: the scalar functions that lowering templates name, for Numba kernels.

Room: compiler. Templates in the op registry say ``exp({0})``, ``relu({0})``...;
a generated kernel imports its helpers from here (or from ``scalar_vec``,
which swaps in vectorisable transcendentals). Every helper is inlined.
"""
from __future__ import annotations

import re

import numpy as np  # noqa: F401  (kernels import this namespace)
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from numgrad.ops import registry as _registry
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


# The scalar helpers, one per ``ops.registry.Helper`` row that some row's lowering calls,
# generated from the registry (plain libm transcendentals, used when
# ``ng.jit(vector_math=False)``; ``scalar_vec`` replaces them with ``llvm.vmath``'s
# vectorisable polynomials, the default). A row registered later (``ng.ops.register``) adds
# its helpers here at once; kernel modules import this namespace when they load.
_inline = njit(inline="always")
HELPERS = _registry.HELPERS  # name -> Helper: every name a lowering may call


def _follow(prim, added):
    for h in prim.helpers:
        if added and h.name not in _BUILT:
            body = h.cpu or h.body
            if body is not None:  # (None: a Python builtin Numba compiles, such as abs)
                globals()[h.name] = _BUILT[h.name] = _inline(body)
        elif not added and h.name not in HELPERS and h.name in _BUILT:
            del _BUILT[h.name]
            globals().pop(h.name, None)


_BUILT = {}
_registry.subscribe(_follow)
sin_paired, cos_paired = _BUILT["sin"], _BUILT["cos"]  # scalar_vec's are inlined for pairs

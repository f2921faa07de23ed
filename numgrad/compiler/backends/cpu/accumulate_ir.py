"""backends.cpu.accumulate_ir: ``radd(acc, x)``, the one addition a kernel may reassociate.

Room: compiler. A sum in a loop is a serial chain of float additions unless LLVM may
reorder them (the ``reassoc`` fast-math flag); with it the loop vectoriser keeps one
partial sum per SIMD lane, as every parallel sum does (NumPy's pairwise sum, torch, XLA).
Numba's ``fastmath=`` puts its flags on every float instruction of a function, and there
``reassoc`` also lets LLVM fold ``x * 1e300 * 1e-300`` to ``x`` (eager mode overflows to
inf), so kernels are compiled without it and accumulate through ``radd``: a float ``fadd``
carrying ``reassoc`` alone (Numba adds its flags only to instructions that have none).
Integers add plainly (their sums are exact in any order, up to wrap-around).
"""
from __future__ import annotations

from numba import types
from numba.extending import intrinsic


_NUMERIC = (types.Float, types.Integer, types.Boolean)


@intrinsic
def radd(typingctx, acc, x):
    """``acc + x`` in ``acc``'s type, reassociable (for reduction accumulators only).
    ``x`` is cast to that type first, as ``acc += x`` would (a count of bools is int64)."""
    if not isinstance(x, _NUMERIC):
        return None
    if isinstance(acc, types.Float):
        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[1], sig.args[1], sig.return_type)
            return builder.fadd(args[0], v, flags=("reassoc",))
        return acc(acc, x), codegen
    if isinstance(acc, types.Integer) and not isinstance(x, types.Float):
        def codegen_int(context, builder, sig, args):
            v = context.cast(builder, args[1], sig.args[1], sig.return_type)
            return builder.add(args[0], v)
        return acc(acc, x), codegen_int
    return None

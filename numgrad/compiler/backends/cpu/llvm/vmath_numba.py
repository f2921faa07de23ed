"""backends.cpu.llvm.vmath_numba: ``llvm.vmath``'s bodies as functions Numba kernels can call.

Room: compiler. Each of exp, expm1, log, tanh, sigmoid, sin, cos is a plain Python
function with Numba typing and lowering registered (like ``math.exp``), so a call site
costs one typing-template lookup and one ``call`` instruction. The type decides at
typing time: float32 in -> float32 out (float32 arithmetic for exp/expm1/log/tanh/
sigmoid; sin/cos reduce in float64 and round once), float64, integers and booleans ->
float64. Called from Python they run a small compiled wrapper (compiled on first use),
so results are bit-identical. Kept apart from ``llvm.vmath`` so that the IR bodies import
no Numba: ``backends.cpu.llvm.kernel`` builds kernels from them without it.
"""
from numba import types
from numba.extending import lower_builtin, type_callable

from numgrad.compiler.backends.cpu.llvm import vmath as _vm

_NUMERIC = (types.Float, types.Integer, types.Boolean)


def _result_type(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return types.float32
    if isinstance(x, _NUMERIC):
        return types.float64
    return None


_PY_KERNELS = {}


def _python_call(name, x):
    k = _PY_KERNELS.get(name)
    if k is None:
        from numba import njit

        fn = globals()[name]
        k = _PY_KERNELS[name] = njit(lambda v: fn(v))
    return k(x)


def _make_public(name, doc, inline=False):
    """The public function `name` (or, inline=True, `name`_paired: every call site gets
    the inlined body, see sin_paired)."""
    public = name + "_paired" if inline else name

    def fn(x):
        return _python_call(name, x)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = doc
    fn.__module__ = __name__

    @type_callable(fn)
    def _typer(context):
        def typer(x):
            return _result_type(x)

        return typer

    def _lower(context, builder, sig, args):
        rt = sig.return_type
        val = context.cast(builder, args[0], sig.args[0], rt)
        if inline:
            f = _vm._get_inline(builder.module, name, rt.bitwidth)
        else:
            f = _vm._get_function(builder.module, name, rt.bitwidth)
        _vm._prefer_wide_vectors(builder.function)
        return builder.call(f, [val])

    for t in _NUMERIC:
        lower_builtin(fn, t)(_lower)
    return fn


exp = _make_public("exp", "e**x; within 1 ulp.  Overflow -> inf, underflow -> 0 (gradually).")
expm1 = _make_public("expm1", "e**x - 1 without cancellation near 0.")
log = _make_public("log", "Natural log; log(0) = -inf, log(x<0) = nan, subnormals handled.")
tanh = _make_public("tanh", "Hyperbolic tangent; saturates to +-1 exactly.")
sigmoid = _make_public("sigmoid", "Logistic 1/(1+e**-x), accurate in both tails.")
sin = _make_public("sin", "sin(x); |x| > 2**40 goes to libm (loop stays vectorised).")
cos = _make_public("cos", "cos(x); |x| > 2**40 goes to libm (loop stays vectorised).")
# sin and cos of one argument, in one loop (a forward sin and its backward cos): both
# bodies inlined, LLVM merges their common work (the range reduction and both
# polynomials; only the quadrant select differs), so the pair costs about one call.
# Outlined calls would each do all of it. The emitter picks these for such pairs.
sin_paired = _make_public("sin", "sin(x), body always inlined (for sin/cos pairs).", True)
cos_paired = _make_public("cos", "cos(x), body always inlined (for sin/cos pairs).", True)

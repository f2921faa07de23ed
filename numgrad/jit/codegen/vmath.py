"""Vectorisable scalar math for generated ``numba.njit`` loops.

Why this module exists
----------------------
Inside a Numba loop, ``math.exp``/``math.sin``/``math.tanh``... become scalar
libm calls (about 6-18 ns per float64 element here), even when the loop is
compiled with ``fastmath`` and LLVM vectorises everything around them:

* llvmlite's wheel is built without Intel SVML, so the ``llvm.exp.v4f64`` that
  the loop vectoriser emits is expanded back into one libm call per lane;
* glibc's libmvec is on the machine and LLVM knows its names
  (``-vector-library=LIBMVEC-X86``), but through llvmlite the mapping never
  applied, so that route was dropped.

So the functions are written out here in plain arithmetic that LLVM can
vectorise itself: Cody-Waite range reduction (with an exact fma step), a short
polynomial whose coefficients were fitted for this module (near-minimax
Chebyshev fits done with mpmath at 200 bits, then rounded), and a power-of-two
scale built by bit-casting an integer exponent into a float (the
``_pow2``/``_ldexp`` intrinsics).  Edge cases are selects (clamps before the
reduction, bit tests on the input afterwards), never branches around the
computation, so a loop calling them if-converts and vectorises.  Measured
here: exp 1.5 ns/element against 4-7 ns for ``math.exp``, sin 2 ns against
14 ns (``bench/vmath_micro.py``).

Accuracy (``tests/jit/test_vmath.py``): exp, log, sin, cos, pow within 1 ulp
of the exact result, tanh and expm1 within ~1.2, sigmoid within 1.6, for
float64 and float32, so float64 gradient checks keep passing.

Huge arguments of ``sin``/``cos`` (|x| > 2**40) are beyond the Cody-Waite
reduction; they go to libm through a ``noinline`` helper carrying a
``vector-function-abi-variant`` attribute.  A plain call would stop the loop
vectoriser, and Numba's ``math.sin`` (``llvm.sin``) would be speculated and
called for every lane; with the attribute LLVM calls the helper's vector
variant once per vector, and that returns at once unless a lane is huge.

How callers get it
------------------
* Every public function is ``numba.njit(inline="always")`` and dispatches on
  the argument type at compile time: float32 in gives float32 out (float32
  polynomials for exp/expm1/log/tanh/sigmoid; sin/cos/pow compute in float64
  and round once), float64 and integers give float64.
* The body is compiled once per process and type as an LLVM ``alwaysinline``
  subroutine with its own flags (``contract`` only, ``error_model="numpy"``),
  so LLVM inlines it into the caller's loop before vectorising, a kernel that
  uses it compiles in ~0.05 s more instead of ~0.5 s of Numba IR inlining,
  and the caller's ``fastmath`` flags (even ``fastmath=True``) do not reach
  the error-free sums and NaN/inf selects inside.
"""

import numpy as np
from llvmlite import ir
from llvmlite.ir.values import FunctionAttributes
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable

__all__ = ["exp", "expm1", "log", "tanh", "sigmoid", "sin", "cos", "pow", "TEMPLATES"]

# op name -> name of the function in this module (for code generators).
TEMPLATES = {
    "exp": "exp",
    "expm1": "expm1",
    "log": "log",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "sin": "sin",
    "cos": "cos",
    "pow": "pow",  # binary: pow(x, y)
}

# ---------------------------------------------------------------------------
# Intrinsics: the few LLVM instructions Numba does not expose directly.
# ---------------------------------------------------------------------------


def _float_lltype(context, ty):
    return context.get_value_type(ty)


@intrinsic
def _fma(typingctx, a, b, c):
    """llvm.fma: one rounding for a*b+c.  Used where exactness matters
    (range reduction, error terms), so it must not depend on whether the
    caller allowed FMA contraction."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None
    sig = a(a, a, a)

    def codegen(context, builder, signature, args):
        lt = _float_lltype(context, signature.return_type)
        fn = builder.module.declare_intrinsic(
            "llvm.fma", [lt], ir.FunctionType(lt, [lt, lt, lt]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _rint(typingctx, a):
    """llvm.rint (round half to even).  Vectorises to vroundpd; unlike the
    1.5*2**52 "magic number" trick it survives any fastmath flags."""
    if not isinstance(a, types.Float):
        return None
    sig = a(a)

    def codegen(context, builder, signature, args):
        lt = _float_lltype(context, signature.return_type)
        fn = builder.module.declare_intrinsic(
            "llvm.rint", [lt], ir.FunctionType(lt, [lt]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _div(typingctx, a, b):
    """Plain IEEE fdiv.  Numba's ``/`` (with the default error_model="python")
    tests for a zero divisor and raises, and that early exit alone stops the
    loop vectoriser; here x/0 is +-inf or nan as IEEE says."""
    if not (isinstance(a, types.Float) and a == b):
        return None
    sig = a(a, b)

    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])

    return sig, codegen


def _int_for(context, fty):
    return ir.IntType(64 if fty.bitwidth == 64 else 32)


def _fmt(fty):
    """(mantissa bits, exponent bias) of a float type."""
    return (52, 1023) if fty.bitwidth == 64 else (23, 127)


# The integer work below is done inside intrinsics, in the float's own width:
# Numba's typing would widen int32 arithmetic to int64, which both breaks the
# float32 bit tricks and halves the vector width of a float32 loop.


@intrinsic
def _pow2(typingctx, kf):
    """2**k for an integer-valued float k in the normal exponent range:
    (k + bias) << mantissa_bits, bit-cast to float."""
    if not isinstance(kf, types.Float):
        return None
    sig = kf(kf)

    def codegen(context, builder, signature, args):
        ft = context.get_value_type(kf)
        it = _int_for(context, kf)
        mb, bias = _fmt(kf)
        k = builder.fptosi(args[0], it)
        e = builder.shl(builder.add(k, ir.Constant(it, bias)), ir.Constant(it, mb))
        return builder.bitcast(e, ft)

    return sig, codegen


@intrinsic
def _ldexp(typingctx, y, kf):
    """y * 2**k for integer-valued float k, |k| <= 2*max_exponent, y ~ 1.
    Two factors 2**k1 * 2**k2 (k1 = k >> 1) keep both in the normal range; y*2**k1
    is exact and the second product rounds once, so overflow gives inf and
    underflow is gradual and correctly rounded."""
    if not (isinstance(y, types.Float) and y == kf):
        return None
    sig = y(y, kf)

    def codegen(context, builder, signature, args):
        ft = context.get_value_type(y)
        it = _int_for(context, y)
        mb, bias = _fmt(y)
        k = builder.fptosi(args[1], it)
        k1 = builder.ashr(k, ir.Constant(it, 1))
        k2 = builder.sub(k, k1)
        s1 = builder.bitcast(builder.shl(builder.add(k1, ir.Constant(it, bias)),
                                         ir.Constant(it, mb)), ft)
        s2 = builder.bitcast(builder.shl(builder.add(k2, ir.Constant(it, bias)),
                                         ir.Constant(it, mb)), ft)
        return builder.fmul(builder.fmul(args[0], s1), s2)

    return sig, codegen


@intrinsic
def _isnan(typingctx, x):
    """NaN test on the bits (|bits| > bits(inf)): immune to whatever the
    caller's fastmath flags let LLVM assume about x != x."""
    if not isinstance(x, types.Float):
        return None
    sig = types.boolean(x)

    def codegen(context, builder, signature, args):
        it = _int_for(context, x)
        mb, bias = _fmt(x)
        ax = builder.and_(builder.bitcast(args[0], it),
                          ir.Constant(it, (1 << (it.width - 1)) - 1))
        inf = ir.Constant(it, (2 * bias + 1) << mb)
        return builder.icmp_signed(">", ax, inf)

    return sig, codegen


@intrinsic
def _signbit(typingctx, x):
    """Sign bit set (true for -0.0 and negative NaNs too)."""
    if not isinstance(x, types.Float):
        return None
    sig = types.boolean(x)

    def codegen(context, builder, signature, args):
        it = _int_for(context, x)
        return builder.icmp_signed("<", builder.bitcast(args[0], it), ir.Constant(it, 0))

    return sig, codegen


@intrinsic
def _log_split(typingctx, x):
    """x positive normal -> (m, k) with x = m * 2**k, m in [sqrt(2)/2, sqrt(2)),
    k returned as a float.  Subtracting bits(sqrt(2)/2) first makes the
    exponent field roll over exactly at sqrt(2)."""
    if not isinstance(x, types.Float):
        return None
    sig = types.UniTuple(x, 2)(x)

    def codegen(context, builder, signature, args):
        ft = context.get_value_type(x)
        it = _int_for(context, x)
        mb, bias = _fmt(x)
        sqrth = np.float64(np.sqrt(0.5)) if x.bitwidth == 64 else np.float32(np.sqrt(0.5))
        off = ir.Constant(it, int(sqrth.view(np.int64 if x.bitwidth == 64 else np.int32)))
        ix = builder.bitcast(args[0], it)
        tmp = builder.sub(ix, off)
        k = builder.ashr(tmp, ir.Constant(it, mb))
        emask = ir.Constant(it, -(1 << mb))
        m = builder.bitcast(builder.sub(ix, builder.and_(tmp, emask)), ft)
        kf = builder.sitofp(k, ft)
        return context.make_tuple(builder, signature.return_type, (m, kf))

    return sig, codegen


# --- slow path for huge sin/cos arguments -----------------------------------
#
# A plain libm call inside the loop would stop the vectoriser ("call
# instruction cannot be vectorized"), and Numba's math.sin is llvm.sin, which
# LLVM may speculate and then call for every lane (~14 ns/element).  Instead
# the slow path is a noinline function marked memory(none)/nounwind with
# "vector-function-abi-variant" entries for 2..16 lanes.  The loop vectoriser
# then calls the vector variant once per vector; that variant returns at once
# unless some lane is huge.  Both the scalar and the vector variants return
# libm(x) for |x| > threshold and 0.0 otherwise, so they agree exactly.

_SLOW_LANES = (2, 4, 8, 16)


class _AttrsWithStrings(FunctionAttributes):
    """llvmlite only knows enum attributes; this adds "key"="value" ones."""

    extra = ()

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + list(self.extra)


def _slow_fn(module, libname, threshold):
    lt = ir.DoubleType()
    name = "numgrad_vmath_slow_%s_f64" % libname
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fnty = ir.FunctionType(lt, [lt])
    libfn = cgutils.get_or_insert_function(module, fnty, libname)
    fn = ir.Function(module, fnty, name)
    # weak_odr, not linkonce_odr: Numba optimises each module before linking
    # and would drop the (so far unreferenced) vector variants otherwise; the
    # vectoriser requires them to exist.
    fn.linkage = "weak_odr"
    attrs = _AttrsWithStrings(["noinline", "nounwind", "readnone"])
    attrs.extra = ['"vector-function-abi-variant"="%s"' % ",".join(
        "_ZGV_LLVM_N%dv_%s(%s_v%d)" % (n, name, name, n) for n in _SLOW_LANES)]
    fn.attributes = attrs
    thr = ir.Constant(lt, threshold)
    nthr = ir.Constant(lt, -threshold)
    zero = ir.Constant(lt, 0.0)

    entry = fn.append_basic_block("entry")
    slow = fn.append_basic_block("slow")
    done = fn.append_basic_block("fast")
    b = ir.IRBuilder(entry)
    x = fn.args[0]
    huge = b.or_(b.fcmp_ordered(">", x, thr), b.fcmp_ordered("<", x, nthr))
    b.cbranch(huge, slow, done)
    b = ir.IRBuilder(slow)
    b.ret(b.call(libfn, [x]))
    b = ir.IRBuilder(done)
    b.ret(zero)

    i32 = ir.IntType(32)
    for n in _SLOW_LANES:
        vt = ir.VectorType(lt, n)
        vf = ir.Function(module, ir.FunctionType(vt, [vt]), "%s_v%d" % (name, n))
        vf.linkage = "weak_odr"
        vf.attributes.add("noinline")
        vf.attributes.add("nounwind")
        entry = vf.append_basic_block("entry")
        slow = vf.append_basic_block("slow")
        done = vf.append_basic_block("fast")
        b = ir.IRBuilder(entry)
        v = vf.args[0]
        vthr = ir.Constant(vt, [thr] * n)
        vnthr = ir.Constant(vt, [nthr] * n)
        mask = b.or_(b.fcmp_ordered(">", v, vthr), b.fcmp_ordered("<", v, vnthr))
        anyh = b.icmp_unsigned("!=", b.bitcast(mask, ir.IntType(n)),
                               ir.Constant(ir.IntType(n), 0))
        b.cbranch(anyh, slow, done)
        b = ir.IRBuilder(done)
        b.ret(ir.Constant(vt, [zero] * n))
        b = ir.IRBuilder(slow)
        out = ir.Constant(vt, [zero] * n)
        for i in range(n):
            lane = b.extract_element(v, ir.Constant(i32, i))
            res = b.select(b.extract_element(mask, ir.Constant(i32, i)),
                           b.call(libfn, [lane]), zero)
            out = b.insert_element(out, res, ir.Constant(i32, i))
        b.ret(out)
    return fn


# Above this |x| the Cody-Waite reduction below is no longer trusted (it is
# exact enough up to ~2**44; 2**40 leaves margin); libm's Payne-Hanek takes
# over.
_SINCOS_HUGE = 2.0 ** 40


def _make_slow(libname):
    @intrinsic
    def _slow(typingctx, x):
        if x != types.float64:
            return None
        sig = types.float64(x)

        def codegen(context, builder, signature, args):
            fn = _slow_fn(builder.module, libname, _SINCOS_HUGE)
            return builder.call(fn, args)

        return sig, codegen

    return _slow


_slow_sin = _make_slow("sin")
_slow_cos = _make_slow("cos")

# ---------------------------------------------------------------------------
# exp / expm1
# ---------------------------------------------------------------------------
# e**x = 2**k * e**r,  k = rint(x/ln2),  r = x - k*ln2 in [-ln2/2, ln2/2].
# e**r = 1 + q,  q = r + r*r*P(r).  Keeping q separate (rather than 1+q) is
# what makes expm1, tanh and sigmoid accurate: they combine 2**k and q
# without first rounding 1+q.

_LOG2E = 1.4426950408889634
# ln2 split: _LN2HI has 32 significant bits, so k*_LN2HI is exact for every
# k we use; with the fma below x - k*_LN2HI is exact as well.
_LN2HI = 0.6931471803691238
_LN2LO = 1.9082149292705877e-10

# P(r) = (e**r - 1 - r) / r**2 on [-0.3466, 0.3466], degree 10.
# Fit error 2.6e-18 (after rounding the coefficients); times r**2 <= 0.12 that
# is < 0.01 ulp of the result.
_EP0 = 0.5
_EP1 = 0.1666666666666667
_EP2 = 0.04166666666666667
_EP3 = 0.008333333333326136
_EP4 = 0.0013888888888883748
_EP5 = 0.00019841269874820627
_EP6 = 2.4801587325547743e-05
_EP7 = 2.7557255400206422e-06
_EP8 = 2.75572736431103e-07
_EP9 = 2.5105217004720745e-08
_EP10 = 2.0914686968086876e-09


@register_jitable(inline="always")
def _exp_krt64_dd(x, xl):
    """x finite, |x| <= ~1100, |xl| <= 2**-40: e**(x + xl) = 2**k * (1 + r1 + t)
    with r1 exact and |t| < |r1|/2 (or r1 == 0).  Returns (k as float, r1, t)."""
    kf = _rint(x * _LOG2E)
    r1 = _fma(-kf, _LN2HI, x)  # exact: the result fits in 53 bits
    c = _fma(-kf, _LN2LO, xl)  # |c| < 2.1e-7
    r = r1 + c  # rounded; only used where its rounding error is damped
    p = _EP10
    p = p * r + _EP9
    p = p * r + _EP8
    p = p * r + _EP7
    p = p * r + _EP6
    p = p * r + _EP5
    p = p * r + _EP4
    p = p * r + _EP3
    p = p * r + _EP2
    p = p * r + _EP1
    p = p * r + _EP0
    # q = (r1 + c) + r*r*P(r), with the leading r1 + c never rounded on its
    # own: adding the exact r1 last saves ~0.5 ulp of q.
    return kf, r1, _fma(r * r, p, c)


@register_jitable(inline="always")
def _exp_krt64(x):
    return _exp_krt64_dd(x, 0.0)


@register_jitable(inline="always")
def _exp_kq64(x):
    """Returns (k as float, q) with e**x = 2**k * (1+q), |q| < 0.42."""
    kf, r1, t = _exp_krt64(x)
    return kf, r1 + t


@register_jitable(inline="always")
def _exp64(x):
    # Clamping is all the edge handling needed: exp(710) overflows to inf and
    # exp(-746) underflows to 0 through _ldexp itself, +-inf clamp to those.
    xc = x if x < 710.0 else 710.0
    xc = xc if xc > -746.0 else -746.0
    kf, q = _exp_kq64(xc)
    y = _ldexp(1.0 + q, kf)
    return x if _isnan(x) else y


@register_jitable(inline="always")
def _expm1_64(x):
    xc = x if x < 710.0 else 710.0
    xc = xc if xc > -40.0 else -40.0  # expm1(-40) rounds to -1
    kf, r1, t = _exp_krt64(xc)
    kc = kf if kf < 1000.0 else 1000.0
    kc = kc if kc > -1000.0 else -1000.0
    s = _pow2(kc)
    # 2**k*(1 + r1 + t) - 1 = ((2**k - 1) + 2**k*r1) + 2**k*t.  The first sum
    # is exact whenever it cancels (Sterbenz), which is when it matters; for
    # k == 0 the whole thing is r1 + t.
    y = ((s - 1.0) + s * r1) + s * t
    big = _ldexp(1.0 + (r1 + t), kf)  # k >= 1000: the -1 no longer matters
    y = big if kf >= 1000.0 else y
    # x itself for nan and for +-0 (the sums above turn -0 into +0)
    return x if _isnan(x) or x == 0.0 else y


# float32: same scheme, float32 constants throughout (a float64 constant would
# silently promote the whole computation to float64).
_LOG2E_32 = np.float32(1.4426950408889634)
_LN2HI_32 = np.float32(0.6931471824645996)  # float32(ln2); x - k*hi exact via fma
_LN2LO_32 = np.float32(-1.9046542121259336e-09)
# P(r) degree 5, fit error 4e-9 (float32 coefficients).
_EP0_32 = np.float32(0.5)
_EP1_32 = np.float32(0.1666666716337204)
_EP2_32 = np.float32(0.04166646674275398)
_EP3_32 = np.float32(0.00833331048488617)
_EP4_32 = np.float32(0.0013933649752289057)
_EP5_32 = np.float32(0.00019890991097781807)
_F32_1 = np.float32(1.0)
_F32_2 = np.float32(2.0)
_F32_HALF = np.float32(0.5)
_F32_0 = np.float32(0.0)


@register_jitable(inline="always")
def _exp_krt32(x):
    kf = _rint(x * _LOG2E_32)
    r = _fma(-kf, _LN2HI_32, x)  # exact
    c = -kf * _LN2LO_32  # small correction, kept apart from r (see below)
    p = _EP5_32
    p = p * r + _EP4_32
    p = p * r + _EP3_32
    p = p * r + _EP2_32
    p = p * r + _EP1_32
    p = p * r + _EP0_32
    # e**(r+c) - 1 ~= r + r*r*P(r) + c*(1 + r): rounding r+c to float32
    # first would cost up to 0.5 ulp on its own.
    return kf, r, _fma(r * r, p, _fma(c, r, c))


@register_jitable(inline="always")
def _exp_kq32(x):
    kf, r1, t = _exp_krt32(x)
    return kf, r1 + t


_EXP32_HI = np.float32(89.0)
_EXP32_LO = np.float32(-104.0)


@register_jitable(inline="always")
def _exp32(x):
    xc = x if x < _EXP32_HI else _EXP32_HI
    xc = xc if xc > _EXP32_LO else _EXP32_LO
    kf, q = _exp_kq32(xc)
    y = _ldexp(_F32_1 + q, kf)
    return x if _isnan(x) else y


_EXPM1_32_LO = np.float32(-18.0)
_F32_100 = np.float32(100.0)


@register_jitable(inline="always")
def _expm1_32(x):
    xc = x if x < _EXP32_HI else _EXP32_HI
    xc = xc if xc > _EXPM1_32_LO else _EXPM1_32_LO
    kf, r1, t = _exp_krt32(xc)
    kc = kf if kf < _F32_100 else _F32_100
    s = _pow2(kc)
    y = ((s - _F32_1) + s * r1) + s * t
    big = _ldexp(_F32_1 + (r1 + t), kf)
    y = big if kf >= _F32_100 else y
    return x if _isnan(x) or x == _F32_0 else y


# ---------------------------------------------------------------------------
# log
# ---------------------------------------------------------------------------
# x = 2**k * m, m in [sqrt(2)/2, sqrt(2)), f = m - 1 (exact),
# s = f/(2+f), log(1+f) = 2*atanh(s) = f - s*(f - R),  R = s**2 * T(s**2);
# evaluated in fdlibm's order so the big terms are added last:
# log(x) = k*ln2hi - ((hfsq - (s*(hfsq+R) + k*ln2lo)) - f),  hfsq = f*f/2.

_TWO54 = 18014398509481984.0
_TINY64 = 2.2250738585072014e-308
# T(z) = (2*atanh(sqrt z) - 2*sqrt z) / z**1.5 on [0, 0.02944], degree 6;
# error 3e-16 in T, i.e. < 1e-17 relative in the result.
_LT0 = 0.666666666666667
_LT1 = 0.39999999999899444
_LT2 = 0.2857142862600327
_LT3 = 0.22222211130259878
_LT4 = 0.18182889455674947
_LT5 = 0.15331710618210773
_LT6 = 0.14616585424888623


@register_jitable(inline="always")
def _log64(x):
    sub = x < _TINY64  # subnormal (and <= 0, which is overridden below)
    xs = x * _TWO54 if sub else x
    m, dk = _log_split(xs)  # xs = m * 2**dk, m in [sqrt(2)/2, sqrt(2))
    dk = dk - 54.0 if sub else dk
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = _div(f, 2.0 + f)
    z = s * s
    t = _LT6
    t = t * z + _LT5
    t = t * z + _LT4
    t = t * z + _LT3
    t = t * z + _LT2
    t = t * z + _LT1
    t = t * z + _LT0
    R = z * t
    y = dk * _LN2HI - ((hfsq - (s * (hfsq + R) + dk * _LN2LO)) - f)
    y = np.inf if x == np.inf else y
    y = np.nan if _signbit(x) else y  # negative (and -0, fixed next)
    y = -np.inf if x == 0.0 else y
    return x if _isnan(x) else y


_TWO25_32 = np.float32(33554432.0)
_TINY32 = np.float32(1.1754943508222875e-38)
_F32_25 = np.float32(25.0)
_LN2HI_32_LOG = np.float32(0.693145751953125)  # 16 bits: k*hi exact
_LN2LO_32_LOG = np.float32(1.4286067653e-06)
# T(z) degree 3 in float32, error 2e-8 in T.
_LT0_32 = np.float32(0.6666666865348816)
_LT1_32 = np.float32(0.4000012278556824)
_LT2_32 = np.float32(0.2855081558227539)
_LT3_32 = np.float32(0.23330582678318024)
_F32_INF = np.float32(np.inf)
_F32_NAN = np.float32(np.nan)


@register_jitable(inline="always")
def _log32(x):
    sub = x < _TINY32
    xs = x * _TWO25_32 if sub else x
    m, dk = _log_split(xs)
    dk = dk - _F32_25 if sub else dk
    f = m - _F32_1
    hfsq = _F32_HALF * f * f
    s = _div(f, _F32_2 + f)
    z = s * s
    t = _LT3_32
    t = t * z + _LT2_32
    t = t * z + _LT1_32
    t = t * z + _LT0_32
    R = z * t
    y = dk * _LN2HI_32_LOG - ((hfsq - (s * (hfsq + R) + dk * _LN2LO_32_LOG)) - f)
    y = _F32_INF if x == _F32_INF else y
    y = _F32_NAN if _signbit(x) else y
    y = -_F32_INF if x == _F32_0 else y
    return x if _isnan(x) else y


# ---------------------------------------------------------------------------
# tanh
# ---------------------------------------------------------------------------
# |x| < x0: tanh x = x + x**3 * T(x**2)   (no cancellation near 0)
# |x| >= x0: tanh|x| = 1 - 2/(e**2|x| + 1), with e**2|x| + 1 formed as
#   (2**k + 1) + 2**k*q  (one rounding, q from _exp_kq).
# Both halves are computed and selected, so the loop stays branch-free.

_TANH_X0 = 0.625
# T(z) = (tanh(sqrt z) - sqrt z)/z**1.5 on [0, 0.625**2], degree 11, error 2e-17.
_TT = (-0.3333333333333333, 0.13333333333333042, -0.053968253967896666,
       0.021869488518994312, -0.008863235102935029, 0.0035921217472709827,
       -0.0014557753814086393, 0.0005896605030472117, -0.00023759014908800234,
       9.257015852602979e-05, -3.119996874178646e-05, 6.484612156316395e-06)
(_TT0, _TT1, _TT2, _TT3, _TT4, _TT5, _TT6, _TT7, _TT8, _TT9, _TT10,
 _TT11) = _TT


@register_jitable(inline="always")
def _tanh64(x):
    ax = abs(x)
    z = x * x
    t = _TT11
    t = t * z + _TT10
    t = t * z + _TT9
    t = t * z + _TT8
    t = t * z + _TT7
    t = t * z + _TT6
    t = t * z + _TT5
    t = t * z + _TT4
    t = t * z + _TT3
    t = t * z + _TT2
    t = t * z + _TT1
    t = t * z + _TT0
    small = _fma(x * z, t, x)
    a2 = 2.0 * ax
    a2 = a2 if a2 < 44.0 else 44.0  # tanh(22) == 1.0; also catches inf/nan
    kf, q = _exp_kq64(a2)
    s = _pow2(kf)
    d = (s + 1.0) + s * q
    large = 1.0 - _div(2.0, d)
    large = -large if x < 0.0 else large
    y = small if ax < _TANH_X0 else large
    return x if _isnan(x) or x == 0.0 else y  # keeps the sign of -0


_TANH32_X0 = np.float32(0.55)
_F32_20 = np.float32(20.0)
# T(z) on [0, 0.55**2], degree 4, float32 coefficients, error 2e-8.
_TT0_32 = np.float32(-0.3333333134651184)
_TT1_32 = np.float32(0.13333113491535187)
_TT2_32 = np.float32(-0.053909413516521454)
_TT3_32 = np.float32(0.02130929008126259)
_TT4_32 = np.float32(-0.0066100419498980045)


@register_jitable(inline="always")
def _tanh32(x):
    ax = abs(x)
    z = x * x
    t = _TT4_32
    t = t * z + _TT3_32
    t = t * z + _TT2_32
    t = t * z + _TT1_32
    t = t * z + _TT0_32
    small = _fma(x * z, t, x)
    a2 = _F32_2 * ax
    a2 = a2 if a2 < _F32_20 else _F32_20  # tanh(10) == 1.0f
    kf, q = _exp_kq32(a2)
    s = _pow2(kf)
    d = (s + _F32_1) + s * q
    large = _F32_1 - _div(_F32_2, d)
    large = -large if x < _F32_0 else large
    y = small if ax < _TANH32_X0 else large
    return x if _isnan(x) or x == _F32_0 else y


# ---------------------------------------------------------------------------
# sigmoid = 1 / (1 + e**-x)
# ---------------------------------------------------------------------------
# With e**-x = 2**k (1+q):
#   x >= 0 (k <= 0):   1 / ((1 + 2**k) + 2**k q)
#   x < 0 (k >= 0):    2**-k / ((1 + 2**-k) + q); once 1 + 2**-k is no
#                      longer exact (k > 52) 1+q is kept as the exact pair
#                      hi + lo and the tiny 2**-k added to lo instead
#   x < -40:           2**-k / (1+q)   (1 + e**-x rounds to e**-x), scaled
#                      by _ldexp for gradual underflow.
# One rounding in the denominator plus the division: < 1.5 ulp even where
# the result sits just under a power of two (a third rounding gave 2.4 ulp).


@register_jitable(inline="always")
def _sigmoid64(x):
    a = -x
    a = a if a < 746.0 else 746.0  # also catches inf/nan
    a = a if a > -100.0 else -100.0  # sigmoid(>37) == 1.0
    kf, q = _exp_kq64(a)
    s = _pow2(kf if kf < 0.0 else 0.0)
    pos = _div(1.0, (1.0 + s) + s * q)
    t = _pow2(-(kf if kf < 60.0 else 60.0))
    hi = 1.0 + q
    lo = q - (hi - 1.0)  # Fast2Sum: hi + lo == 1 + q exactly
    d = (1.0 + t) + q if kf <= 52.0 else hi + (lo + t)
    neg = _div(t, d)
    far = _ldexp(_div(1.0, hi), -kf)
    y = neg if x >= -40.0 else far
    y = pos if x >= 0.0 else y
    return x if _isnan(x) else y


_SIG32_HI = np.float32(104.0)
_SIG32_LO = np.float32(-40.0)
_SIG32_FAR = np.float32(-20.0)
_SIG32_KMAX = np.float32(30.0)
_F32_23 = np.float32(23.0)


@register_jitable(inline="always")
def _sigmoid32(x):
    a = -x
    a = a if a < _SIG32_HI else _SIG32_HI
    a = a if a > _SIG32_LO else _SIG32_LO
    kf, q = _exp_kq32(a)
    s = _pow2(kf if kf < _F32_0 else _F32_0)
    pos = _div(_F32_1, (_F32_1 + s) + s * q)
    t = _pow2(-(kf if kf < _SIG32_KMAX else _SIG32_KMAX))
    hi = _F32_1 + q
    lo = q - (hi - _F32_1)
    d = (_F32_1 + t) + q if kf <= _F32_23 else hi + (lo + t)
    neg = _div(t, d)
    far = _ldexp(_div(_F32_1, hi), -kf)
    y = neg if x >= _SIG32_FAR else far
    y = pos if x >= _F32_0 else y
    return x if _isnan(x) else y


# ---------------------------------------------------------------------------
# sin / cos
# ---------------------------------------------------------------------------
# k = rint(x*2/pi), r = x - k*pi/2 as a double-double (r, rl) using
# pi/2 = P1 + P2 + P3 (each the next 53 bits, 2**-164 left over):
#   x - k*P1 is exact with an fma for |k| < 2**50 (the result fits in 53 bits);
#   k*P2 is split exactly with an fma (two-product); the sums use TwoSum.
# For |x| <= 2**40 the reduced argument then has ~2**-110 absolute error,
# enough even for the x closest to multiples of pi/2.
# Then sin(x) = +-sin(r) or +-cos(r) by quadrant k mod 4, both kernels
# computed and selected.

_TWO_OVER_PI = 0.6366197723675814
_PIO2_1 = 1.5707963267948966
_PIO2_2 = 6.123233995736766e-17
_PIO2_3 = -1.4973849048591698e-33

# S(z) = (sin(sqrt z) - sqrt z)/z**1.5 on [0, (pi/4)**2], degree 6, error 9e-18.
_S0 = -0.16666666666666666
_S1 = 0.008333333333333331
_S2 = -0.0001984126984126504
_S3 = 2.755731921932058e-06
_S4 = -2.50521062259944e-08
_S5 = 1.6058530596645953e-10
_S6 = -7.586636882825159e-13
# C(z) = (cos(sqrt z) - 1 + z/2)/z**2 on [0, (pi/4)**2], degree 5, error 2e-18.
_C0 = 0.041666666666666664
_C1 = -0.0013888888888887389
_C2 = 2.48015872987544e-05
_C3 = -2.755731726587808e-07
_C4 = 2.087614504941318e-09
_C5 = -1.138254464534925e-11


@register_jitable(inline="always")
def _reduce_pio2(x):
    kf = _rint(x * _TWO_OVER_PI)
    r1 = _fma(-kf, _PIO2_1, x)  # exact
    w = kf * _PIO2_2
    we = _fma(kf, _PIO2_2, -w)  # kf*P2 == w + we exactly
    r2 = r1 - w
    bb = r2 - r1  # TwoSum(r1, -w): r1 - w == r2 + e exactly
    e = (r1 - (r2 - bb)) - (w + bb)
    lo = (e - we) - kf * _PIO2_3
    r = r2 + lo
    rl = (r2 - r) + lo  # |lo| << |r2|: Fast2Sum
    return kf, r, rl


@register_jitable(inline="always")
def _sin_kernel64(r, rl):
    # sin(r + rl) ~= r + (r**3 S(z) + rl*(1 - z/2)), |rl| <= ulp(r)
    z = r * r
    p = _S6
    p = p * z + _S5
    p = p * z + _S4
    p = p * z + _S3
    p = p * z + _S2
    p = p * z + _S1
    p = p * z + _S0
    return r + _fma(z * r, p, rl * (1.0 - 0.5 * z))


@register_jitable(inline="always")
def _cos_kernel64(r, rl):
    # cos(r + rl) ~= 1 - z/2 + z**2 C(z) - r*rl; w = 1 - z/2 rounded and its
    # rounding error ((1-w) - hz, exact) is added back with the small terms.
    z = r * r
    p = _C5
    p = p * z + _C4
    p = p * z + _C3
    p = p * z + _C2
    p = p * z + _C1
    p = p * z + _C0
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + _fma(z * z, p, -(r * rl)))


@register_jitable(inline="always")
def _sincos64(x, qoff):
    # qoff = 0: sin, 1: cos (cos x = sin(x + pi/2): quadrant + 1).
    ax = abs(x)
    fast = ax <= _SINCOS_HUGE
    xc = x if fast else 0.0  # keeps inf/nan/huge out of the reduction
    kf, r, rl = _reduce_pio2(xc)
    q = np.int64(kf) + qoff
    s = _sin_kernel64(r, rl)
    c = _cos_kernel64(r, rl)
    y = c if (q & 1) != 0 else s
    y = -y if (q & 2) != 0 else y
    return y, fast


@register_jitable(inline="always")
def _sin64(x):
    y, fast = _sincos64(x, 0)
    if not fast:
        y = _slow_sin(x)  # also turns +-inf into nan
    return x if _isnan(x) or x == 0.0 else y  # keeps the sign of -0


@register_jitable(inline="always")
def _cos64(x):
    y, fast = _sincos64(x, 1)
    if not fast:
        y = _slow_cos(x)
    return x if _isnan(x) else y


# float32 sin/cos: float32 -> float64 is exact, so reduce in float64 (two
# parts of pi/2 are plenty for float32 precision) and use shorter float64
# polynomials (errors ~1e-11, far below float32's 6e-8), then round once.
# S32(z) degree 3, error 3e-11; C32(z) degree 3, error 2e-12.
_S0_F = -0.16666666663844049
_S1_F = 0.008333331870341349
_S2_F = -0.00019840084376422702
_S3_F = 2.724962008007533e-06
_C0_F = 0.041666666664311826
_C1_F = -0.0013888887668370663
_C2_F = 2.480059840835012e-05
_C3_F = -2.730070403808665e-07


@register_jitable(inline="always")
def _sincos32(x32, qoff):
    x = np.float64(x32)
    ax = abs(x)
    fast = ax <= _SINCOS_HUGE
    xc = x if fast else 0.0
    kf = _rint(xc * _TWO_OVER_PI)
    r = _fma(-kf, _PIO2_1, xc)
    r = _fma(-kf, _PIO2_2, r)
    z = r * r
    p = _S3_F
    p = p * z + _S2_F
    p = p * z + _S1_F
    p = p * z + _S0_F
    s = _fma(z * r, p, r)
    p = _C3_F
    p = p * z + _C2_F
    p = p * z + _C1_F
    p = p * z + _C0_F
    c = _fma(z * z, p, 1.0 - 0.5 * z)
    q = np.int64(kf) + qoff
    y = c if (q & 1) != 0 else s
    y = -y if (q & 2) != 0 else y
    return y, fast, x


@register_jitable(inline="always")
def _sin32(x):
    y, fast, xd = _sincos32(x, 0)
    if not fast:
        y = _slow_sin(xd)
    return x if _isnan(x) or x == _F32_0 else np.float32(y)


@register_jitable(inline="always")
def _cos32(x):
    y, fast, xd = _sincos32(x, 1)
    if not fast:
        y = _slow_cos(xd)
    return x if _isnan(x) else np.float32(y)


# ---------------------------------------------------------------------------
# pow
# ---------------------------------------------------------------------------
# x**y = e**(y * log|x|).  An absolute error d in y*log|x| is a relative error
# d in the result, and |y*log|x|| goes up to ~745, so log|x| is carried as a
# double-double (~2**-100 relative), y*log|x| is formed with a two-product and
# its low part goes into the exp reduction (_exp_krt64_dd).  Signs and the
# C99 special cases (0, inf, nan, |x| == 1, integer/odd y) are selects.

_C23H = 0.6666666666666666  # 2/3 as a double-double
_C23L = 3.700743415417188e-17
# T2(z) = ((2 atanh(sqrt z) - 2 sqrt z)/z**1.5 - 2/3)/z on [0, 0.02944], degree 6,
# error 3e-16 (times s**5 <= 1.5e-4).
_T20 = 0.40000000000000024
_T21 = 0.2857142857133851
_T22 = 0.2222222227110234
_T23 = 0.18181808247544543
_T24 = 0.15385574796462032
_T25 = 0.13285957435193352
_T26 = 0.1291361767218225
_TWO53 = 9007199254740992.0


@register_jitable(inline="always")
def _log_dd(ax):
    """ax finite and > 0 -> (hi, lo) with hi + lo = log(ax) to ~2**-100."""
    sub = ax < _TINY64
    xs = ax * _TWO54 if sub else ax
    m, dk = _log_split(xs)
    dk = dk - 54.0 if sub else dk
    f = m - 1.0  # exact
    dh = 2.0 + f
    dl = f - (dh - 2.0)  # Fast2Sum: dh + dl == 2 + f exactly
    inv = _div(1.0, dh)
    sh = f * inv  # any sh close to f/(2+f) will do: sl absorbs its error,
    sl = (_fma(-sh, dh, f) - sh * dl) * inv  # as the fma residual is exact
    # log(1+f) = 2s + (2/3) s**3 + s**5 T2(s**2): the s**3 term is 1% of the
    # total, so it is also carried as a double-double.
    z = sh * sh
    zl = _fma(sh, sh, -z)
    s3 = z * sh
    s3l = _fma(z, sh, -s3) + (zl * sh + 3.0 * z * sl)
    t = _C23H * s3
    tl = _fma(_C23H, s3, -t) + (_C23H * s3l + _C23L * s3)
    p = _T26
    p = p * z + _T25
    p = p * z + _T24
    p = p * z + _T23
    p = p * z + _T22
    p = p * z + _T21
    p = p * z + _T20
    rest = (s3 * z) * p
    h = 2.0 * sh + t
    e = (2.0 * sh - h) + t  # Fast2Sum, |t| < |2 sh|
    lo = e + ((2.0 * sl + tl) + rest)
    kh = dk * _LN2HI  # exact
    h2 = kh + h
    bb = h2 - kh
    e2 = (kh - (h2 - bb)) + (h - bb)  # TwoSum
    lo2 = e2 + (lo + dk * _LN2LO)
    hi = h2 + lo2
    return hi, lo2 - (hi - h2)


@register_jitable(inline="always")
def _pow_specials(x, y, res):
    """Sign and C99 special cases around res = |x|**y computed for finite,
    nonzero x and finite y."""
    ax = abs(x)
    yint = _rint(y) == y  # true for +-inf too, false for nan
    yodd = yint and abs(y) < _TWO53 and _rint(0.5 * y) != 0.5 * y
    flip = _signbit(x) and yodd
    res = np.nan if (x < 0.0 and not yint) else res
    zres = np.inf if y < 0.0 else 0.0
    res = zres if ax == 0.0 else res
    ires = np.inf if y > 0.0 else 0.0
    res = ires if ax == np.inf else res
    res = -res if flip else res
    big = np.inf if y > 0.0 else 0.0
    small = 0.0 if y > 0.0 else np.inf
    yres = 1.0 if ax == 1.0 else (big if ax > 1.0 else small)
    res = res if abs(y) < np.inf else yres
    res = x + y if (_isnan(x) or _isnan(y)) else res
    return 1.0 if (y == 0.0 or x == 1.0) else res


@register_jitable(inline="always")
def _pow64(x, y):
    ax = abs(x)
    axc = ax if (ax > 0.0 and ax < np.inf) else 1.0  # keeps 0/inf/nan out
    yc = y if abs(y) < np.inf else 0.0
    lh, ll = _log_dd(axc)
    wh = yc * lh
    wl = _fma(yc, lh, -wh) + yc * ll  # wh + wl = y*log|x| to ~2**-100
    inrange = wh < 710.0 and wh > -746.0
    whc = wh if wh < 710.0 else 710.0  # overflow / underflow come out of
    whc = whc if whc > -746.0 else -746.0  # _ldexp, as in exp
    wl = wl if inrange else 0.0  # may be huge or nan (inf - inf) out there
    kf, r1, t = _exp_krt64_dd(whc, wl)
    return _pow_specials(x, y, _ldexp(1.0 + (r1 + t), kf))


@register_jitable(inline="always")
def _pow32(x, y):
    # float32: |y*log|x|| < ~110 wherever the float32 result is finite and
    # nonzero, so plain float64 log/exp (relative error ~2**-45 after the
    # product) are far more accurate than needed; one rounding at the end.
    xd = np.float64(x)
    yd = np.float64(y)
    ax = abs(xd)
    axc = ax if (ax > 0.0 and ax < np.inf) else 1.0
    yc = yd if abs(yd) < np.inf else 0.0
    w = yc * _log64(axc)
    w = w if w < 710.0 else 710.0
    w = w if w > -746.0 else -746.0
    kf, q = _exp_kq64(w)
    return np.float32(_pow_specials(xd, yd, _ldexp(1.0 + q, kf)))


# ---------------------------------------------------------------------------
# Public functions: compile-time dispatch on the argument type.
# ---------------------------------------------------------------------------


def _subroutine_flags():
    from numba.core import compiler, cpu

    flags = compiler.Flags()
    # alwaysinline on the LLVM function: LLVM inlines it into the caller's
    # loop before vectorising, whatever its size.
    flags.forceinline = True
    # Our own flags, not the caller's: FMA contraction (faster, and the code
    # is written to stay correct with or without it); IEEE otherwise.
    flags.fastmath = cpu.FastMathOptions({"contract"})
    flags.error_model = "numpy"
    return flags


def _typed_dispatch(name, impl64, impl32):
    """An intrinsic that calls impl32 for float32 and impl64 for float64 (and
    integers, converted).  Each implementation is compiled once per process
    as an alwaysinline subroutine (Numba caches it on the target context), so
    a kernel that uses it pays for an LLVM inline, not for re-typing the
    whole body through Numba's IR inliner (that cost 0.4-0.7 s per kernel)."""

    @intrinsic
    def _call(typingctx, x):
        if isinstance(x, types.Float) and x.bitwidth == 32:
            impl, ty = impl32, types.float32
        elif isinstance(x, (types.Float, types.Integer, types.Boolean)):
            impl, ty = impl64, types.float64
        else:
            return None
        sig = ty(x)

        def codegen(context, builder, signature, args):
            val = context.cast(builder, args[0], x, ty)
            isig = ty(ty)
            cres = context.compile_subroutine(builder, impl, isig,
                                              flags=_subroutine_flags())
            return context.call_internal(builder, cres.fndesc, isig, [val])

        return sig, codegen

    _call.__name__ = "_%s_dispatch" % name
    return _call


def _typed_dispatch2(name, impl64, impl32):
    """Two-argument version: float32 only when both arguments are float32."""

    @intrinsic
    def _call(typingctx, x, y):
        ok = (types.Float, types.Integer, types.Boolean)
        if not (isinstance(x, ok) and isinstance(y, ok)):
            return None
        if x == y == types.float32:
            impl, ty = impl32, types.float32
        else:
            impl, ty = impl64, types.float64
        sig = ty(x, y)

        def codegen(context, builder, signature, args):
            a = context.cast(builder, args[0], x, ty)
            b = context.cast(builder, args[1], y, ty)
            isig = ty(ty, ty)
            cres = context.compile_subroutine(builder, impl, isig,
                                              flags=_subroutine_flags())
            return context.call_internal(builder, cres.fndesc, isig, [a, b])

        return sig, codegen

    _call.__name__ = "_%s_dispatch" % name
    return _call


_exp_d = _typed_dispatch("exp", _exp64, _exp32)
_expm1_d = _typed_dispatch("expm1", _expm1_64, _expm1_32)
_log_d = _typed_dispatch("log", _log64, _log32)
_tanh_d = _typed_dispatch("tanh", _tanh64, _tanh32)
_sigmoid_d = _typed_dispatch("sigmoid", _sigmoid64, _sigmoid32)
_sin_d = _typed_dispatch("sin", _sin64, _sin32)
_cos_d = _typed_dispatch("cos", _cos64, _cos32)
_pow_d = _typed_dispatch2("pow", _pow64, _pow32)


@njit(inline="always")
def exp(x):
    """e**x; within 1 ulp.  Overflow -> inf, underflow -> 0 (gradually)."""
    return _exp_d(x)


@njit(inline="always")
def expm1(x):
    """e**x - 1 without cancellation near 0."""
    return _expm1_d(x)


@njit(inline="always")
def log(x):
    """Natural log; log(0) = -inf, log(x<0) = nan, subnormals handled."""
    return _log_d(x)


@njit(inline="always")
def tanh(x):
    """Hyperbolic tangent; saturates to +-1 exactly."""
    return _tanh_d(x)


@njit(inline="always")
def sigmoid(x):
    """Logistic 1/(1+e**-x), accurate in both tails."""
    return _sigmoid_d(x)


@njit(inline="always")
def sin(x):
    """sin(x); |x| > 2**40 goes to libm (still vectorised loop, see top)."""
    return _sin_d(x)


@njit(inline="always")
def cos(x):
    """cos(x); |x| > 2**40 goes to libm (still vectorised loop, see top)."""
    return _cos_d(x)


@njit(inline="always")
def pow(x, y):  # noqa: A001 - the op's name; shadows the builtin here only
    """x**y for float y, C99 special cases (pow(-8, 1/3) is nan, pow(x, 0) and
    pow(1, y) are 1, signed zeros/infinities for odd integer y)."""
    return _pow_d(x, y)

"""Vectorisable scalar math for generated ``numba.njit`` loops, emitted as LLVM IR.

The algorithms, coefficients and edge cases of the former ``vmath`` module
(Cody-Waite range reduction, near-minimax polynomials, exponent bit-casts; at
most ~1.2 ulp in float64 and float32, measured by ``tests/compiler/
test_vmath.py``; ``vmath``'s derivations are in git history, ca44e79),
written straight into LLVM IR with llvmlite's ``IRBuilder`` instead of as
``register_jitable(inline="always")`` Python.

Why
---
``vmath``'s bodies are inlined at the Numba IR level, which re-types the whole
body at every call site: ~0.5 s of compile time per call (minutes for a kernel
with a few hundred transcendental calls) plus NumbaIRAssumptionWarning noise.
Here a call site costs one typing-template lookup and one ``call`` instruction:

* the first call sites (``INLINE_CALL_SITES``, 4) of a function in an LLVM
  module call an internal function ``numgrad_vir_<name>_f64`` / ``_f32``
  (``alwaysinline nounwind readnone``), defined on first use and found again
  with ``module.globals.get``; LLVM inlines it before the loop vectoriser
  runs, so a fused loop sees plain arithmetic and vectorises (~1 ns/element);
* further call sites call ``numgrad_vir_<name>_f64_ool``: the same body,
  ``noinline``, plus explicitly vectorised copies for 2..16 lanes tied to it
  by a ``vector-function-abi-variant`` attribute, so the vectoriser calls the
  copy of its width once per vector.  Just as fast at run time, but a kernel
  with hundreds of call sites no longer pays LLVM for hundreds of inlined
  bodies (each ~5-15 ms to optimise and emit).

Floating-point flags
--------------------
Every floating-point instruction in the bodies carries exactly the ``contract``
flag (FMA contraction; the algorithms are written to be correct with or without
it).  Numba's fastmath pass only adds the caller's flags to instructions that
have none, so a caller's ``fastmath`` (even ``True``) does not reach the
error-free sums and the NaN/inf selects.  (It does tag the float-returning
calls inside -- ``llvm.fma``/``llvm.rint`` and the libm slow path; sin/cos pass
nan and inf lanes through those, which is what ``fastmath=True`` documents giving up.)

Huge arguments of sin/cos
-------------------------
|x| > 2**40 (and inf) is beyond the Cody-Waite reduction; the fast path computes
garbage for those lanes and a ``noinline readnone`` helper patches them with
libm's value afterwards (``_out_of_line``). Scalar bodies call it for LLVM's loop
vectoriser through a ``vector-function-abi-variant`` attribute, once per vector,
and the variant returns at once unless some lane is huge; bodies with explicit
vectors branch around the call.  float32 sin/cos reduce in
float32 up to |x| = 4096 (the polynomials are float32 at full lanes either
way); larger lanes go to a helper of the same kind with the float64 reduction.

Usage
-----
``vmath_numba`` registers ``exp, expm1, log, tanh, sigmoid, sin, cos`` with Numba
(typing and lowering, like ``math.exp``); ``llvm.body`` and ``llvm.kernel`` call the
bodies from IR. This module imports no Numba.
"""

from __future__ import annotations

import weakref

import numpy as np
from llvmlite import ir

from numgrad.compiler.backends.cpu.llvm.attrs import (AttrsWithStrings, add_string_attribute,
                                                      declare)

__all__ = ["TEMPLATES", "PREFER_VECTOR_WIDTH", "INLINE_CALL_SITES"]

# op name -> name of the function in this module (for code generators).
TEMPLATES = {
    "exp": "exp",
    "expm1": "expm1",
    "log": "log",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "sin": "sin",
    "cos": "cos",
}

_FLAGS = ("contract",)  # on every fp instruction (see module docstring)
_F64 = ir.DoubleType()
_F32 = ir.FloatType()

# ---------------------------------------------------------------------------
# A tiny expression layer over IRBuilder, so the bodies below read like the
# Python originals of the former vmath.py.  _E emits for one float type; _V wraps a float
# value, _B an i1.  Python numbers become constants of the emitter's type
# (for float32 they must be exactly representable: a float64 constant would
# otherwise be rounded silently).
# ---------------------------------------------------------------------------


class _E:
    def __init__(self, builder, bits, lanes=0):
        self.b = builder
        self.bits = bits
        self.lanes = lanes  # 0: scalar, else the vector width
        sft = _F64 if bits == 64 else _F32
        sit = ir.IntType(bits)
        self.ft = ir.VectorType(sft, lanes) if lanes else sft
        self.it = ir.VectorType(sit, lanes) if lanes else sit
        self.mb, self.bias = (52, 1023) if bits == 64 else (23, 127)
        self.suffix = ("v%d" % lanes if lanes else "") + "f%d" % bits

    def retype(self, bits):
        """An emitter for another float width, same builder and lanes."""
        return self if bits == self.bits else _E(self.b, bits, self.lanes)

    # -- values --------------------------------------------------------------
    def const(self, c):
        c = float(c)
        if self.bits == 32:
            if float(np.float32(c)) != c and c == c:
                raise ValueError("float32 constant not exact: %r" % c)
        return ir.Constant(self.ft, c)

    def v(self, a):
        return a.v if isinstance(a, _V) else self.const(a)

    def wrap(self, llv):
        return _V(self, llv)

    def icon(self, n):
        return ir.Constant(self.it, n)

    # -- intrinsics ------------------------------------------------------------
    def _intr(self, name, args):
        fn = declare(
            self.b.module, ir.FunctionType(self.ft, [self.ft] * len(args)),
            "%s.%s" % (name, self.suffix))
        return _V(self, self.b.call(fn, [self.v(a) for a in args]))

    def fma(self, a, b, c):
        """One rounding for a*b + c (exactness matters where it is used)."""
        return self._intr("llvm.fma", (a, b, c))

    def rint(self, a):
        """Round half to even (vroundpd); no magic-number trick."""
        return self._intr("llvm.rint", (a,))

    def fabs(self, a):
        return self._intr("llvm.fabs", (a,))

    def copysign(self, a, b):
        return self._intr("llvm.copysign", (a, b))

    def where(self, cond, a, b):
        return _V(self, self.b.select(cond.v, self.v(a), self.v(b)))

    def horner(self, x, coeffs):
        """coeffs from the highest degree down: ((c0*x + c1)*x + c2)..."""
        p = self.wrap(self.v(coeffs[0]))
        for c in coeffs[1:]:
            p = p * x + c
        return p

    # -- bit-level helpers (integer work in the float's own width) -----------
    def _bits(self, x):
        return self.b.bitcast(self.v(x), self.it)

    def _exp_field(self, k):  # integer k -> 2**k as float (k + bias normal)
        b = self.b
        return b.bitcast(b.shl(b.add(k, self.icon(self.bias)), self.icon(self.mb)), self.ft)

    def isnan(self, x):
        """NaN test on the bits, immune to any fast-math assumptions."""
        ax = self.b.and_(self._bits(x), self.icon((1 << (self.bits - 1)) - 1))
        return _B(self, self.b.icmp_signed(">", ax, self.icon((2 * self.bias + 1) << self.mb)))

    def isinf(self, x):
        ax = self.b.and_(self._bits(x), self.icon((1 << (self.bits - 1)) - 1))
        return _B(self, self.b.icmp_signed("==", ax, self.icon((2 * self.bias + 1) << self.mb)))

    def signbit(self, x):
        return _B(self, self.b.icmp_signed("<", self._bits(x), self.icon(0)))

    def sign_bits(self, x):
        """x's sign bit in place, the rest zero (an integer of the float's width)."""
        return self.b.and_(self._bits(x), self.icon(-(1 << (self.bits - 1))))

    def pow2(self, kf):
        """2**k for integer-valued float k in the normal exponent range."""
        return _V(self, self._exp_field(self.b.fptosi(self.v(kf), self.it)))

    def ldexp(self, y, kf):
        """y * 2**k, |k| <= 2*max_exponent, y ~ 1: two normal factors, so
        overflow gives inf and underflow is gradual and rounded once."""
        b = self.b
        k = b.fptosi(self.v(kf), self.it)
        k1 = b.ashr(k, self.icon(1))
        k2 = b.sub(k, k1)
        s1 = self._exp_field(k1)
        s2 = self._exp_field(k2)
        return _V(self, b.fmul(b.fmul(self.v(y), s1, flags=_FLAGS), s2, flags=_FLAGS))

    def log_split(self, x):
        """x positive normal -> (m, k) with x = m * 2**k, m in [sqrt(2)/2, sqrt(2))."""
        b = self.b
        if self.bits == 64:
            off = int(np.float64(np.sqrt(0.5)).view(np.int64))
        else:
            off = int(np.float32(np.sqrt(0.5)).view(np.int32))
        ix = self._bits(x)
        tmp = b.sub(ix, self.icon(off))
        k = b.ashr(tmp, self.icon(self.mb))
        m = b.bitcast(b.sub(ix, b.and_(tmp, self.icon(-(1 << self.mb)))), self.ft)
        return _V(self, m), _V(self, b.sitofp(k, self.ft))

    def ext(self, x, e2):
        """Convert x (of this emitter's type) to e2's type."""
        if e2.bits == self.bits:
            return x
        conv = self.b.fpext if e2.bits > self.bits else self.b.fptrunc
        return _V(e2, conv(self.v(x), e2.ft))


class _V:
    """A float value; arithmetic emits IR with the _FLAGS flags."""

    __slots__ = ("e", "v")
    __hash__ = None

    def __init__(self, e, v):
        self.e = e
        self.v = v

    def _o(self, o):
        return self.e.v(o)

    def _bin(self, op, a, b):
        return _V(self.e, getattr(self.e.b, op)(a, b, flags=_FLAGS))

    def __add__(self, o):
        return self._bin("fadd", self.v, self._o(o))

    def __radd__(self, o):
        return self._bin("fadd", self._o(o), self.v)

    def __sub__(self, o):
        return self._bin("fsub", self.v, self._o(o))

    def __rsub__(self, o):
        return self._bin("fsub", self._o(o), self.v)

    def __mul__(self, o):
        return self._bin("fmul", self.v, self._o(o))

    def __rmul__(self, o):
        return self._bin("fmul", self._o(o), self.v)

    def __truediv__(self, o):  # plain IEEE fdiv: x/0 is +-inf or nan
        return self._bin("fdiv", self.v, self._o(o))

    def __rtruediv__(self, o):
        return self._bin("fdiv", self._o(o), self.v)

    def __neg__(self):
        return _V(self.e, self.e.b.fneg(self.v, flags=_FLAGS))

    # Ordered comparisons: false on NaN, like Python's.
    def _cmp(self, op, o):
        return _B(self.e, self.e.b.fcmp_ordered(op, self.v, self._o(o), flags=_FLAGS))

    def __lt__(self, o):
        return self._cmp("<", o)

    def __le__(self, o):
        return self._cmp("<=", o)

    def __gt__(self, o):
        return self._cmp(">", o)

    def __ge__(self, o):
        return self._cmp(">=", o)

    def __eq__(self, o):
        return self._cmp("==", o)


class _B:
    """An i1 value."""

    __slots__ = ("e", "v")

    def __init__(self, e, v):
        self.e = e
        self.v = v

    def __or__(self, o):
        return _B(self.e, self.e.b.or_(self.v, o.v))

    def __and__(self, o):
        return _B(self.e, self.e.b.and_(self.v, o.v))

    def __invert__(self):
        return _B(self.e, self.e.b.not_(self.v))


# ---------------------------------------------------------------------------
# Out-of-line paths for the lanes a body's fast path does not cover (huge
# sin/cos arguments; float32 sin/cos beyond float32's own reduction): a
# noinline readnone/nounwind helper with "vector-function-abi-variant" entries
# for 2..16 lanes.  Scalar and vector variants compute a marked lane the same
# way, so they agree exactly; the vector variant returns at once when no lane
# is marked, and the caller selects the helper's value only for marked lanes.
# ---------------------------------------------------------------------------

_HELPER_LANES = (2, 4, 8, 16)
# Above this |x| the Cody-Waite reduction is no longer trusted (exact enough to
# ~2**44; 2**40 leaves margin); libm's Payne-Hanek takes over.
_SINCOS_HUGE = 2.0 ** 40


def _out_of_line(e, name, mark, body, x, y):
    """y, with the lanes of x that ``mark`` sets replaced by ``body(e, x, mark(e, x))``
    from the noinline helper ``name`` (defined on first use in the module).

    Scalar bodies (for LLVM's loop vectoriser) must stay straight-line, so they call
    the helper unconditionally and the vectoriser calls its vector variant once per
    vector; the variant tests the lanes and returns at once when none is set. Bodies
    written with explicit vectors (``e.lanes``, as llvm.body writes them) branch to
    the call, and the select of its lanes, only when some lane is set: the call itself
    returns at once, but every vector register is caller-saved, so an unconditional
    call spills all that is live around it (docs/design-notes.md, "Vector math")."""
    fn = _helper(e.b.module, name, e.bits, mark, body)
    marked = mark(e, x)
    if not e.lanes:
        return e.where(marked, _V(e, e.b.call(fn, [e.v(x)])), y)
    b = e.b
    vfn = b.module.globals["%s_v%d" % (name, e.lanes)]
    anyh = b.icmp_unsigned("!=", b.bitcast(marked.v, ir.IntType(e.lanes)),
                           ir.Constant(ir.IntType(e.lanes), 0))
    before = b.block
    with b.if_then(anyh, likely=False):
        patched = b.select(marked.v, b.call(vfn, [e.v(x)]), e.v(y))
        slow_end = b.block
    out = b.phi(e.ft)
    out.add_incoming(e.v(y), before)
    out.add_incoming(patched, slow_end)
    return _V(e, out)


def _helper(module, name, bits, mark, body):
    """The helper of ``_out_of_line``: a scalar function and its vector variants for
    ``_HELPER_LANES`` lanes, tied together by "vector-function-abi-variant"."""
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    ft = _F64 if bits == 64 else _F32
    fn = ir.Function(module, ir.FunctionType(ft, [ft]), name)
    # weak_odr, not linkonce_odr/internal: Numba optimises each module before
    # linking and would drop the (so far unreferenced) vector variants, which
    # the vectoriser requires to exist.
    fn.linkage = "weak_odr"
    attrs = AttrsWithStrings(["noinline", "nounwind", "readnone"])
    attrs.extra = ['"vector-function-abi-variant"="%s"' % ",".join(
        "_ZGV_LLVM_N%dv_%s(%s_v%d)" % (n, name, name, n) for n in _HELPER_LANES)]
    fn.attributes = attrs
    variants = [(fn, 0)]
    for n in _HELPER_LANES:
        vt = ir.VectorType(ft, n)
        vf = ir.Function(module, ir.FunctionType(vt, [vt]), "%s_v%d" % (name, n))
        vf.linkage = "weak_odr"
        vf.attributes.add("noinline")
        vf.attributes.add("nounwind")
        variants.append((vf, n))
    for f, n in variants:
        entry, slow, done = (f.append_basic_block(s) for s in ("entry", "slow", "fast"))
        e = _E(ir.IRBuilder(entry), bits, n)
        x = _V(e, f.args[0])
        marked = mark(e, x)
        anyh = (marked.v if not n else e.b.icmp_unsigned(
            "!=", e.b.bitcast(marked.v, ir.IntType(n)), ir.Constant(ir.IntType(n), 0)))
        e.b.cbranch(anyh, slow, done)
        e.b.position_at_end(done)
        e.b.ret(ir.Constant(e.ft, None))
        e.b.position_at_end(slow)
        e.b.ret(e.v(body(e, x, marked)))
    return fn


def _huge(e, x):
    return e.fabs(x) > _SINCOS_HUGE  # ordered: nan is not huge


def _libm_huge(e, libname, x, y):
    """y, with libm's value for the lanes where |x| > 2**40 (x, y float64, any lanes)."""

    def libm(e, x, huge):  # lane by lane, only the huge ones
        libfn = declare(e.b.module, ir.FunctionType(_F64, [_F64]), libname)
        if not e.lanes:
            return _V(e, e.b.call(libfn, [e.v(x)]))
        i32 = ir.IntType(32)
        out = ir.Constant(e.ft, None)
        for i in range(e.lanes):
            lane = e.b.extract_element(e.v(x), ir.Constant(i32, i))
            res = e.b.select(e.b.extract_element(huge.v, ir.Constant(i32, i)),
                             e.b.call(libfn, [lane]), ir.Constant(_F64, 0.0))
            out = e.b.insert_element(out, res, ir.Constant(i32, i))
        return _V(e, out)

    return _out_of_line(e, "numgrad_vir_slow_%s_f64" % libname, _huge, libm, x, y)


# ---------------------------------------------------------------------------
# Coefficients (from the former vmath.py; fitted with mpmath, see there).
# ---------------------------------------------------------------------------

# exp: e**x = 2**k * e**r, k = rint(x/ln2), r = x - k*ln2, e**r = 1 + q,
# q = r + r*r*P(r) kept apart from the 1 (expm1/tanh/sigmoid need it).
_LOG2E = 1.4426950408889634
_LN2HI = 0.6931471803691238  # 32 significant bits: k*_LN2HI exact
_LN2LO = 1.9082149292705877e-10
# P(r) = (e**r - 1 - r)/r**2 on [-0.3466, 0.3466], degree 10, highest first.
_EP64 = (2.0914686968086876e-09, 2.5105217004720745e-08, 2.75572736431103e-07,
         2.7557255400206422e-06, 2.4801587325547743e-05, 0.00019841269874820627,
         0.0013888888888883748, 0.008333333333326136, 0.04166666666666667,
         0.1666666666666667, 0.5)

_f32 = np.float32
_LOG2E_32 = _f32(1.4426950408889634)
_LN2HI_32 = _f32(0.6931471824645996)  # float32(ln2); x - k*hi exact via fma
_LN2LO_32 = _f32(-1.9046542121259336e-09)
# P(r) degree 5, float32 coefficients, highest first.
_EP32 = tuple(_f32(c) for c in (0.00019890991097781807, 0.0013933649752289057,
                                0.00833331048488617, 0.04166646674275398,
                                0.1666666716337204, 0.5))

# log: x = 2**k * m, f = m - 1, s = f/(2+f), log(1+f) = f - s*(f - R),
# R = s**2 T(s**2), fdlibm's summation order.
_TWO54 = 18014398509481984.0
_TINY64 = 2.2250738585072014e-308
_LT64 = (0.14616585424888623, 0.15331710618210773, 0.18182889455674947,
         0.22222211130259878, 0.2857142862600327, 0.39999999999899444, 0.666666666666667)
_TWO25_32 = _f32(33554432.0)
_TINY32 = _f32(1.1754943508222875e-38)
_LN2HI_32_LOG = _f32(0.693145751953125)  # 16 bits: k*hi exact
_LN2LO_32_LOG = _f32(1.4286067653e-06)
_LT32 = tuple(_f32(c) for c in (0.23330582678318024, 0.2855081558227539,
                                0.4000012278556824, 0.6666666865348816))

# tanh: |x| < x0: x + x**3 T(x**2); else 1 - 2/(e**2|x| + 1).
_TANH_X0 = 0.625
_TT64 = (6.484612156316395e-06, -3.119996874178646e-05, 9.257015852602979e-05,
         -0.00023759014908800234, 0.0005896605030472117, -0.0014557753814086393,
         0.0035921217472709827, -0.008863235102935029, 0.021869488518994312,
         -0.053968253967896666, 0.13333333333333042, -0.3333333333333333)
_TANH32_X0 = _f32(0.55)
_TT32 = tuple(_f32(c) for c in (-0.0066100419498980045, 0.02130929008126259,
                                -0.053909413516521454, 0.13333113491535187,
                                -0.3333333134651184))

# sin/cos: k = rint(x*2/pi), r = x - k*pi/2 as a double-double, pi/2 = P1+P2+P3.
_TWO_OVER_PI = 0.6366197723675814
_PIO2_1 = 1.5707963267948966
_PIO2_2 = 6.123233995736766e-17
_PIO2_3 = -1.4973849048591698e-33
_S64 = (-7.586636882825159e-13, 1.6058530596645953e-10, -2.50521062259944e-08,
        2.755731921932058e-06, -0.0001984126984126504, 0.008333333333333331,
        -0.16666666666666666)
_C64 = (-1.138254464534925e-11, 2.087614504941318e-09, -2.755731726587808e-07,
        2.48015872987544e-05, -0.0013888888888887389, 0.041666666666666664)
# float32 sin/cos: float64 reduction, float32 polynomials (coefficients fitted
# for float64 evaluation, rounded to float32: ~2**-24 of terms <= r**3/6).
_S32 = tuple(_f32(c) for c in (2.724962008007533e-06, -0.00019840084376422702,
                               0.008333331870341349, -0.16666666663844049))
_C32 = tuple(_f32(c) for c in (-2.730070403808665e-07, 2.480059840835012e-05,
                               -0.0013888887668370663, 0.041666666664311826))

# ---------------------------------------------------------------------------
# Bodies.  Each takes an emitter e and the argument x (of e's type) and returns
# the result.  Edge cases are selects, never branches, so loops if-convert.
# ---------------------------------------------------------------------------


def _exp_krt(e, x):
    """x finite, clamped: (k as float, r1, t) with e**x = 2**k (1 + r1 + t),
    r1 exact, |t| < |r1|/2."""
    if e.bits == 64:
        kf = e.rint(x * _LOG2E)
        r1 = e.fma(-kf, _LN2HI, x)  # exact
        c = -kf * _LN2LO
        r = r1 + c  # rounded; only used where its error is damped
        p = e.horner(r, _EP64)
        return kf, r1, e.fma(r * r, p, c)
    kf = e.rint(x * _LOG2E_32)
    r = e.fma(-kf, _LN2HI_32, x)  # exact
    c = -kf * _LN2LO_32
    p = e.horner(r, _EP32)
    return kf, r, e.fma(r * r, p, e.fma(c, r, c))


def _exp_kq(e, x):
    kf, r1, t = _exp_krt(e, x)
    return kf, r1 + t


def _exp_body(e, x):
    hi, lo = (710.0, -746.0) if e.bits == 64 else (89.0, -104.0)
    xc = e.where(x < hi, x, hi)  # nan -> hi, replaced at the end
    xc = e.where(xc > lo, xc, lo)
    kf, q = _exp_kq(e, xc)
    y = e.ldexp(1.0 + q, kf)  # overflow -> inf, gradual underflow -> 0
    return e.where(e.isnan(x), x, y)


def _expm1_body(e, x):
    hi, lo, kbig = (710.0, -40.0, 1000.0) if e.bits == 64 else (89.0, -18.0, 100.0)
    xc = e.where(x < hi, x, hi)
    xc = e.where(xc > lo, xc, lo)  # expm1(lo) rounds to -1
    kf, r1, t = _exp_krt(e, xc)
    kc = e.where(kf < kbig, kf, kbig)
    kc = e.where(kc > -kbig, kc, -kbig)
    s = e.pow2(kc)
    # 2**k (1 + r1 + t) - 1 = ((2**k - 1) + 2**k r1) + 2**k t
    y = ((s - 1.0) + s * r1) + s * t
    big = e.ldexp(1.0 + (r1 + t), kf)
    y = e.where(kf >= kbig, big, y)
    return e.where(e.isnan(x) | (x == 0.0), x, y)  # keeps the sign of -0


def _log_body(e, x):
    if e.bits == 64:
        tiny, scale, dscale, coef = _TINY64, _TWO54, 54.0, _LT64
        hi, lo = _LN2HI, _LN2LO
    else:
        tiny, scale, dscale, coef = _TINY32, _TWO25_32, 25.0, _LT32
        hi, lo = _LN2HI_32_LOG, _LN2LO_32_LOG
    sub = x < tiny  # subnormal (and <= 0, overridden below)
    xs = e.where(sub, x * scale, x)
    m, dk = e.log_split(xs)
    dk = e.where(sub, dk - dscale, dk)
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    R = z * e.horner(z, coef)
    y = dk * hi - ((hfsq - (s * (hfsq + R) + dk * lo)) - f)
    y = e.where(x == np.inf, np.inf, y)
    y = e.where(e.signbit(x), np.nan, y)  # negative (and -0, fixed next)
    y = e.where(x == 0.0, -np.inf, y)
    return e.where(e.isnan(x), x, y)


def _tanh_body(e, x):
    # tanh is odd, and both formulas below are exactly odd in rounding too, so
    # they run on |x| and the sign is put back with one copysign: that also keeps
    # -0, and nan takes the small formula (ax >= x0 is false) and stays nan.
    if e.bits == 64:
        coef, x0, cap = _TT64, _TANH_X0, 44.0  # tanh(22) == 1.0
    else:
        coef, x0, cap = _TT32, _TANH32_X0, 20.0  # tanh(10) == 1.0f
    ax = e.fabs(x)
    z = ax * ax
    small = e.fma(ax * z, e.horner(z, coef), ax)
    a2 = 2.0 * ax
    a2 = e.where(a2 < cap, a2, cap)  # also catches inf/nan
    kf, q = _exp_kq(e, a2)
    s = e.pow2(kf)
    d = (s + 1.0) + s * q
    large = 1.0 - 2.0 / d
    return e.copysign(e.where(ax >= x0, large, small), x)


def _sigmoid_body(e, x):
    # e**-x = 2**k (1+q): x >= 0: 1/((1 + 2**k) + 2**k q); x < 0:
    # 2**-k/((1 + 2**-k) + q) (1+q as an exact pair once 1 + 2**-k is
    # inexact); far left 2**-k/(1+q) scaled by ldexp (the former vmath.py).
    if e.bits == 64:
        ahi, alo, kmax, kexact, far_x = 746.0, -100.0, 60.0, 52.0, -40.0
    else:
        ahi, alo, kmax, kexact, far_x = 104.0, -40.0, 30.0, 23.0, -20.0
    a = -x
    a = e.where(a < ahi, a, ahi)  # also catches inf/nan
    a = e.where(a > alo, a, alo)
    kf, q = _exp_kq(e, a)
    s = e.pow2(e.where(kf < 0.0, kf, 0.0))
    pos = 1.0 / ((1.0 + s) + s * q)
    t = e.pow2(-e.where(kf < kmax, kf, kmax))
    hi = 1.0 + q
    lo = q - (hi - 1.0)  # Fast2Sum: hi + lo == 1 + q exactly
    d = e.where(kf <= kexact, (1.0 + t) + q, hi + (lo + t))
    neg = t / d
    far = e.ldexp(1.0 / hi, -kf)
    y = e.where(x >= far_x, neg, far)
    y = e.where(x >= 0.0, pos, y)
    return e.where(e.isnan(x), x, y)


def _reduce_pio2(e, x, c=(_TWO_OVER_PI, _PIO2_1, _PIO2_2, _PIO2_3)):
    """(k, r, rl): x - k pi/2 == r + rl, with 2/pi and pi/2's parts in ``c``."""
    two_over_pi, p1, p2, p3 = c
    kf = e.rint(x * two_over_pi)
    r1 = e.fma(-kf, p1, x)  # exact
    w = kf * p2
    we = e.fma(kf, p2, -w)  # kf*P2 == w + we exactly
    r2 = r1 - w
    bb = r2 - r1  # TwoSum(r1, -w)
    err = (r1 - (r2 - bb)) - (w + bb)
    lo = (err - we) - kf * p3
    r = r2 + lo
    rl = (r2 - r) + lo  # Fast2Sum
    return kf, r, rl


def _sin_kernel64(e, r, rl):
    z = r * r
    p = e.horner(z, _S64)
    return r + e.fma(z * r, p, rl * (1.0 - 0.5 * z))


def _cos_kernel64(e, r, rl):
    z = r * r
    p = e.horner(z, _C64)
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + e.fma(z * z, p, -(r * rl)))


def _sincos_body(libname, qoff):
    """sin (qoff 0) or cos (qoff 1: cos x = sin(x + pi/2)) of x.

    Both reduce |x|: sin is odd, and x's sign goes back in with the quadrant's as one
    xor of the sign bit (so sin(-0) is -0). nan and inf need no select: they go
    through the arithmetic as nan. The lanes that the fast path does not cover are
    patched after it (``_out_of_line``), so none of this is a select in the hot path
    but the quadrant's choice of kernel (faster: docs/design-notes.md, "Vector math")."""

    def body(e, x):
        return (_sincos32 if e.bits == 32 else _sincos64)(e, x, libname, qoff)

    return body


def _fold(e, k, kf, s, c, x, qoff):
    """sin or cos of x from the reduction of |x| (kf: its integer multiple of pi/2, a
    float of emitter k) and the kernels s = sin r, c = cos r (of emitter e): quadrant
    q = int(kf) + qoff takes c when odd and flips the sign when q & 2; sin (qoff 0)
    then takes x's sign too."""
    b = e.b
    # kf + 1.5 * 2**mb holds int(kf) in its low bits for |kf| < 2**(mb - 1), and is
    # defined for every kf (fptosi is poison for nan and out-of-range values).
    q = b.bitcast((kf + 1.5 * 2.0 ** k.mb).v, k.it)
    if k.bits != e.bits:
        q = b.trunc(q, e.it)
    q = b.add(q, e.icon(qoff))
    odd = b.icmp_unsigned("!=", b.and_(q, e.icon(1)), e.icon(0))
    y = b.bitcast(b.select(odd, e.v(c), e.v(s)), e.it)
    sign = b.shl(b.and_(q, e.icon(2)), e.icon(e.bits - 2))
    if qoff == 0:
        sign = b.xor(sign, e.sign_bits(x))
    return _V(e, b.bitcast(b.xor(y, sign), e.ft))


def _sincos64(e, x, libname, qoff):
    """float64 sin/cos of x (any lanes); also the float32 bodies' path for
    |x| > _SINCOS32_FAST (with e float32: float64 reduction, float32 polynomials).
    |x| > 2**40 (and inf) is libm's."""
    d = e.retype(64)
    xd = e.ext(x, d)
    ax = d.fabs(xd)
    if e.bits == 64:
        kf, r, rl = _reduce_pio2(d, ax)
        s = _sin_kernel64(d, r, rl)
        c = _cos_kernel64(d, r, rl)
    else:
        kf = d.rint(ax * _TWO_OVER_PI)
        r = d.fma(-kf, _PIO2_1, ax)
        r = d.fma(-kf, _PIO2_2, r)
        rh = d.ext(r, e)
        rl = d.ext(r - e.ext(rh, d), e)  # the difference is exact in float64
        s, c = _sincos_kernel32(e, rh, rl)
    y = e.ext(_fold(e, d, kf, s, c, x, qoff), d)
    return d.ext(_libm_huge(d, libname, xd, y), e)


# float32 sin/cos.  The polynomials are float32 at full lanes; r = x - k pi/2
# reaches them as a float32 pair rh + rl (~2**-48 relative), so rounding r to
# float32 does not reach the result (at most 0.87 ulp over every float32 with
# |x| in [0.5, 8192); 0.50 when all was float64).
# For |x| <= _SINCOS32_FAST the reduction is float32 too (three float32 parts
# of pi/2 and exact products, _reduce_pio2's scheme).  Larger lanes (and inf)
# go to a helper called like the huge-argument one: a float64 reduction, exact
# enough up to 2**40, and libm beyond.  Both kinds of body (scalar for the loop
# vectoriser, explicit vectors) compute every lane the same way, so their bits
# agree.
_SINCOS32_FAST = _f32(4096.0)
# 2/pi and pi/2 = P1 + P2 + P3 + ~1.1e-23 in float32 parts (mpmath), so k*(the
# rest) stays below 3e-20 for k <= 4096 * 2/pi.
_PIO2_32 = tuple(_f32(c) for c in (0.6366197723675814, 1.5707963705062866,
                                   -4.371138828673793e-08, -1.7151245100058819e-15))


def _sincos32(e, x, libname, qoff):
    kf, rh, rl = _reduce_pio2(e, e.fabs(x), _PIO2_32)
    s, c = _sincos_kernel32(e, rh, rl)
    y = _fold(e, e, kf, s, c, x, qoff)
    return _out_of_line(e, "numgrad_vir_wide_%s_f32" % libname, _beyond32,
                        lambda e, x, _: _sincos64(e, x, libname, qoff), x, y)


def _beyond32(e, x):
    return e.fabs(x) > _SINCOS32_FAST  # ordered: nan is not


def _sincos_kernel32(e, rh, rl):
    z = rh * rh
    s = rh + e.fma(z * rh, e.horner(z, _S32), rl)
    hz = 0.5 * z
    w = 1.0 - hz
    c = w + (((1.0 - w) - hz) + e.fma(z * z, e.horner(z, _C32), -(rh * rl)))
    return s, c


_BODIES = {
    "exp": _exp_body,
    "expm1": _expm1_body,
    "log": _log_body,
    "tanh": _tanh_body,
    "sigmoid": _sigmoid_body,
    "sin": _sincos_body("sin", 0),
    "cos": _sincos_body("cos", 1),
}


def _emit_body(fn, name, bits, lanes=0):
    fn.args[0].name = "x"
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    e = _E(builder, bits, lanes)
    builder.ret(e.v(_BODIES[name](e, _V(e, fn.args[0]))))


def _get_inline(module, name, bits):
    """The internal alwaysinline function for `name` in `module`, defined on
    first use."""
    fname = "numgrad_vir_%s_f%d" % (name, bits)
    fn = module.globals.get(fname)
    if fn is None:
        ft = _F64 if bits == 64 else _F32
        fn = ir.Function(module, ir.FunctionType(ft, [ft]), fname)
        fn.linkage = "internal"
        for attr in ("alwaysinline", "nounwind", "readnone"):
            fn.attributes.add(attr)
        _emit_body(fn, name, bits)
    return fn


# Vector widths of the outlined variants: 128/256/512-bit registers (the loop
# vectoriser may also interleave, calling one variant twice).
_OUTLINED_LANES = {64: (2, 4, 8), 32: (4, 8, 16)}


def _get_outlined(module, name, bits):
    """A noinline scalar version of `name` plus explicitly vectorised variants
    for 2..16 lanes, tied together by "vector-function-abi-variant" (as for the
    sin/cos slow path): the loop vectoriser calls the variant of its width, so
    the body is compiled once per module however many call sites use it."""
    fname = "numgrad_vir_%s_f%d_ool" % (name, bits)
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    ft = _F64 if bits == 64 else _F32
    fn = ir.Function(module, ir.FunctionType(ft, [ft]), fname)
    # weak_odr: the variants must survive until the vectoriser runs, in the
    # linked final module (see _slow_fn).
    fn.linkage = "weak_odr"
    attrs = AttrsWithStrings(["noinline", "nounwind", "readnone"])
    attrs.extra = ['"vector-function-abi-variant"="%s"' % ",".join(
        "_ZGV_LLVM_N%dv_%s(%s_v%d)" % (n, fname, fname, n) for n in _OUTLINED_LANES[bits])]
    fn.attributes = attrs
    _emit_body(fn, name, bits)
    for n in _OUTLINED_LANES[bits]:
        vt = ir.VectorType(ft, n)
        vf = ir.Function(module, ir.FunctionType(vt, [vt]), "%s_v%d" % (fname, n))
        vf.linkage = "weak_odr"
        for attr in ("noinline", "nounwind", "readnone"):
            vf.attributes.add(attr)
        _emit_body(vf, name, bits, n)
    return fn


# Call sites of one function (and float width) per LLVM module that get the
# body inlined; further ones call the outlined, vector-variant version.
# Measured, both run equally fast (one call per vector is cheap next to the
# body), but every inlined site costs LLVM ~5-15 ms (optimising and emitting
# a vector body plus a scalar remainder copy), while the outlined versions
# cost about as much as a few inlined sites once per module and ~nothing per
# call after that.  0: always outlined; a huge number: always inlined.
INLINE_CALL_SITES = 4

_SITES = weakref.WeakKeyDictionary()  # ir.Module -> {(name, bits): count}


def _get_function(module, name, bits):
    counts = _SITES.setdefault(module, {})
    n = counts.get((name, bits), 0)
    counts[(name, bits)] = n + 1
    if n < INLINE_CALL_SITES:
        return _get_inline(module, name, bits)
    return _get_outlined(module, name, bits)


# Functions that call these get "prefer-vector-width"="512".  LLVM's default
# tuning for AVX-512 Xeons (prefer-256-bit) halves the lanes to avoid the clock
# drop of wide FP units; for these polynomial bodies the doubled lanes win
# (docs/design-notes.md, "Vector math").  Only the calling function is tagged, so the user's other
# Numba code keeps LLVM's choice; on CPUs without AVX-512 the attribute is a
# no-op (the vectoriser never exceeds the legal register width).
PREFER_VECTOR_WIDTH = "512"


def _prefer_wide_vectors(fn):
    add_string_attribute(fn, '"prefer-vector-width"="%s"' % PREFER_VECTOR_WIDTH)

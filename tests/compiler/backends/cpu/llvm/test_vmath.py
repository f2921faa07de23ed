"""Accuracy of numgrad.compiler.backends.cpu.llvm.vmath against NumPy, in ulps.

float64 results are compared with NumPy's float64 ufunc and with the same
function evaluated in long double (64-bit mantissa on x86, the "true" value);
float32 results with NumPy's float64 ufunc on the widened input (exact to far
below a float32 ulp).  Every function is compiled as a one-call-site loop
kernel with the flags numgrad's generated code uses, once with the body
inlined (the default for the first call sites of a kernel) and once calling
the outlined vector-variant version (what later call sites get), for float64
and float32 arrays; all tests share those kernels.
"""

from __future__ import annotations

import math
import os
import re
import warnings

import numpy as np
import pytest
from numba import njit

from numgrad.compiler.backends.cpu.llvm import vmath as vmath_ir
from numgrad.compiler.backends.cpu.llvm import vmath_numba

FM = {"contract", "arcp", "nsz", "afn"}
NAMES = ["exp", "expm1", "log", "tanh", "sigmoid", "sin", "cos"]
DTYPES = [np.float64, np.float32]
MODES = ["inline", "outlined"]
MAX_ULP = 2.0
# Without an 80-bit long double the float64 "true" reference is itself off by ~0.5 ulp.
REF_SLACK = 0.0 if np.finfo(np.longdouble).nmant >= 63 else 0.6
N_PER_RANGE = 100_000


def _sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


REF = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": _sigmoid_ref,
    "sin": np.sin,
    "cos": np.cos,
}

# (lo, hi) uniform, or ("log10", lo, hi) for |x| = 10**U(lo, hi) with random sign.
RANGES64 = {
    "exp": [(-745.5, 709.9), (-30, 30), (-1, 1), ("log10", -320, 0)],
    "expm1": [(-50, 709.9), (-5, 5), (-0.4, 0.4), ("log10", -320, 0)],
    "log": [("log10", -323, 308), (0.5, 2.0), (0.99, 1.01), ("log10", -320, -307)],
    "tanh": [(-25, 25), (-2, 2), (-0.7, 0.7), ("log10", -320, 0)],
    "sigmoid": [(-750, 750), (-45, 45), (-2, 2), ("log10", -320, 0)],
    "sin": [(-10, 10), (-1e5, 1e5), ("log10", -320, 12), ("log10", 10, 308)],
    "cos": [(-10, 10), (-1e5, 1e5), ("log10", -320, 12), ("log10", 10, 308)],
}
RANGES32 = {
    "exp": [(-104, 89), (-30, 30), (-1, 1), ("log10", -45, 0)],
    "expm1": [(-20, 89), (-5, 5), (-0.4, 0.4), ("log10", -45, 0)],
    "log": [("log10", -45, 38), (0.5, 2.0), (0.99, 1.01), ("log10", -45, -37)],
    "tanh": [(-12, 12), (-2, 2), (-0.7, 0.7), ("log10", -45, 0)],
    "sigmoid": [(-110, 110), (-25, 25), (-2, 2), ("log10", -45, 0)],
    # (-8192, 8192): float32's own reduction up to 4096, the float64 one past it.
    "sin": [(-10, 10), (-8192, 8192), (-1e5, 1e5), ("log10", -45, 12), ("log10", 10, 38)],
    "cos": [(-10, 10), (-8192, 8192), (-1e5, 1e5), ("log10", -45, 12), ("log10", 10, 38)],
}

EDGES = [0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 1e-45, 1.2e-38, 1e-20,
         1e-8, 0.25, 0.5, 0.55, 0.625, 1.0, 2.0, math.pi / 4, math.pi / 2, math.pi,
         2.5, 9.0, 10.0, 17.0, 19.0, 20.0, 22.0, 36.0, 37.0, 40.0, 41.0, 87.0, 88.72, 88.73,
         89.0, 103.9, 104.0, 700.0, 709.78, 709.79, 710.0, 745.1, 745.2, 746.0, 1e4,
         2.0 ** 40, 2.0 ** 40 + 1, 2.0 ** 41, 1e15, 1e22, 3.4e38, 1e300,
         1.7976931348623157e308, np.inf, np.nan]


def _edges(dtype):
    e = np.array(EDGES, dtype=np.float64)
    with np.errstate(over="ignore"):
        e = np.concatenate([e, -e]).astype(dtype)
    tiny = np.finfo(dtype).tiny
    extra = np.array([tiny, np.nextafter(tiny, dtype(0)), np.finfo(dtype).smallest_subnormal,
                      np.finfo(dtype).max, np.finfo(dtype).eps], dtype=dtype)
    return np.unique(np.concatenate([e, extra, -extra]))


def _sample(rng, spec, n, dtype):
    if spec[0] == "log10":
        x = 10.0 ** rng.uniform(spec[1], spec[2], n) * rng.choice([-1.0, 1.0], n)
    else:
        x = rng.uniform(spec[0], spec[1], n)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def ulp_error(got, ref, dtype):
    """|got - ref| in ulps of `dtype` at ref (the ulp of ref's own binade).
    Equal infinities / both-NaN count as 0, any other inf/nan as inf."""
    got = np.asarray(got, dtype=np.longdouble)
    ref = np.asarray(ref, dtype=np.longdouble)
    with np.errstate(all="ignore"):
        rd = ref.astype(dtype)  # a reference beyond the dtype's range rounds to inf
        r = np.abs(rd)
        r = np.where(r > np.abs(ref), np.nextafter(r, dtype(0)), r)  # round toward 0
        ulp = np.spacing(r)
        ulp = np.where(r == 0, np.spacing(dtype(0)), ulp).astype(np.longdouble)
        err = np.abs(got - ref) / ulp
    both_nan = np.isnan(got) & np.isnan(ref)
    same = (got == ref) | both_nan | (np.isinf(got) & (got == rd))
    err = np.where(same, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def _make_kernel(fn):
    @njit(fastmath=FM)
    def kernel(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    return kernel


def _compile_both(kernel, inline_sites):
    """Compile kernel for float64 and float32 with the given inlining policy
    (it is read while Numba lowers, so both signatures are compiled here)."""
    old = vmath_ir.INLINE_CALL_SITES
    vmath_ir.INLINE_CALL_SITES = inline_sites
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no Numba warnings either
            for dt in DTYPES:
                kernel(np.ones(4, dt), np.empty(4, dt))
    finally:
        vmath_ir.INLINE_CALL_SITES = old
    return kernel


@pytest.fixture(scope="module")
def kernels():
    """(name, mode) -> njit loop kernel, compiled lazily, shared by the module."""
    cache = {}

    def get(name, mode="inline"):
        if (name, mode) not in cache:
            k = _make_kernel(getattr(vmath_numba, name))
            cache[name, mode] = _compile_both(k, 1 if mode == "inline" else 0)
        return cache[name, mode]

    return get


def _run(kernel, x):
    out = np.empty_like(x)
    kernel(x, out)
    return out


def _references(name, x):
    """(true, numpy) references; for float32 both are float64 NumPy."""
    f = REF[name]
    with np.errstate(all="ignore"):
        if x.dtype == np.float64:
            return f(x.astype(np.longdouble)), f(x)
        ref = f(x.astype(np.float64))
        return ref, ref


def _check(name, x, out, what):
    dtype = x.dtype.type
    true, npref = _references(name, x)
    err = ulp_error(out, true, dtype)
    i = int(np.argmax(err))
    assert err[i] <= MAX_ULP + REF_SLACK, (
        f"{name}({x[i]!r}) = {out[i]!r}, reference {true[i]!r}: {err[i]:.3f} ulp ({what})")
    if name != "sigmoid" and dtype == np.float64:  # NumPy has no sigmoid
        errnp = ulp_error(out, npref, dtype)
        j = int(np.argmax(errnp))
        assert errnp[j] <= MAX_ULP, (
            f"{name}({x[j]!r}) = {out[j]!r}, numpy {npref[j]!r}: {errnp[j]:.3f} ulp ({what})")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", NAMES)
def test_random_points(kernels, name, dtype, mode):
    rng = np.random.default_rng(1234)
    k = kernels(name, mode)
    for spec in (RANGES64 if dtype == np.float64 else RANGES32)[name]:
        x = _sample(rng, spec, N_PER_RANGE, dtype)
        out = _run(k, x)
        assert out.dtype == dtype
        _check(name, x, out, f"range {spec}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", NAMES)
def test_edge_values(kernels, name, dtype, mode):
    x = _edges(dtype)
    out = _run(kernels(name, mode), x)
    _check(name, x, out, "edge values")


_INF, _NAN = np.inf, np.nan
# name -> [(x, expected)], exact (sign of zero included).
EXACT = {
    "exp": [(0.0, 1.0), (-0.0, 1.0), (_INF, _INF), (-_INF, 0.0), (_NAN, _NAN),
            (710.0, _INF), (-746.0, 0.0), (1e300, _INF), (-1e300, 0.0)],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (_INF, _INF), (-_INF, -1.0), (_NAN, _NAN),
              (-50.0, -1.0), (1e300, _INF), (5e-324, 5e-324)],
    "log": [(1.0, 0.0), (0.0, -_INF), (-0.0, -_INF), (-1.0, _NAN), (-_INF, _NAN),
            (_INF, _INF), (_NAN, _NAN), (5e-324, -744.4400719213812)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (_INF, 1.0), (-_INF, -1.0), (_NAN, _NAN),
             (30.0, 1.0), (-30.0, -1.0), (5e-324, 5e-324), (-5e-324, -5e-324)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (_INF, 1.0), (-_INF, 0.0), (_NAN, _NAN),
                (40.0, 1.0), (-800.0, 0.0)],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (_INF, _NAN), (-_INF, _NAN), (_NAN, _NAN),
            (5e-324, 5e-324), (-5e-324, -5e-324)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (_INF, _NAN), (-_INF, _NAN), (_NAN, _NAN)],
}


def _same(a, b):
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", NAMES)
def test_exact_special_values(kernels, name, dtype, mode):
    cases = EXACT[name]
    if dtype == np.float32:  # the float64-only magnitudes become 0/inf in float32
        cases = [(x, y) for x, y in cases if abs(x) in (0.0, 1.0, _INF) or math.isnan(x)]
    x = np.array([c[0] for c in cases], dtype=dtype)
    out = _run(kernels(name, mode), x)
    for xi, yi, (_, want) in zip(x, out, cases):
        assert _same(float(yi), float(dtype(want))), f"{name}({xi!r}) = {yi!r}, want {want!r}"


def test_modes_agree_bit_for_bit(kernels):
    """The outlined vector variants compute exactly what the inlined body does."""
    rng = np.random.default_rng(5)
    for name in NAMES:
        for dt in DTYPES:
            x = np.concatenate([_edges(dt), _sample(rng, (-30, 30), 4099, dt),
                                _sample(rng, ("log10", -40, 30), 4099, dt)])
            a, b = _run(kernels(name, "inline"), x), _run(kernels(name, "outlined"), x)
            nan = np.isnan(a)
            assert np.array_equal(nan, np.isnan(b)), name
            bits = np.int64 if dt == np.float64 else np.int32
            assert np.array_equal(a[~nan].view(bits), b[~nan].view(bits)), name  # -0 too


def test_huge_arguments_mixed_into_vectorised_loop(kernels):
    """Lanes above the Cody-Waite limit take libm's path inside the vector loop."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-4, 4, 4099)
    x[::37] = rng.uniform(1e12, 1e20, x[::37].size)
    x[5::101] = 2.0 ** 40
    x[7::211] = np.inf
    for name in ("sin", "cos"):
        for mode in MODES:
            out = _run(kernels(name, mode), x)
            with np.errstate(invalid="ignore"):
                want = REF[name](x)
            assert np.all(ulp_error(out, want, np.float64) <= 1.0), (name, mode)


def test_types_float32_stays_float32_ints_promote():
    @njit
    def types_of(x32, x64, i, b):
        return (vmath_numba.exp(x32), vmath_numba.expm1(x32), vmath_numba.log(x32),
                vmath_numba.tanh(x32),
                vmath_numba.sigmoid(x32), vmath_numba.sin(x32), vmath_numba.cos(x32),
                vmath_numba.exp(x64), vmath_numba.exp(i), vmath_numba.sin(b))

    res = types_of(np.float32(0.5), 0.5, 2, True)
    sig = types_of.nopython_signatures[0]
    assert [str(t) for t in sig.return_type] == ["float32"] * 7 + ["float64"] * 3
    assert res[0] == np.float32(np.exp(np.float32(0.5)))
    assert res[8] == pytest.approx(math.exp(2), rel=2 ** -52)
    assert res[9] == pytest.approx(math.sin(1.0), rel=2 ** -52)
    assert vmath_numba.exp(2) == pytest.approx(math.exp(2), rel=2 ** -52)  # Python-level call
    assert vmath_numba.log(np.float32(2)) == np.float32(np.log(np.float32(2)))
    assert set(vmath_ir.TEMPLATES) >= {"exp", "log", "tanh", "sigmoid", "sin", "cos"}
    for fname in vmath_ir.TEMPLATES.values():
        assert callable(getattr(vmath_numba, fname))


_PACKED = re.compile(r"\bv(?:fn?m(?:add|sub)\d+|mul|add|sub|div)p[sd]\b[^\n]*%[yz]mm")


@pytest.mark.parametrize("name", NAMES)
def test_inlined_loop_is_vectorised(kernels, name):
    """The point of the module: the loop uses packed ymm/zmm arithmetic."""
    k = kernels(name, "inline")
    for sig in k.signatures:
        asm, own, keep = k.inspect_asm(sig), [], True
        for line in asm.splitlines():  # drop the huge-argument slow-path helpers
            if line and not line[0].isspace() and line.endswith(":") and not line.startswith("."):
                keep = "numgrad_vir_slow" not in line
            elif keep:
                own.append(line)
        assert any(_PACKED.search(line) for line in own), f"{name} {sig}: no packed arithmetic"


@pytest.mark.parametrize("name", ["exp", "sin"])
def test_outlined_loop_calls_vector_variant(kernels, name):
    k = kernels(name, "outlined")
    for sig in k.signatures:
        llvm = k.inspect_llvm(sig)
        assert re.search(r"call [^\n]*@numgrad_vir_%s_f(32|64)_ool_v\d+\(" % name, llvm), sig


def test_many_call_sites_share_outlined_body():
    """Past INLINE_CALL_SITES a kernel calls one outlined body (compile time
    stays flat), and the results are still right."""

    @njit(fastmath=FM)
    def kernel(x, out):
        for i in range(x.size):
            v = x[i]
            out[i] = (vmath_numba.tanh(v) + vmath_numba.tanh(2 * v) + vmath_numba.tanh(3 * v)
                      + vmath_numba.tanh(4 * v) + vmath_numba.tanh(5 * v) + vmath_numba.tanh(6 * v)
                      + vmath_numba.tanh(7 * v) + vmath_numba.tanh(8 * v))

    x = np.linspace(-3, 3, 1001)
    out = _run(kernel, x)
    np.testing.assert_allclose(out, sum(np.tanh(c * x) for c in range(1, 9)), rtol=1e-14,
                               atol=1e-14)
    llvm = kernel.inspect_llvm(kernel.signatures[0])
    assert "numgrad_vir_tanh_f64_ool" in llvm


def test_callers_fastmath_flags_do_not_leak_in():
    """Every instruction of the bodies carries its own flag, so Numba's fastmath
    pass leaves them alone: a fastmath=True caller keeps the NaN/inf handling."""

    @njit(fastmath=True)
    def all_fns(x, out):
        for i in range(x.size):
            v = x[i]
            out[0, i] = vmath_numba.exp(v)
            out[1, i] = vmath_numba.log(v)
            out[2, i] = vmath_numba.tanh(v)
            out[3, i] = vmath_numba.sigmoid(v)
            out[4, i] = vmath_numba.sin(v)
            out[5, i] = vmath_numba.cos(v)

    x = np.array([_NAN, _INF, -_INF, 0.0, -1.0, 1e300, 0.75])
    out = np.empty((6, x.size))
    all_fns(x, out)
    with np.errstate(all="ignore"):
        want = np.stack([np.exp(x), np.log(x), np.tanh(x), _sigmoid_ref(x), np.sin(x),
                         np.cos(x)])
    assert np.all(ulp_error(out, want, np.float64) <= MAX_ULP)


@pytest.mark.skipif(os.environ.get("NG_VMATH_EXHAUSTIVE") != "1",
                    reason="every float32 in [0.5, 8192): ~70 s; NG_VMATH_EXHAUSTIVE=1 runs it")
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_float32_sincos_every_value_in_the_reduced_range(kernels, name):
    """Every float32 with |x| in [0.5, 8192), both signs: float32's own reduction (up to
    4096) and the float64 one past it, against float64 NumPy (0.873 ulp at most when
    this was written)."""
    k = kernels(name)
    for ex in range(-1, 13):
        bits = np.arange(1 << 23, dtype=np.uint32) | np.uint32((ex + 127) << 23)
        x = bits.view(np.float32)
        x = np.concatenate([x, -x])
        _check(name, x, _run(k, x), f"binade 2**{ex}")

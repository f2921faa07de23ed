"""Every op in the registry gives under @ng.jit what it gives eagerly, at special values.

The fused kernels (and the vector math) must agree with eager mode at
+-inf, NaN, +-0, the smallest normals and the largest finites, and on empty extents,
for forward values and gradients. The sweep is built from the op registry, so a new
op is swept without editing this file (or must be listed in EXEMPT with a reason).

Agreement is bit for bit for NaN-ness, infinities and the sign of zero, and for finite
values too, except within the vector math's ulp bound (ops with a vmath implementation)
and one ulp for pow, expm1 and log1p (libm's in kernels, NumPy's own SIMD ones eagerly;
gradients that cancel, such as expm1's out + 1, are bounded absolutely).
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import numgrad as ng
from numgrad.ops.registry import REGISTRY

# Ops whose scalar code is llvm.vmath's polynomials (within 1.6 ulp of libm; 4 allowed).
VMATH = {"exp", "log", "tanh", "sigmoid", "sin", "cos"}
# Ops whose gradient (not value) calls the vector math: erf's is exp(-x*x) * 2/sqrt(pi).
VMATH_GRAD = {"erf"}
# Ops whose kernels call libm where NumPy has its own implementation (1 ulp allowed).
LIBM = {"pow", "pow_scalar", "expm1", "log1p"}
# (and ops.trig's family: 1 ulp apart at acos(0.5), float32 sinh(2.5), atan2(-x, tiny)...)
LIBM |= {"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10",
         "exp2", "atan2"}

# Primitives the sweep does not call one by one, and why.
EXEMPT = {
    "reshape": "data movement (exact by construction)", "contiguous": "data movement",
    "permute": "data movement", "expand": "data movement", "cat": "data movement",
    "stack": "data movement", "getitem": "data movement", "index_add": "NumPy step",
    "index_put": "NumPy step", "gather": "NumPy step (tests/compiler/test_jit_tensor_indexing.py)",
    "scatter_add": "NumPy step", "index_put_at": "NumPy step",
    "matmul": "NumPy's BLAS in both modes", "fill": "constant",
    "copy": "data movement", "pow_scalar_grad": "swept through pow_scalar's gradient",
    "to_dtype": "swept below (float casts)", "where": "swept below",
    "argmax": "swept below", "argmin": "swept below", "max_dim": "swept below",
    "min_dim": "swept below", "cumsum": "NumPy step (the same impl in both modes)",
    "prod": "NumPy step", "dropout_mask": "NumPy step (random bits)",
    "argsort": "NumPy step (NaN, +-0, +-inf under jit: tests/ops/test_sorting.py)",
    "detach": "the identity at run time (ops.structural)",
    "check_targets": "NumPy step on int64 targets (tests/nn/test_loss_target_checks.py)",
    "hook": "calls the user's hook (tests/compiler/test_jit_autograd.py)",
    "to_device": "a copy between devices (tests/compiler/backends/cuda)",
    "im2col": "data movement (NumPy step)", "col2im": "NumPy step (adds, exact in order)",
    "named": "the identity at run time (ops.conv)",
}
# Rows with jit=False never reach compiled code (traced, their callers decompose them: the
# eager losses, linear, relu's backward), so there is no compiled value to compare.
EXEMPT.update((n, "eager only (jit=False)") for n, p in REGISTRY.items() if not p.jit)
# The fused recurrent cells and their gradients: NumPy steps, the same impl in both modes
# (tests/ops/test_recurrent.py).
EXEMPT.update(dict.fromkeys(
    ("lstm_cell_c", "lstm_cell_h", "lstm_cell_c_grad_gates", "lstm_cell_c_grad_c",
     "lstm_cell_h_grad_gates", "lstm_cell_h_grad_c", "gru_cell", "gru_cell_grad_gi",
     "gru_cell_grad_gh", "gru_cell_grad_h", "lstm_layer", "lstm_layer_grad"),
    "NumPy step (ops.recurrent)"))
EXEMPT.update(dict.fromkeys(("max_pool", "max_pool_scatter", "max_pool_gather"),
                            "NumPy step (ops.conv; tests/nn/test_nn_conv_pool.py)"))
EXEMPT.update(dict.fromkeys(("conv", "conv_windows", "conv_windows_add", "conv_cols_grad",
                             "conv_weight_grad"),
                            "NumPy step, the same impl in both modes (tests/ops/test_convolution.py)"))
EXEMPT.update(dict.fromkeys(("asinh_inplace", "acosh_inplace", "atanh_inplace"),
                            "asinh/acosh/atanh's values; PyTorch has no derivative "
                            "(tests/test_dtypes_small_ints.py)"))
EXEMPT.update(dict.fromkeys(("bitwise_left_shift", "bitwise_right_shift"),
                            "integer operands (tests/test_dtypes_small_ints.py)"))
EXEMPT["floor_divide"] = "no derivative to sweep: values below (test_floor_divide_...)"
EXEMPT.update(dict.fromkeys(("linalg_inv", "linalg_det", "linalg_slogdet", "linalg_solve",
                             "linalg_solve_triangular", "linalg_cholesky", "linalg_qr",
                             "linalg_eigh", "linalg_svd", "linalg_pinv", "linalg_matrix_exp",
                             "linalg_vector_norm0"),
                            "LAPACK host step, the same impl in both modes (tests/linalg)"))
EXEMPT.update(dict.fromkeys(("diagonal", "diagonal_embed"), "data movement (ops.diagonals)"))
EXPONENTS = (0, 1, 2, 3, -1, -2, 0.5, -0.5, 1.5, 2.5, -1.5, 0.25)
CLAMPS = ((0.0, None), (None, 0.0), (-1.0, 1.0), (0.0, 0.0), (-0.0, None))
REDUCTIONS = ("sum", "mean", "amax", "amin")


def specials(dtype):
    fi = np.finfo(dtype)
    vals = [-np.inf, -fi.max, -2.5, -1.0, -0.5, -fi.tiny, -fi.smallest_subnormal, -0.0, 0.0,
            fi.smallest_subnormal, fi.tiny, 0.5, 1.0, 2.5, fi.max, np.inf, np.nan]
    return np.array(vals, dtype)


def range_edges(dtype):
    """Where the vector math's range reduction and special cases switch: exp's overflow and
    underflow thresholds, tanh's saturation, huge sin/cos arguments, subnormal logs."""
    if dtype == np.float64:
        edges = [709.78, 709.79, -708.39, -708.4, -745.13, -745.14, -746.0, 1e-300, 19.1, 22.0,
                 -22.0, 40.0, 1e6, 1e15, 1e22, -1e22, 3.14159265358979, 1.5707963267948966]
    else:
        edges = [88.72, 88.73, -87.33, -87.34, -103.97, -103.98, -105.0, 1e-38, 9.0, 10.0,
                 -10.0, 20.0, 1e4, 1e6, 1e20, -1e20, 3.1415927, 1.5707964]
    return np.array(edges + [-e for e in edges], dtype)


def _unary_cases():
    cases = []
    for name, p in REGISTRY.items():
        if p.kind not in ("elementwise", "compare") or len(p.inputs) != 1 or name in EXEMPT:
            continue
        if name == "pow_scalar":
            cases += [(f"pow_scalar[{e}]", lambda x, e=e: x ** e) for e in EXPONENTS]
        elif name == "clamp":
            cases += [(f"clamp[{lo},{hi}]", lambda x, lo=lo, hi=hi: ng.clamp(x, lo, hi))
                      for lo, hi in CLAMPS]
        elif name in ("logical_not", "bitwise_not"):  # (bitwise: integer/bool operands)
            cases.append((name, lambda x, p=p: p(x != 0)))
        else:
            assert not p.params, f"{name} has params: add them to the sweep"
            cases.append((name, lambda x, p=p: p(x)))
    # Folds that only hold without signed zeros or exact reciprocals (the kernels must not
    # be compiled with `nsz`/`arcp`): -0 + 0 is +0, and 1 / sqrt(x) is no rsqrt estimate.
    cases += [("add_zero", lambda x: x + 0.0), ("sub_neg_zero", lambda x: x - (-0.0)),
              ("div_const", lambda x: x / 3.0), ("recip_sqrt", lambda x: 1.0 / x.sqrt())]
    cases += [("to_other_float", lambda x: x.double() if x.dtype == ng.float32 else x.float()),
              ("to_bool", lambda x: x.bool())]
    return cases


def _binary_cases():
    cases = []
    for name, p in REGISTRY.items():
        if p.kind not in ("elementwise", "compare") or len(p.inputs) != 2 or name in EXEMPT:
            continue
        if name == "pow_scalar_grad":
            continue
        if name in ("logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor"):
            cases.append((name, lambda x, y, p=p: p(x != 0, y > 0)))
        else:
            cases.append((name, lambda x, y, p=p: p(x, y)))
    cases.append(("where", lambda x, y: ng.where(x > y, x, y)))
    return cases


def test_every_primitive_is_swept():
    swept = {n for n, _ in _unary_cases()} | {n for n, _ in _binary_cases()}
    swept = {n.split("[")[0] for n in swept} | set(REDUCTIONS)
    missing = [n for n in REGISTRY if n not in swept and n not in EXEMPT]
    assert not missing, f"add these primitives to the special-value sweep: {missing}"


def _assert_same(got, want, what, ulps, vmath=False):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if want.dtype.kind != "f":
        bad = got != want
        assert not bad.any(), f"{what}: {np.flatnonzero(bad)[:8]}"
        return
    nan = np.isnan(want)
    bad = nan != np.isnan(got)
    fin = np.isfinite(want) & np.isfinite(got)
    bad |= ~nan & ~fin & (got != want)                         # infinities, exactly
    bad |= (want == 0) & (got == 0) & (np.signbit(want) != np.signbit(got))  # signed zeros
    with np.errstate(all="ignore"):
        scale = np.abs(want).astype(want.dtype)
        if vmath:  # a derivative such as 1 - tanh(x)**2 cancels: bound the error absolutely
            scale = np.maximum(scale, want.dtype.type(1))
        tol = ulps * np.spacing(scale)
        bad |= fin & (np.abs(got - want) > tol)
    if bad.any():
        i = np.flatnonzero(bad)[:8]
        raise AssertionError(f"{what}: at {i.tolist()} jit {got.ravel()[i].tolist()} "
                             f"eager {want.ravel()[i].tolist()}")


def _ulps(name):
    base = name.split("[")[0]
    if base in VMATH:
        return 4
    # Kernels call libm's pow, expm1 and log1p; NumPy has its own (SIMD) ones, 1 ulp apart
    # at 2.5 ** 2.5, expm1(-2.5), float32 log1p(0.5).
    return 1 if base in LIBM else 0


def _sweep(cases, arrays_per_case, dtype, **jit_options):
    """One jitted function runs every case on its own inputs (one plan, so one compile)."""
    n_in = len(arrays_per_case)

    def all_cases(*xs):
        return tuple(fn(*xs[k * n_in:(k + 1) * n_in]) for k, (_, fn) in enumerate(cases))

    def run(f):
        xs = [ng.tensor(a.copy(), requires_grad=True) for _ in cases for a in arrays_per_case]
        with np.errstate(all="ignore"):
            outs = f(*xs)
            diff = [o for o in outs if o.requires_grad]
            grads = ng.autograd.grad(diff, xs, grad_outputs=[ng.ones_like(o) for o in diff],
                                     allow_unused=True, materialize_grads=True) if diff else []
        return [o.detach().numpy() for o in outs], [g.numpy() for g in grads], \
            [o.requires_grad for o in outs]

    eager = run(all_cases)
    jitted = ng.jit(all_cases, **jit_options)
    with warnings.catch_warnings():
        # A kernel that fails to compile falls back to the NumPy reference backend with a
        # warning: that would compare eager with itself, so it fails the sweep instead.
        warnings.filterwarnings("error", message=".*could not compile", category=RuntimeWarning)
        jit = run(jitted)
    assert jitted.stats.kernels > 0
    assert eager[2] == jit[2]
    for (name, _), got, want in zip(cases, jit[0], eager[0]):
        _assert_same(got, want, f"{name} forward ({dtype})", _ulps(name))
    for k, (got, want) in enumerate(zip(jit[1], eager[1])):
        name = cases[k // n_in][0]
        _assert_same(got, want, f"{name} grad of input {k % n_in} ({dtype})",
                     max(_ulps(name), 4 * (name in VMATH_GRAD)) * 2,
                     vmath=name.split("[")[0] in VMATH | LIBM | VMATH_GRAD)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary_ops_at_special_values(dtype):
    _sweep(_unary_cases(), [specials(dtype)], dtype)


@pytest.mark.parametrize("vector_math", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vector_math_at_its_range_edges(dtype, vector_math):
    cases = [(n, lambda x, p=REGISTRY[n]: p(x)) for n in sorted(VMATH)]
    values = np.concatenate([range_edges(dtype), specials(dtype)])
    _sweep(cases, [values], dtype, vector_math=vector_math)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_ops_at_special_values(dtype):
    v = specials(dtype)
    x, y = (np.array(a, dtype) for a in zip(*itertools.product(v, v)))
    _sweep(_binary_cases(), [x, y], dtype)


def _reduction_cases():
    cases = []
    for name in REDUCTIONS:
        for dim in (None, 0, 1):
            cases.append((f"{name}[{dim}]", lambda x, n=name, d=dim:
                          getattr(ng, n)(x) if d is None else getattr(ng, n)(x, d)))
    cases += [("max_dim", lambda x: ng.max(x, 1)[0]), ("min_dim", lambda x: ng.min(x, 0)[0]),
              ("argmax", lambda x: ng.argmax(x, 1).double()),
              ("argmin", lambda x: ng.argmin(x, 0).double())]
    return cases


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reductions_at_special_values(dtype):
    v = specials(dtype)
    rng = np.random.default_rng(0)
    x = np.stack([rng.permutation(v) for _ in range(5)])          # every column mixed
    x = np.concatenate([x, np.full((1, len(v)), np.inf, dtype),    # a row of +inf ...
                        np.full((1, len(v)), -np.inf, dtype)]).astype(dtype)
    _sweep(_reduction_cases(), [x], dtype)


EMPTY_CASES = [
    ("exp", lambda x: x.exp()), ("relu", lambda x: x.relu()), ("mul", lambda x: x * x),
    ("sum[0]", lambda x: x.sum(0)), ("sum[1]", lambda x: x.sum(1)), ("sum", lambda x: x.sum()),
    ("mean[0]", lambda x: x.mean(0)), ("mean[1]", lambda x: x.mean(1)),
    ("amax[1]", lambda x: x.amax(1)), ("amin[1]", lambda x: x.amin(1)),
    ("softmax[1]", lambda x: x.softmax(1)), ("softmax[0]", lambda x: x.softmax(0)),
    ("log_softmax[0]", lambda x: x.log_softmax(0)),
]


def test_softmax_and_logsumexp_over_an_empty_dim_match_torch():
    import torch
    from numgrad.nn import functional as F
    for fn in (lambda m, x: m.softmax(x, 0), lambda m, x: m.log_softmax(x, 0),
               lambda m, x: m.logsumexp(x, 0)):
        want = fn(torch, torch.zeros(0, 3, dtype=torch.float64))
        for f in (lambda x: fn(F, x), ng.jit(lambda x: fn(F, x))):
            got = f(ng.zeros(0, 3, dtype=ng.float64))
            assert got.shape == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_empty_extents():
    _sweep(EMPTY_CASES, [np.zeros((0, 3))], np.float64)


@pytest.mark.parametrize("fn,error", [
    (lambda x: x.amax(0), "amax\\(\\): Expected reduction dim 0 to have non-zero size"),
    (lambda x: x.amin((0, 1)), "amin\\(\\): Expected reduction dim 0 to have non-zero size"),
    (lambda x: x.max(0), "max\\(\\): Expected reduction dim 0 to have non-zero size"),
    (lambda x: x.argmin(0), "argmin\\(\\): Expected reduction dim 0 to have non-zero size"),
])
def test_empty_max_raises_like_torch(fn, error):
    import torch
    with pytest.raises(IndexError, match=error):
        fn(torch.zeros(0, 3))
    for f in (fn, ng.jit(fn)):
        with pytest.raises(IndexError, match=error):
            f(ng.zeros(0, 3, requires_grad=True))


# Kernels once had `reassoc` on every float op, and LLVM folded this to x * 1.
def test_products_of_constants_overflow_as_eagerly():
    def f(x):
        return x * 1e300 * 1e-300
    x = ng.tensor(np.full(16, 1e10))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ng.jit(f)(x).numpy(), f(x).numpy())


_floor_divide = ng.jit(lambda x, y: x // y)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_floor_divide_at_special_values(dtype):
    # PyTorch has no derivative for //, so the gradient sweep leaves it out: its values are
    # compared here, compiled against eager bit for bit and eager against torch.
    import torch
    v = specials(dtype)
    x, y = (a.ravel().copy() for a in np.meshgrid(v, v))
    eager = (ng.tensor(x) // ng.tensor(y)).numpy()
    compiled = _floor_divide(ng.tensor(x), ng.tensor(y)).numpy()
    want = (torch.from_numpy(x) // torch.from_numpy(y)).numpy()
    for got in (compiled, want):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(eager))
        ok = ~np.isnan(eager)
        np.testing.assert_array_equal(got[ok], eager[ok])
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(eager[ok]))

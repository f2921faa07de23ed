"""Values and first and second derivatives at +-inf, NaN and +-0 agree with PyTorch,
eagerly and through @ng.jit.

PyTorch's rules: relu is `x < 0 ? 0 : x` and its gradient `out <= 0 ? 0 : g` (1 at NaN);
maximum/minimum give each input all of `g` unless it lost (half at a tie), selected rather
than multiplied by a 0/1 mask, so a second derivative never meets 0 * inf; abs's gradient
is g * sign(x) with sign(NaN) = 0; x ** 0.5 and x ** -0.5 are sqrt and rsqrt, so at -0 they
are -0 and -inf (and the gradient of x ** 0.5 there is -inf).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng

VALS = [-np.inf, -2.0, -1.0, -0.0, 0.0, 0.5, 1.0, np.inf, np.nan]


def _zero(lib):
    return lib.zeros((), dtype=lib.float64)


CASES = {
    "relu": lambda lib, x: lib.relu(x),
    "maximum0": lambda lib, x: lib.maximum(x, _zero(lib)),
    "maximum0_swapped": lambda lib, x: lib.maximum(_zero(lib), x),
    "minimum0": lambda lib, x: lib.minimum(x, _zero(lib)),
    "maximum_self": lambda lib, x: lib.maximum(x, x),
    "clamp": lambda lib, x: x.clamp(-1.0, 0.5),
    "clamp_min0": lambda lib, x: x.clamp(min=0.0),
    "clamp_max0": lambda lib, x: x.clamp(max=0.0),
    "abs": lambda lib, x: x.abs(),
    "sign": lambda lib, x: x.sign() + x,
    "pow_half": lambda lib, x: x ** 0.5,
    "pow_minus_half": lambda lib, x: x ** -0.5,
    "pow_three_halves": lambda lib, x: x ** 1.5,
    "sqrt": lambda lib, x: x.sqrt(),
    "sqrt_abs": lambda lib, x: x.abs().sqrt(),
    "log_abs": lambda lib, x: x.abs().log(),
}


NAMES = sorted(CASES)


def _grad(lib, *a, **k):
    return (torch.autograd.grad if lib is torch else ng.autograd.grad)(*a, **k)


def _all_cases(lib):
    def run(*xs):
        return tuple(CASES[n](lib, x) for n, x in zip(NAMES, xs))
    return run


def _derivatives(lib, fn):
    """Per case: f(x) * x, its gradient, and the gradient of sum(grad ** 2)."""
    xs = [lib.tensor(VALS, dtype=lib.float64, requires_grad=True) for _ in NAMES]
    with np.errstate(all="ignore"):
        ys = [y * x for y, x in zip(fn(*xs), xs)]
        gs = _grad(lib, sum(y.sum() for y in ys), xs, create_graph=True)
        ggs = _grad(lib, sum((g * g).sum() for g in gs), xs)
    return {n: [t.detach().numpy().copy() for t in ts] for n, *ts in zip(NAMES, ys, gs, ggs)}


def _same_bits(got, want, what, zero_sign=True):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    sign_ok = (np.signbit(got) == np.signbit(want)) | (not zero_sign)
    # Special values (inf, NaN, signed zeros) must match bit for bit; a finite non-zero
    # result may differ by one ulp, because torch's sqrt is not always correctly rounded:
    # where MKL serves it (Intel CPUs) torch.sqrt(0.5) is 0.7071067811865475, one ulp
    # below the IEEE result numpy and numgrad give.
    with np.errstate(invalid="ignore"):  # inf - inf; the comparison is False there
        near = (want != 0) & (np.abs(got - want) <= np.spacing(np.abs(want)))
    same = (got == want) & sign_ok | near | np.isnan(got) & np.isnan(want)
    assert same.all(), f"{what}: at {[VALS[i] for i in np.flatnonzero(~same)]}: got " \
                       f"{got[~same].tolist()}, torch {want[~same].tolist()}"


@pytest.fixture(scope="module")
def results():
    return {"torch": _derivatives(torch, _all_cases(torch)),
            "eager": _derivatives(ng, _all_cases(ng)),
            "jit": _derivatives(ng, ng.jit(_all_cases(ng)))}


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", NAMES)
def test_values_and_two_derivatives_match_torch(results, name, mode):
    for what, a, b in zip(("value", "grad", "second derivative"), results[mode][name],
                          results["torch"][name]):
        # torch.maximum(-0., 0.) is -0 in its scalar loop and +0 in its vectorised one
        # (arrays of 8 or more): there is no rule to follow for the sign of a tied zero.
        _same_bits(a, b, f"{name} {what} ({mode})", zero_sign="mum" not in name)

"""Shared helpers for the numgrad test suite.

PyTorch is the oracle: helpers here move values between numgrad and torch, compare
them, and check gradients numerically (central differences in float64). torch is
imported lazily so that test modules which do not need it still collect without it.

Test modules import these helpers with ``from conftest import ...`` (pytest puts
``tests/`` on ``sys.path`` because the suite has no ``__init__.py`` files).
"""

from __future__ import annotations

import os

# The CUDA tests (tests/compiler/backends/cuda) run in Numba's simulator unless told
# otherwise: it must be chosen before Numba is first imported. NUMBA_ENABLE_CUDASIM=0
# tests a real GPU.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import numgrad as ng  # noqa: E402


def pytest_xdist_auto_num_workers(config):
    """How many processes ``-n auto`` (pyproject's addopts) starts: the whole suite, run with
    no paths, gets one per core (at most 4: each holds torch, Numba and its compiled plans);
    a chosen file or test runs in this process, where a worker's start would cost more than it
    saves. ``--dist loadfile`` keeps each file in one worker, so the plans a file compiles
    once at module scope stay shared by its tests."""
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return 0
    return max(1, min(4, os.cpu_count() or 1))


# Tolerances per dtype name for value comparisons against torch.
TOL = {
    "float32": dict(rtol=1e-4, atol=1e-5),
    "float64": dict(rtol=1e-9, atol=1e-10),
}
# Finite differences: float64, central differences with step EPS.
FD_EPS = 1e-6
FD_TOL = dict(rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- conversion
def to_numpy(t) -> np.ndarray | None:
    """A copy of ``t`` (numgrad tensor, torch tensor, ndarray or scalar) as an ndarray."""
    if t is None:
        return None
    if type(t).__module__.startswith("torch"):
        t = t.detach().cpu()
        if t._is_zerotensor():  # torch may hand back a lazily-zero tensor from double backward
            return np.zeros(tuple(t.shape), dtype=t.new_zeros(()).numpy().dtype)
        return t.numpy().copy()
    if isinstance(t, ng.Tensor):
        return np.array(t.detach().numpy(), copy=True)
    return np.array(t, copy=True)


def to_torch(t, requires_grad: bool | None = None):
    """A torch tensor with ``t``'s values and dtype (a fresh leaf)."""
    import torch

    arr = to_numpy(t)
    out = torch.from_numpy(np.ascontiguousarray(arr))
    if requires_grad is None:
        requires_grad = bool(getattr(t, "requires_grad", False))
    if requires_grad:
        out.requires_grad_(True)
    return out


def torch_dtype_of(ng_dtype):
    """The torch dtype that corresponds to a numgrad dtype."""
    import torch

    table = {
        ng.float32: torch.float32,
        ng.float64: torch.float64,
        ng.int64: torch.int64,
        ng.bool: torch.bool,
    }
    for k, v in table.items():
        if k == ng_dtype:
            return v
    raise KeyError(ng_dtype)


def ng_dtype_of(torch_dtype):
    """The numgrad dtype that corresponds to a torch dtype."""
    import torch

    table = {
        torch.float32: ng.float32,
        torch.float64: ng.float64,
        torch.int64: ng.int64,
        torch.bool: ng.bool,
    }
    return table[torch_dtype]


# ----------------------------------------------------------------------------- comparison
def tol_for(dtype_name: str) -> dict:
    return TOL.get(dtype_name, dict(rtol=0, atol=0))


def assert_close(actual, expected, *, rtol=None, atol=None, check_dtype=True, msg=""):
    """Assert a numgrad tensor matches a torch tensor (or array) in shape, dtype and value.

    ``None`` matches only ``None``. Tolerances default to the expected dtype's entry in TOL.
    """
    if expected is None or actual is None:
        assert actual is None and expected is None, f"{msg}: got {actual!r}, expected {expected!r}"
        return
    a = to_numpy(actual)
    e = to_numpy(expected)
    if isinstance(actual, ng.Tensor):
        assert tuple(actual.shape) == tuple(e.shape), (
            f"{msg}: shape {tuple(actual.shape)} != {tuple(e.shape)}"
        )
    assert a.shape == e.shape, f"{msg}: shape {a.shape} != {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"{msg}: dtype {a.dtype} != {e.dtype}"
        if isinstance(actual, ng.Tensor) and type(expected).__module__.startswith("torch"):
            assert actual.dtype == ng_dtype_of(expected.dtype), (
                f"{msg}: dtype {actual.dtype} != {expected.dtype}"
            )
    tol = tol_for(str(e.dtype))
    rtol = tol["rtol"] if rtol is None else rtol
    atol = tol["atol"] if atol is None else atol
    if e.dtype == np.bool_ or np.issubdtype(e.dtype, np.integer):
        np.testing.assert_array_equal(a, e, err_msg=msg)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=msg)


def as_tuple(out):
    """Normalise an op's result (tensor, tuple, namedtuple) to a tuple of outputs."""
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


def is_float_dtype_name(name: str) -> bool:
    return name in ("float32", "float64")


# ----------------------------------------------------------------------------- random inputs
def sample_array(shape, dtype: str, domain, rng: np.random.Generator) -> np.ndarray:
    """Random array of ``shape`` and NumPy ``dtype`` drawn from ``domain``.

    domain: "real" (-2, 2), "pos" (0.5, 2), "nonzero" +-(0.5, 2), "unit" (-0.9, 0.9),
    or a (lo, hi) pair. Integer dtypes draw small nonzero ints for "nonzero"/"pos".
    """
    return np.asarray(_sample(tuple(shape), dtype, domain, rng), dtype=dtype)


def _sample(shape, dtype, domain, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int64":
        if domain == "pos":
            return rng.integers(1, 5, size=shape).astype(np.int64)
        if domain == "nonzero":
            mag = rng.integers(1, 5, size=shape)
            sign = np.where(rng.random(shape) < 0.5, -1, 1)
            return (mag * sign).astype(np.int64)
        return rng.integers(-5, 6, size=shape).astype(np.int64)
    if domain == "real":
        lo, hi = -2.0, 2.0
    elif domain == "pos":
        lo, hi = 0.5, 2.0
    elif domain == "unit":
        lo, hi = -0.9, 0.9
    elif domain == "nonzero":
        mag = rng.uniform(0.5, 2.0, size=shape)
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return (mag * sign).astype(dtype)
    else:
        lo, hi = domain
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def rng_for(*key) -> np.random.Generator:
    """A deterministic generator keyed by the test's identity."""
    import zlib

    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ----------------------------------------------------------------------------- numeric grads
def check_numeric_grad(fn, arrays, rng=None, wrt=None):
    """Check ``fn``'s gradients against central differences (float64) with
    ``ng.autograd.gradcheck``: every float64 array (or those in ``wrt``) is an input that
    requires grad; outputs that are not float64 are left out."""
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype == np.float64]
    xs = [ng.tensor(a.copy(), requires_grad=i in wrt) for i, a in enumerate(arrays)]

    def float_outputs(*ts):
        return tuple(o for o in as_tuple(fn(*ts)) if o.dtype == ng.float64)

    outs = float_outputs(*xs)
    if not all(np.isfinite(to_numpy(o)).all() for o in outs):
        # A degenerate sample (a variance with no degrees of freedom): gradcheck, as
        # PyTorch's, never calls NaN Jacobians equal; the gradient must not be finite either.
        gs = ng.autograd.grad(outs, [xs[i] for i in wrt], [ng.ones_like(o) for o in outs],
                              allow_unused=True)
        assert all(g is None or not np.isfinite(to_numpy(g)).all() for g in gs)
        return
    assert ng.autograd.gradcheck(float_outputs, xs, eps=FD_EPS, check_undefined_grad=False,
                                 **FD_TOL)


def second_order(lib, fn, arrays, vs, ws):
    """Grad of <w, J^T v> with respect to inputs and v, in ``lib`` (ng or torch).

    Builds the first-order vjp with create_graph=True (v requires grad too, so the
    first-order result always has a graph), then differentiates a random projection
    of it. Unused inputs give zeros. Returns a list of ndarrays: inputs then v's.
    """
    xs = [lib.tensor(a.copy(), requires_grad=a.dtype == np.float64) for a in arrays]
    float_idx = [i for i, a in enumerate(arrays) if a.dtype == np.float64]
    outs = [o for o in as_tuple(fn(lib, *xs)) if o.dtype == lib.float64]
    v_t = [lib.tensor(v.copy(), requires_grad=True) for v in vs]
    prims = [xs[i] for i in float_idx]
    grad = lib.autograd.grad
    g1 = grad(outs, prims, grad_outputs=v_t, create_graph=True, allow_unused=True)
    total = None
    for g, w in zip(g1, ws):
        if g is None:
            continue
        term = (g * lib.tensor(w)).sum()
        total = term if total is None else total + term
    assert total is not None
    targets = prims + v_t
    g2 = grad(total, targets, allow_unused=True)
    res = []
    for t, g in zip(targets, g2):
        if g is None:
            res.append(np.zeros(tuple(t.shape)))
        else:
            res.append(to_numpy(g))
    return res


@pytest.fixture(autouse=True)
def _grad_mode_is_restored():
    """Every test starts and must end with grad mode enabled."""
    is_enabled = getattr(ng, "is_grad_enabled", None)
    if is_enabled is None:  # grad mode not implemented yet: nothing to guard
        yield
        return
    assert is_enabled(), "grad mode was disabled before the test started"
    yield
    enabled = is_enabled()
    if not enabled:
        ng.set_grad_enabled(True)
    assert enabled, "test left grad mode disabled"


def pytest_addoption(parser):
    parser.addoption("--long", type=int, default=0, metavar="N",
                     help="run N random programs per backend in the jit fuzzer "
                          "(tests/compiler/test_jit_fuzz.py) instead of the CI budget")

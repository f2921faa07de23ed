"""The Numba CPU emitter against eager numgrad, on one "kitchen sink" function.

Each distinct kernel costs Numba seconds to compile, so one function exercises every
scalar template, broadcasting on either side, partial reductions over leading, inner
and several dims (with and without keepdim), full reductions fused into loops, matmul
with fused prologue/epilogue, and layout ops between stages. Its forward values and
its gradients (through the compiled backward) must match eager mode, which is itself
checked against PyTorch by the op-table tests.
"""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
import numgrad.nn.functional as F


def sink(a, b, c, w):
    # a: (3, 4), b: (4,), c: (3, 1), w: (4, 5)
    e1 = ng.exp(a * 0.3) + ng.log(ng.abs(b) + 1.0) - ng.sqrt(c * c + 0.5)
    e2 = ng.sin(a) * ng.cos(b) + ng.tanh(a - c) * ng.sigmoid(b)
    e3 = ng.where(a > c, ng.relu(a), ng.maximum(a, b) - ng.minimum(c, b))
    e4 = (a ** 2 + a ** 3 * 0.1 + (ng.abs(a) + 0.1) ** 0.5 + ng.clamp(a, -0.5, 0.5)) / (1.5 + c)
    e5 = ng.abs(a) ** b.abs()
    s0 = e1.sum(0)                      # leading dim
    s1 = e2.sum(1, keepdim=True)        # inner dim, keepdim
    s2 = e3.mean((0, 1))                # all dims via a tuple
    m1 = e4.amax(1)                     # partial max
    m0 = e5.amin(0, keepdim=True)       # partial min
    mm = F.relu(e1 @ w + 0.1)           # matmul with fused epilogue
    sm = F.log_softmax(mm, 1)           # reductions feeding elementwise feeding reductions
    t = (e2.t() * 2.0).reshape(2, 6)    # layout between stages
    total = (s0.sum() + s1.sum() + s2 + m1.sum() + m0.sum() + sm.sum() + t.sum()
             + e5.sum())
    return total, (s0, s1, s2, m1, m0, sm, t)


_rng = np.random.default_rng(7)
_INPUTS = {"a": _rng.standard_normal((3, 4)), "b": _rng.standard_normal(4),
           "c": _rng.standard_normal((3, 1)), "w": _rng.standard_normal((4, 5))}
SINK = {dt: ng.jit(sink) for dt in ("float64", "float32")}


def _inputs(dtype):
    return [ng.tensor(_INPUTS[k].astype(dtype), requires_grad=True) for k in "abcw"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kitchen_sink_matches_eager(dtype):
    tol = 1e-10 if dtype == "float64" else 2e-4
    ins_c, ins_e = _inputs(dtype), _inputs(dtype)
    total_c, parts_c = SINK[dtype](*ins_c)
    total_e, parts_e = sink(*ins_e)
    assert total_c.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(total_c.item(), total_e.item(), rtol=tol, atol=tol)
    for pc, pe in zip(parts_c, parts_e):
        assert pc.shape == pe.shape and pc.dtype is pe.dtype
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=tol, atol=tol)
    total_c.backward()
    total_e.backward()
    for xc, xe in zip(ins_c, ins_e):
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    assert SINK[dtype].stats.kernels >= 2  # really compiled, not interpreted


def test_kitchen_sink_source_is_fused():
    src = SINK["float64"].source(*_inputs("float64"))
    # matmul is NumPy's BLAS between fused stages: code before and after it is compiled.
    assert "np.dot(" not in src and src.count("@njit(") >= 2
    # Far fewer loops than equations: elementwise chains share loops.
    graph = SINK["float64"].trace(*_inputs("float64"))
    assert src.count("for i") < len(graph.eqns) / 2


def long_chain(x):
    for _ in range(40):  # ~120 fused statements: over PARALLEL_INLINE_MAX_BODY
        x = ng.tanh(x) * 1.01 + 0.01
    return x.sum()


def test_long_parallel_loop_runs_in_chunks_and_matches_eager():
    from numgrad.compiler.codegen import cpu
    rng = np.random.default_rng(3)
    data = rng.standard_normal(4096)
    f = ng.jit(long_chain)
    xc = ng.tensor(data, requires_grad=True)
    xe = ng.tensor(data, requires_grad=True)
    rc, re_ = f(xc), long_chain(xe)
    src = f.source(xc)
    assert cpu.PARALLEL_INLINE_MAX_BODY < 120
    assert "prange(" in src and "_g0(lo, hi" in src  # the body went into a chunk function
    np.testing.assert_allclose(rc.item(), re_.item(), rtol=1e-10)
    rc.backward()
    re_.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-10, atol=1e-12)

"""backends.cpu.llvm.body: long outlined loop bodies written as LLVM IR instead of Numba chunk
functions. Elementwise results must have the bits of the Numba-compiled loop
(``NUMGRAD_LLVM_BODY=0``), through the masked tail of a chunk and however the body
is cut into segment functions; sums add in another fixed order (both tiers the same
bits); everything agrees with torch."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad.compiler.backends.cpu.llvm import body as llvm_body

# 1003 elements: chunks of 16 (two 8-lane vectors per block on AVX-512), the last of 11
# (a masked tail); 8 steps of 5 ops: 41 statements, over PARALLEL_INLINE_MAX_BODY, and
# enough work for a parallel (chunked) loop.
N_ELEMS, STEPS = 1003, 8
DATA = np.random.default_rng(5).standard_normal(N_ELEMS) * 3


def chain(lib, x, steps=STEPS):
    for _ in range(steps):
        x = lib.tanh(lib.sin(x) * 1.01 + 0.1 * x)
    return x.sum()


def _run(steps, enabled, monkeypatch):
    """Value and gradient of the chain, f(x).backward() and jit(value_and_grad), first call
    (serial tier) and third call (prange tier)."""
    monkeypatch.setenv("NUMGRAD_LLVM_BODY", "1" if enabled else "0")
    f = ng.jit(lambda x: chain(ng, x, steps))
    vg = ng.jit(ng.value_and_grad(lambda x: chain(ng, x, steps)))
    out, src = [], None
    for _ in range(3):
        x = ng.tensor(DATA, requires_grad=True)
        y = f(x)
        y.backward()
        v, g = vg(ng.tensor(DATA))
        out.append([y.detach().numpy(), x.grad.numpy(), v.numpy(), g.numpy()])
        src = src or f.source(ng.tensor(DATA, requires_grad=True))
    return out, src


@pytest.fixture(scope="module")
def numba_path():
    mp = pytest.MonkeyPatch()
    try:
        return _run(STEPS, False, mp)
    finally:
        mp.undo()


def test_ir_bodies_give_the_bits_of_the_numba_loop_in_both_tiers(numba_path, monkeypatch):
    ref, ref_src = numba_path
    got, src = _run(STEPS, True, monkeypatch)
    assert "chunk_kernel(" in src and "_g0(lo, m" not in src
    assert "_g0(lo, m" in ref_src and "chunk_kernel(" not in ref_src
    for call in (0, 2):  # serial tier, then the prange tier
        y, gx, v, g = got[call]
        assert np.array_equal(gx, ref[call][1]) and np.array_equal(g, ref[call][3])
        # Sums add in another (fixed) order: lane by lane, then the lanes in turn.
        np.testing.assert_allclose([y, v], [ref[call][0], ref[call][2]], rtol=1e-14)
    for a, b in zip(got[0], got[2]):  # the tiers agree bit for bit
        assert np.array_equal(a, b)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(DATA, requires_grad=True)
    ty = chain(torch, tx)
    ty.backward()
    np.testing.assert_allclose(got[0][0], ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[0][1], tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_segment_cuts_change_no_bits(numba_path, monkeypatch):
    """Cut into segment functions of 5 statements (values between them in stack slots):
    without fast-math flags nothing is fused across a cut."""
    monkeypatch.setattr(llvm_body, "SEGMENT_OPS", 5)
    monkeypatch.setattr(llvm_body, "SEGMENT_MIN_BODY", 10)
    got, _ = _run(STEPS, True, monkeypatch)
    for i in (1, 3):  # the gradients
        assert np.array_equal(got[0][i], numba_path[0][0][i])


SPECIALS = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30,
                     88.7, -104.0, 3.0, -2.5,
                     # sin/cos: either side of float32's own reduction (|x| <= 4096)
                     4096.0, -4097.0, 5000.5, -1e6, 3e9], dtype=np.float32)


def _many_ops(x):
    y = x
    for _ in range(3):
        a = (-y.abs()).exp() / (1 + y * y)
        b = y.sigmoid() - y.abs().sqrt()
        c = (-y).relu() + y.cos() * y.sin() + (1 + y.abs()).log()
        y = a + b * 0.5 + c
    return y.sum()


def test_float32_ops_and_special_values_match_the_numba_loop(monkeypatch):
    """exp, log, sqrt, sigmoid, sin, cos (paired), relu, abs, neg, div over +-inf, NaN,
    +-0 and subnormals, float32, through a masked tail: the same bits as the Numba loop,
    and eager mode's values."""
    data = np.resize(np.concatenate([SPECIALS, np.linspace(-5, 5, 64, dtype=np.float32)]),
                     4099).astype(np.float32)
    res = {}
    for enabled in (True, False):
        monkeypatch.setenv("NUMGRAD_LLVM_BODY", "1" if enabled else "0")
        f = ng.jit(_many_ops)
        x = ng.tensor(data, requires_grad=True)
        y = f(x)
        y.backward()
        res[enabled] = (y.detach().numpy(), x.grad.numpy(),
                        f.source(ng.tensor(data, requires_grad=True)))
    assert "chunk_kernel(" in res[True][2] and "chunk_kernel(" not in res[False][2]
    # A fallback to the NumPy backend keeps the failed source: it must not have happened
    # (a cos before its sin once did, and the comparison then passed vacuously).
    assert "failed to compile" not in res[True][2] + res[False][2]
    a, b = res[True][1], res[False][1]  # the gradient (the sum is NaN: a NaN input)
    assert np.array_equal(a, b, equal_nan=True)
    assert np.array_equal(np.signbit(a), np.signbit(b))
    xe = ng.tensor(data, requires_grad=True)
    with np.errstate(all="ignore"):  # eager mode's NumPy warns on the special values
        _many_ops(xe).backward()
    ge = xe.grad.numpy()
    np.testing.assert_array_equal(np.isnan(res[True][1]), np.isnan(ge))
    fin = np.isfinite(ge)
    np.testing.assert_allclose(res[True][1][fin], ge[fin], rtol=2e-5, atol=1e-6)


def test_spec_declines_what_it_does_not_render():
    """A loop with an op outside the rendered set keeps the Numba chunk function."""
    from numgrad.compiler.schedule import Loop, Ref, Stmt
    from numgrad.ops.registry import REGISTRY

    class V:
        def __init__(self, name):
            self.name, self.dtype, self.shape = name, np.dtype("float64"), (4,)

    x, y = V("x"), V("y")
    loop = Loop(0, (4,), True)
    loop.body = [Stmt(y, REGISTRY["erf"], [Ref("array", x, (4,))], {}, x.dtype, None)]
    assert llvm_body.build_spec(loop) is None
    loop.body = [Stmt(y, REGISTRY["tanh"], [Ref("array", x, (4,))], {}, x.dtype, None,
                      store=True)]
    _, names = llvm_body.build_spec(loop)
    assert names == ("f_x", "f_y")


def test_a_serial_loop_is_one_call_over_the_whole_loop(monkeypatch):
    """5 steps (26 statements) stay under the parallel work threshold: the serial loop is
    one call of the IR body, with the Numba loop's gradient bits."""
    res = {}
    for enabled in (True, False):
        monkeypatch.setenv("NUMGRAD_LLVM_BODY", "1" if enabled else "0")
        f = ng.jit(lambda x: chain(ng, x, 5))
        x = ng.tensor(DATA, requires_grad=True)
        y = f(x)
        y.backward()
        res[enabled] = (y.item(), x.grad.numpy(), f.source(ng.tensor(DATA, requires_grad=True)))
    src = res[True][2]
    assert "_b0(0, 1003, f_x)" in src  # the forward: serial, one call (the backward has
    # more work: chunked under prange)
    assert np.array_equal(res[True][1], res[False][1])
    np.testing.assert_allclose(res[True][0], res[False][0], rtol=1e-14)


def test_shape_generic_plans_run_ir_bodies_with_the_static_plans_bits():
    """A shape-generic plan (the second length of a 1-d input) reads its extents and
    chunk counts at run time, under a Numba shell; its long loops are llvm_body bodies too
    (they take the chunk's start and length as arguments). Same bits as the static plan
    compiled for that length, value and gradients, and a third length reuses it."""
    def vg():
        return ng.jit(ng.value_and_grad(lambda x: chain(ng, x), argnums=0))

    g = vg()
    rng = np.random.default_rng(8)
    for n in (1003, 2500, 777):
        xs = rng.standard_normal(n) * 3
        v, d = g(ng.tensor(xs))
        src = g.source(ng.tensor(xs))
        if n != 1003:
            assert "e_a = " in src and "chunk_kernel(" in src  # generic, with IR bodies
        vs, ds = vg()(ng.tensor(xs))  # a fresh jit: the static plan for this length
        assert v.numpy().tobytes() == vs.numpy().tobytes()
        assert d.numpy().tobytes() == ds.numpy().tobytes()
    assert g.stats.compiles == 2

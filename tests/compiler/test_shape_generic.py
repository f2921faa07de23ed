"""Shape-generic plans: the second shape of the same ranks compiles kernels that read
their extents at run time, and every later shape of those ranks reuses them.

Checked against torch (values and gradients) at each shape, including broadcasting,
partial and full reductions and a mean, so a wrong extent anywhere shows up.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402


def _f(lib, x, w):
    s = lib.sigmoid(x) * w + x * x
    return (s.sum(dim=1) * 0.5).sum() + s.sum()


def f_ng(x, w):
    return _f(ng, x, w)


F = ng.jit(f_ng, parallel=False)
SHAPES = [((2, 3), (1, 3)), ((3, 5), (1, 5)), ((4, 2), (1, 2)), ((6, 7), (1, 7))]


def _check(shapes):
    rng = np.random.default_rng(sum(shapes[0]))
    xs, ws = (rng.standard_normal(s) for s in shapes)
    x, w = ng.tensor(xs, requires_grad=True), ng.tensor(ws, requires_grad=True)
    tx, tw = torch.tensor(xs, requires_grad=True), torch.tensor(ws, requires_grad=True)
    out = F(x, w)
    out.backward()
    ref = _f(torch, tx, tw)
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-15)
    return x, w


def test_later_shapes_of_the_same_ranks_reuse_the_generic_kernels():
    first = _check(SHAPES[0])
    assert F.stats.compiles == 1
    assert "e_a = " not in F.source(*first)  # the first shape keeps its static plan
    second = _check(SHAPES[1])
    assert F.stats.compiles == 2
    generic = F.source(*second)
    assert "e_a = v_" in generic
    for shapes in SHAPES[2:]:
        later = _check(shapes)
        assert F.source(*later) == generic
    assert F.stats.compiles == 2 and F.stats.traces == len(SHAPES)
    assert F.stats.retraces == len(SHAPES) - 1
    _check(SHAPES[0])  # the static plan is still there, and still right
    assert F.stats.traces == len(SHAPES)


def _means(x, w):
    return (x * w).mean(dim=1).sum() + x.mean()


MEANS = ng.jit(_means, parallel=False)


def test_mean_extents_are_read_at_run_time_too():
    """(Forward only: the backward's count is a kernel input of a generic plan, which
    test_shape_generic_constants.py checks.)"""
    sources = []
    for shapes in SHAPES:
        rng = np.random.default_rng(sum(shapes[0]))
        xs, ws = (rng.standard_normal(s) for s in shapes)
        out = MEANS(ng.tensor(xs), ng.tensor(ws))
        want = _means(torch.tensor(xs), torch.tensor(ws))
        np.testing.assert_allclose(out.item(), want.item(), rtol=1e-12)
        sources.append(MEANS.source(ng.tensor(xs), ng.tensor(ws)))
    assert all(s == sources[1] for s in sources[2:])
    assert MEANS.stats.compiles == 2


def w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()


def test_generic_parallel_loop_runs_threaded_and_serial():
    """A generic plan emits its loop twice, threaded above the work threshold and serial
    below, deciding at run time; both agree with the static plans (to rounding: LLVM
    sums the chunks' partial sums differently when it knows their count)."""
    rng = np.random.default_rng(3)
    big, small = (ng.tensor(rng.standard_normal(n)) for n in (5000, 300))
    y_big, y_small = (ng.tensor(rng.standard_normal(n)) for n in (5000, 300))
    static = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)), parallel=True)
    generic = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)), parallel=True)
    generic(ng.tensor(rng.standard_normal(4000)), ng.tensor(rng.standard_normal(4000)))
    for x, y in ((big, y_big), (small, y_small)):
        a, b = static(x, y), generic(x, y)
        np.testing.assert_allclose(a[0].numpy(), b[0].numpy(), rtol=1e-13)
        for ga, gb in zip(a[1], b[1]):
            np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-13)
    src = generic.source(big, y_big)
    assert "prange(nchunks" in src and "else:" in src
    assert generic.source(small, y_small) == src
    assert generic.stats.compiles == 2  # 4000 (static), then one generic for 5000 and 300


@pytest.mark.parametrize("seed", [3001])
def test_random_programs_through_generic_plans_match_eager(seed):
    """The compiler fuzzer's broadcast/reduction programs, at three shapes of rank 2:
    the second and third run through the generic plan."""
    import warnings
    from test_jit_random_programs import make_program
    program = make_program(seed)
    f = ng.jit(program)
    rng = np.random.default_rng(seed)
    for shape in ((5, 7), (3, 4), (6, 2)):
        xs, ys = rng.standard_normal(shape), rng.standard_normal(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            eager = [ng.tensor(xs, requires_grad=True), ng.tensor(ys, requires_grad=True)]
            want = program(*eager)
            want.backward()
            jit_in = [ng.tensor(xs, requires_grad=True), ng.tensor(ys, requires_grad=True)]
            got = f(*jit_in)
            got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-9, atol=1e-12)
        for a, b in zip(jit_in, eager):
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7,
                                           atol=1e-10)
    assert "e_a = v_" in f.source(*jit_in)

"""Shape-generic CUDA plans (Numba's simulator): from the second shape of the same ranks,
kernels take their extents (and the graph's one-element constants, a mean's 1/count
among them) as arguments, so every later shape reuses the compiled module: three shapes
compile two programs' worth of kernels, not three. Values and gradients are checked
against numgrad's CPU eager at every shape: a matmul, a broadcast, partial and full
reductions, means, a transpose and a slice (``cuda_cases.generic_case``); and
``loss(x).backward()``'s joint program (compiler.speculate) is generic too.

A generic plan's matmul renders every blocking of the register-blocked kernel
(``matmul_kernel``), extents as arguments, and its launch takes the blocking the plan's
shape calls for: three shapes whose products take the three blockings in turn compile
two programs, with values and gradients equal to NumPy's and the CPU's."""
from __future__ import annotations

import re

import numpy as np
import pytest
from cuda_cases import GENERIC_SHAPES, generic_args, generic_case, require_simulator

import numgrad as ng
from numgrad.compiler.backends.cuda import matmul_kernel as mk


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def _check(args, shapes, seed):
    want = generic_args(shapes, "cpu", seed=seed)
    out = generic_case(*want)
    out.backward()
    for a, b in zip(args, want):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-12,
                                   atol=1e-14)
    return out.item()


def test_three_shapes_compile_two_programs_and_agree_with_the_cpu():
    f = ng.jit(generic_case)
    sources, modules, joints = [], [], []
    joint_compiles = 0   # (stats.compiles counts the one-pass program's compiles too)
    for k, shapes in enumerate(GENERIC_SHAPES):
        args = generic_args(shapes, "cuda", seed=k)
        out = f(*args)
        out.backward()    # the ordinary backward, seeded with 1: arms the speculation
        np.testing.assert_allclose(out.item(), _check(args, shapes, k), rtol=1e-12)
        assert f.stats.compiles - joint_compiles == min(k + 1, 2)
        assert f.stats.traces == k + 1
        plan = f._plan(tuple(args), {})[0]
        sources.append(plan.source())
        modules.append([p.module for p in plan.programs])
        if k:   # loss(x).backward() again: the joint program, generic as well
            for a in args:
                a.grad = None
            before = f.stats.compiles
            f(*args).backward()
            joint_compiles += f.stats.compiles - before
            assert plan.spec.joint is not None
            joints.append(plan.spec.joint)
            _check(args, shapes, k)
    assert joint_compiles == 1    # compiled for the second shape, reused by the third
    static, generic, later = sources
    bound = re.compile(r"while [io] < (?!1:)\d+:")   # a loop bounded by a literal extent
    assert bound.search(static) and "n0_1" not in static and "c_v" not in static
    assert not bound.search(generic)
    assert "n0_1" in generic and "c_v" in generic  # extents and constants as arguments
    assert later == generic
    assert all(a is b for a, b in zip(modules[1], modules[2]))  # the same kernels run
    assert not any(a is b for a, b in zip(modules[0], modules[1]))
    assert joints[0].module is joints[1].module


def _product(x, w):
    return (x @ w).sin().sum()


# (x, w) shapes whose forward product takes, in turn: the thin blocking (a static plan),
# the small one, the large one (with BIG_OUTPUT lowered: the simulator runs every thread
# as Python, so a product big enough for it by default would take minutes).
MATMUL_SHAPES = [((3, 5), (5, 4)), ((20, 3), (3, 24)), ((64, 2), (2, 64))]


def test_a_generic_matmul_takes_the_blocking_of_each_shape(monkeypatch):
    monkeypatch.setattr(mk, "BIG_OUTPUT", 64 * 64)
    f = ng.jit(_product)
    want_tiling = [mk.THIN, mk.SMALL, mk.LARGE]
    modules = []
    for k, shapes in enumerate(MATMUL_SHAPES):
        x, w = generic_args(shapes, "cuda", seed=k)
        out = f(x, w)
        out.backward()
        xc, wc = generic_args(shapes, "cpu", seed=k)
        ref = _product(xc, wc)
        ref.backward()
        np.testing.assert_allclose(out.item(), np.sin(xc.detach().numpy() @ wc.detach().numpy())
                                   .sum(), rtol=1e-12)
        for a, b in ((x, xc), (w, wc)):
            np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-12,
                                       atol=1e-14)
        assert f.stats.compiles == min(k + 1, 2)
        plan = f._plan((x, w), {})[0]
        modules.append([p.module for p in plan.programs])
        fwd = plan.programs[0]
        (step,) = [st for st in fwd.cuda_steps if st[0] == "tiled_mm"]
        dims = step[2]
        assert (dims.m, dims.k, dims.n) == (shapes[0][0], shapes[0][1], shapes[1][1])
        # A static plan renders its shape's blocking only; a generic one all three.
        assert set(step[1]) == ({want_tiling[0]} if k == 0 else set(mk.TILINGS))
        (launch,) = [kern for kern in fwd._prepared[x.device].kernels()
                     if "_matmul" in kern.disp.py_func.__name__]
        til = want_tiling[k]
        assert mk.tiling(dims) is til
        assert launch.disp.py_func.__name__ == step[1][til][0]
        assert (launch.grid, launch.block) == mk.launch_shape(dims, til)
        if k:   # m, k, n passed by value, this plan's
            assert [v for v, _ in step[1][til][1]][:3] == [dims.m, dims.k, dims.n]
    assert all(a is b for a, b in zip(modules[1], modules[2]))

"""Shape-generic CUDA plans (Numba's simulator): from the second shape of the same ranks,
kernels take their extents (and the graph's one-element constants, a mean's 1/count
among them) as arguments, so every later shape reuses the compiled module: three shapes
compile two programs' worth of kernels, not three. Values and gradients are checked
against numgrad's CPU eager at every shape: a matmul, a broadcast, partial and full
reductions, means, a transpose and a slice (``cuda_cases.generic_case``); and
``loss(x).backward()``'s joint program (compiler.speculate) is generic too."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numgrad as ng
from cuda_cases import GENERIC_SHAPES, generic_args, generic_case, require_simulator


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
    for k, shapes in enumerate(GENERIC_SHAPES):
        args = generic_args(shapes, "cuda", seed=k)
        out = f(*args)
        out.backward()    # the ordinary backward, seeded with 1: arms the speculation
        np.testing.assert_allclose(out.item(), _check(args, shapes, k), rtol=1e-12)
        assert f.stats.compiles == min(k + 1, 2) and f.stats.traces == k + 1
        plan = f._plan(tuple(args), {})[0]
        sources.append(plan.source())
        modules.append([p.module for p in plan.programs])
        if k:   # loss(x).backward() again: the joint program, generic as well
            for a in args:
                a.grad = None
            f(*args).backward()
            assert plan.spec.joint is not None
            joints.append(plan.spec.joint)
            _check(args, shapes, k)
    static, generic, later = sources
    bound = re.compile(r"while [io] < (?!1:)\d+:")   # a loop bounded by a literal extent
    assert bound.search(static) and "n0_1" not in static and "c_v" not in static
    assert not bound.search(generic)
    assert "n0_1" in generic and "c_v" in generic  # extents and constants as arguments
    assert later == generic
    assert all(a is b for a, b in zip(modules[1], modules[2]))  # the same kernels run
    assert not any(a is b for a, b in zip(modules[0], modules[1]))
    assert joints[0].module is joints[1].module

"""What a compiled call returns belongs to the caller (CPU).

A folded constant can be a graph's output: ``ng.ones(3)`` returned as it is, or the
gradient of ``(2 * x).sum()``. The caller may write to what it got (``g.mul_(0.1)``, an
optimizer's in-place update); the next call must not return what the caller wrote. And a
hook may write its gradient in place (``g.mul_(3)``), the implicit seed of ``backward()``
included, as PyTorch allows. Expected values come from eager numgrad and from PyTorch.
"""
from __future__ import annotations

import numpy as np
import torch

import numgrad as ng


def test_a_constant_output_written_by_the_caller_is_not_returned_again():
    @ng.jit
    def ones(x):
        return ng.ones(3)

    @ng.jit
    def pair(x):
        return ng.full((2,), 5.0), x * 2

    x = ng.randn(3)
    for _ in range(3):
        out = ones(x)
        np.testing.assert_array_equal(out.numpy(), np.ones(3, np.float32))
        out.add_(1)
        a, _ = pair(x)
        np.testing.assert_array_equal(a.numpy(), np.full(2, 5.0, np.float32))
        a.mul_(0)


def test_a_constant_gradient_written_by_the_caller_is_not_returned_again():
    def f(x):
        return (2 * x).sum()       # d/dx: an array of 2s, folded to a constant

    vg = ng.jit(ng.value_and_grad(f))
    loss = ng.jit(f)
    x = ng.randn(4, dtype=ng.float64, requires_grad=True)
    for _ in range(4):             # past the plan's tiers and the one-pass program
        _, g = vg(x.detach())
        np.testing.assert_array_equal(g.numpy(), np.full(4, 2.0))
        g.mul_(100)
        x.grad = None
        loss(x).backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))
        x.grad.mul_(100)


def _hooked_grad(lib, compiled):
    x = lib.ones(3, dtype=lib.float64, requires_grad=True)

    def f(x):
        return (x * x).sum()

    fn = ng.jit(f) if compiled else f
    for _ in range(3):              # the seed is shared between calls: it must stay 1
        x.grad = None
        y = fn(x)
        y.register_hook(lambda g: g.mul_(3))
        y.backward()
    return x.grad.detach().numpy()


def test_a_hook_may_write_the_implicit_seed_in_place_as_in_pytorch():
    want = _hooked_grad(torch, False)
    np.testing.assert_array_equal(_hooked_grad(ng, False), want)
    np.testing.assert_array_equal(_hooked_grad(ng, True), want)
    # ...and a backward without the hook still starts from 1.
    x = ng.ones(3, dtype=ng.float64, requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0))

"""Transforms and jit compose in any order (the README's usage example does this)."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


def _loss(lib, x, y):
    return (lib.tanh(x * y + lib.sin(x)) * lib.exp(-y * y)).sum()


LOSS = ng.jit(lambda x, y: _loss(ng, x, y))
VG_OF_JIT = ng.jit(ng.value_and_grad(LOSS, argnums=(0, 1)))
GRAD_OF_JIT = ng.grad(LOSS, argnums=1)


def test_jit_of_value_and_grad_of_jit_matches_torch():
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal(50), rng.standard_normal(50)
    value, (gx, gy) = VG_OF_JIT(ng.tensor(a), ng.tensor(b))
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.tensor(b, requires_grad=True)
    tv = _loss(torch, tx, ty)
    tv.backward()
    np.testing.assert_allclose(value.item(), tv.item(), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gy.numpy(), ty.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(GRAD_OF_JIT(ng.tensor(a), ng.tensor(b)).numpy(),
                               ty.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert VG_OF_JIT.fn is not LOSS.fn  # wrapping must not take over the inner function

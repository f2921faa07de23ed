"""Tensors a jitted function makes on the device (Numba's simulator).

``ng.ones(3, device="cuda")`` inside a jitted function is a constant of the plan: baked in
by value, placed by the CUDA backend, and its device takes part in choosing the backend
as a captured tensor's does, so mixing it with CPU tensors raises eager mode's error. What
a call returns is the caller's to write, constants included."""
from __future__ import annotations

import numpy as np
import pytest
from cuda_cases import require_simulator

import numgrad as ng


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def test_a_device_tensor_made_inside_is_a_constant_on_the_device():
    def f(x):
        return (x + ng.ones(3, device="cuda")) * ng.full((3,), 2.0, device="cuda")

    x = ng.randn(3, device="cuda")
    got = ng.jit(f)(x)
    assert got.device == x.device
    np.testing.assert_array_equal(got.cpu().numpy(), f(x).cpu().numpy())


def test_a_returned_device_constant_is_the_callers_own():
    @ng.jit
    def ones(x):
        return ng.ones(3, device="cuda")

    x = ng.randn(3, device="cuda")
    for _ in range(3):
        out = ones(x)
        np.testing.assert_array_equal(out.cpu().numpy(), np.ones(3, np.float32))
        out.add_(1)


def test_a_device_constant_with_cpu_inputs_raises_eager_modes_error():
    def f(x):
        return x + ng.ones(3, device="cuda")

    with pytest.raises(RuntimeError) as eager:
        f(ng.randn(3))
    with pytest.raises(RuntimeError) as compiled:
        ng.jit(f)(ng.randn(3))
    assert str(compiled.value) == str(eager.value)

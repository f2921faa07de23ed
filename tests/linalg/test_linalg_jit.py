"""numgrad.linalg under @ng.jit: the LAPACK rows run as host steps between the compiled
kernels (on host copies for CUDA tensors, here Numba's simulator), with eager mode's values,
gradients and errors. One small function per device, compiled once per module."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
import numgrad.linalg as LA

RNG = np.random.default_rng(11)
A = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
B = RNG.standard_normal((2, 3, 2))


def loss(a, b):
    x = LA.solve(a, b)
    w, v = LA.eigh(a @ a.mT)
    return (x * x).sum() + (w.unsqueeze(-2) * v ** 4).sum()


JITTED = ng.jit(loss)


def _run(fn, a, b, device="cpu"):
    x = ng.tensor(a, device=device, requires_grad=True)
    y = ng.tensor(b, device=device, requires_grad=True)
    out = fn(x, y)
    out.backward()
    return out.item(), x.grad.cpu().numpy(), y.grad.cpu().numpy()


def test_jit_equals_eager():
    want = _run(loss, A, B)
    for _ in range(2):  # the first call compiles, the second runs the cached plan
        got = _run(JITTED, A, B)
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-10)


def test_jit_raises_eagers_linalg_error():
    singular = A.copy()
    singular[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
    with pytest.raises(LA.LinAlgError) as eager:
        loss(ng.tensor(singular), ng.tensor(B))
    with pytest.raises(LA.LinAlgError) as jitted:
        JITTED(ng.tensor(singular), ng.tensor(B))
    assert str(jitted.value) == str(eager.value)
    assert "(Batch element 1)" in str(eager.value)


def write_diagonal(a):
    b = a * 2
    b.diagonal(0, -2, -1).add_(a.diagonal(0, -2, -1) ** 2)
    return (b * b).sum()


def test_jit_writes_through_a_diagonal_view():
    want = _run(lambda x, y: write_diagonal(x) + y.sum(), A, B)
    jitted = ng.jit(write_diagonal)
    got = _run(lambda x, y: jitted(x) + y.sum(), A, B)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def small(a):
    return LA.inv(a).sum() + LA.det(a) + LA.eigvalsh(a @ a.mT).sum()


def test_cuda_copies_to_the_host_and_back():
    import numgrad.cuda.device as cuda_device
    if not (cuda_device.simulated() or cuda_device.available()):
        pytest.skip("neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")
    a = A[0, :2, :2]
    want = _run(lambda x, y: small(x) + y.sum(), a, a)
    x = ng.tensor(a, device="cuda", requires_grad=True)
    for fn in (ng.jit(small), small):  # compiled, then eager on device tensors
        x.grad = None
        out = fn(x)
        out.backward()
        assert str(out.device) == str(x.grad.device) == "cuda:0"
        assert out.item() == pytest.approx(want[0] - a.sum(), rel=1e-12)
        np.testing.assert_allclose(x.grad.cpu().numpy(), want[1], rtol=1e-10)

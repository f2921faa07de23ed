"""The jit matrix on CUDA tensors (Numba's simulator on machines without a GPU): values
and gradients equal the CPU's, every result lives on the device, the simulator path was
really taken, and reductions give the same bits on every run."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from cuda_cases import CASES, JITTED, require_simulator, result, run, tensors

pytestmark = pytest.mark.usefixtures("_cuda")


@pytest.fixture(scope="module")
def _cuda():
    require_simulator()


def _tol(name):
    return dict(rtol=2e-5, atol=1e-6) if "f32" in name else dict(rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_cuda_jit_equals_cpu(name):
    cuda_out, cuda_grads, devices = result(name)
    # The reference is the CPU run of the same Python function (eager mode, which the CPU
    # jit matrix ties to torch).
    cpu_out, cpu_grads, _ = run(CASES[name][0], tensors(name, "cpu"))
    assert set(devices) == {"cuda:0"}, devices
    for a, b in zip(cuda_out, cpu_out):
        np.testing.assert_allclose(a, b, **_tol(name))
    for a, b in zip(cuda_grads, cpu_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, **_tol(name))


def test_the_simulator_ran_the_kernels():
    from numba.cuda import config
    if not config.ENABLE_CUDASIM:
        pytest.skip("a real GPU ran these tests")
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    x, y = tensors("w2", "cuda")
    plan, _ = JITTED["w2"]._plan((x, y), {})
    kernels = [k for k in plan.fwd._fns.values() if hasattr(k, "py_func") or
               isinstance(k, FakeCUDAKernel)]
    assert kernels and all(isinstance(k, FakeCUDAKernel) for k in kernels)
    assert type(x._data).__name__ == "CudaArray"
    assert type(x._data.buf).__name__ == "FakeCUDAArray"


def test_reductions_same_bits_every_run():
    x, y = tensors("w2", "cuda")
    a = JITTED["w2"](x, y).item()
    b = JITTED["w2"](x, y).item()
    c = ng.tanh(x * y + ng.sin(x)).mul(ng.exp(-y * y)).sum().item()
    assert a == b
    assert a == pytest.approx(c, rel=1e-12)


def test_eager_cuda_ops_agree_with_cpu():
    a = np.random.default_rng(0).standard_normal((3, 4))
    for device in ("cuda", "cpu"):
        x = ng.tensor(a, device=device, requires_grad=True)
        y = (x.exp() * x.sum(dim=0) - x.amax(dim=1, keepdim=True)) @ x.t()
        loss = y.softmax(dim=1).pow(2).mean()
        loss.backward()
        if device == "cuda":
            got = (loss.item(), x.grad.cpu().numpy())
            assert x.grad.device == ng.device("cuda:0")
    np.testing.assert_allclose(got[0], loss.item(), rtol=1e-12)
    np.testing.assert_allclose(got[1], x.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_eager_kernels_cached_per_op_and_shape():
    from numgrad.cuda.eager import INTERPRETER
    x = ng.ones(5, device="cuda")
    (x * 2.0).exp()
    before = INTERPRETER.compiles
    (x * 3.0).exp()   # another scalar: same program (scalars are inputs, not literals)
    assert INTERPRETER.compiles == before
    ng.ones(6, device="cuda").exp()
    assert INTERPRETER.compiles == before + 1


def test_cuda_helpers_cover_the_cpu_helpers():
    # The registry's lowerings name its Helper rows; both backends build them (a helper
    # without a body is a Python builtin, such as abs, which both compile themselves).
    from numgrad.compiler.backends.cuda import scalar as cuda_scalar
    from numgrad.compiler.backends.cpu import scalar
    built = [n for n, h in scalar.HELPERS.items() if h.body or h.cpu or h.cuda]
    assert built and [n for n in built if not hasattr(cuda_scalar, n)] == []
    assert [n for n in built if not hasattr(scalar, n)] == []

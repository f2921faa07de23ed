"""A derivative PyTorch does not have raises when the backward runs, under @ng.jit as eagerly
(and as torch.compile): the call itself works, forward-only calls never raise."""
import re

import numpy as np
import pytest
import torch

import numgrad as ng

DATA = [0.5, 0.7]


def _inplace(name):
    def f(x):
        y = x * 2
        getattr(y, name)()
        return y * 3
    return f


INPLACE = {n: _inplace(n) for n in ("asinh_", "acosh_", "atanh_")}
INPLACE_JIT = {n: ng.jit(f) for n, f in INPLACE.items()}


def _floor(x):
    return x // 0.3 + x


def _two(x):
    return x // 0.3, x * 3


def _qr_r(A):
    return ng.linalg.qr(A, mode="r").R


floor_jit, two_jit, qr_r_jit = ng.jit(_floor), ng.jit(_two), ng.jit(_qr_r)


def _torch_error(fn, *args):
    """The exception torch's backward of ``fn(*args).sum()`` raises."""
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    with pytest.raises(Exception) as info:
        fn(*ts).sum().backward()
    return info.type, re.escape(str(info.value))


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_without_derivative_raises_at_backward(name):
    fn = INPLACE[name]
    data = [1.5, 2.0] if name == "acosh_" else DATA
    error, text = _torch_error(fn, data)
    x = ng.tensor(data, requires_grad=True)
    for _ in range(3):   # the same plan again (and no one-pass speculation sneaks it in early)
        y = INPLACE_JIT[name](x)
        np.testing.assert_allclose(y.detach().numpy(), fn(ng.tensor(data)).numpy(), rtol=1e-6)
        with pytest.raises(error, match=text):
            y.sum().backward()
    with ng.no_grad():
        assert not INPLACE_JIT[name](x).requires_grad


def test_floor_divide_raises_at_backward():
    error, text = _torch_error(lambda t: t // 0.3 + t, DATA)
    x = ng.tensor(DATA, requires_grad=True)
    y = floor_jit(x)
    assert y.tolist() == pytest.approx(_floor(ng.tensor(DATA)).tolist())
    with pytest.raises(error, match=text):
        y.sum().backward()


def test_an_output_that_does_not_reach_the_node_differentiates():
    x, t = ng.tensor(DATA, requires_grad=True), torch.tensor(DATA, requires_grad=True)
    _, b = two_jit(x)
    b.sum().backward()
    (t * 3).sum().backward()
    assert x.grad.tolist() == t.grad.tolist()
    a, b = two_jit(x)   # a gradient reaching it, even a zero one, raises (as torch's)
    error, text = _torch_error(lambda s: (s // 0.3) * 0 + s, DATA)
    with pytest.raises(error, match=text):
        (a.sum() * 0 + b.sum()).backward()


def test_qr_mode_r_raises_at_backward():
    a = np.random.default_rng(0).standard_normal((3, 2))
    error, text = _torch_error(lambda t: torch.linalg.qr(t, mode="r").R, a)
    r = qr_r_jit(ng.tensor(a, requires_grad=True))
    with pytest.raises(error, match=text):
        r.sum().backward()


def test_grad_transform_needs_the_gradient_at_the_call():
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        torch.func.grad(lambda t: (t // 0.3).sum())(torch.tensor(DATA))
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        ng.grad(lambda x: (x // 0.3).sum())(ng.tensor(DATA))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's NumPy scalars
def test_cuda_plan_raises_at_backward_too():
    if not ng.cuda.is_available():
        pytest.skip("no CUDA device (nor simulator)")
    x = ng.tensor(DATA, device="cuda", requires_grad=True)
    a, b = two_jit(x)
    b.sum().backward()
    assert x.grad.cpu().tolist() == [3.0, 3.0]
    a, _ = two_jit(x)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        a.sum().backward()

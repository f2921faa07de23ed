"""ops.window_kernels' Numba loops against torch, on the geometry they index by hand: max
pooling's gradient (scatter) and second order (gather) in 1-d and 2-d with stride, dilation,
padding and ceil_mode, ties included; the convolution's input gradient (the windows'
adjoint) in 1-d and 2-d with stride, dilation and padding; the pool primitive under @ng.jit."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.nn import functional as F

RNG = np.random.default_rng(0)


def _grads(lib, fn, arrays, g, order2):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib.nn.functional, *ts)
    grad = torch.autograd.grad if lib is torch else ng.autograd.grad
    # through out * out, so that the first-order gradients depend on the inputs
    first = grad((out * out * lib.tensor(g)).sum(), ts, create_graph=order2)
    res = [out.detach().numpy()] + [a.detach().numpy() for a in first]
    if order2:  # a cubic of the first-order gradients back to the inputs
        res += [a.numpy() for a in grad(sum((a * a * a).sum() for a in first), ts)]
    return res


def _check(fn, shapes, dtype, order2=False, tol=1e-6, ties=False):
    """``fn`` in torch and numgrad: values, gradients (and second order) on random inputs,
    small integers where ``ties`` (windows with several maxima: the first one wins)."""
    arrays = [(RNG.integers(-2, 3, s) if ties else RNG.standard_normal(s)).astype(dtype)
              for s in shapes]
    out = fn(torch.nn.functional, *[torch.tensor(a) for a in arrays])
    g = RNG.standard_normal(tuple(out.shape)).astype(dtype)
    want = _grads(torch, fn, arrays, g, order2)
    got = _grads(ng, fn, arrays, g, order2)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol,
                                   atol=tol)


POOLS = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 7, 6), 3, (2, 1), 1, (1, 2), False),
    ((1, 2, 6, 7), (2, 3), 2, (1, 0), 1, True),
    ((2, 3, 6, 8), 2, None, 0, 1, False),  # windows that tile the input (LeNet's pools)
]


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil", POOLS)
def test_max_pool2d_gradients_and_second_order_match_torch(shape, kernel, stride, padding,
                                                           dilation, ceil):
    def fn(F_, x):
        return F_.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode=ceil)
    _check(fn, [shape], np.float32, order2=True)
    _check(fn, [shape], np.float32, ties=True)


@pytest.mark.parametrize("length,kernel,stride,padding,dilation", [(11, 3, 2, 1, 2),
                                                                    (12, 3, 3, 0, 1)])
def test_max_pool1d_gradients_and_second_order_match_torch(length, kernel, stride, padding,
                                                           dilation):
    def fn(F_, x):
        return F_.max_pool1d(x, kernel, stride, padding=padding, dilation=dilation,
                             ceil_mode=True)
    _check(fn, [(2, 3, length)], np.float32, order2=True)
    _check(fn, [(2, 3, length)], np.float32, ties=True)


@pytest.mark.parametrize("xs,ws,stride,padding,dilation", [
    ((2, 3, 8, 7), (4, 3, 3, 2), (2, 1), (1, 2), (1, 2)),
    ((1, 2, 6, 6), (3, 2, 2, 3), 3, 0, (2, 1)),
])
def test_conv2d_input_gradient_matches_torch(xs, ws, stride, padding, dilation):
    def fn(F_, x, w):
        return F_.conv2d(x, w, None, stride, padding, dilation)
    _check(fn, [xs, ws], np.float32, tol=1e-5)


def test_conv1d_input_gradient_matches_torch():
    def fn(F_, x, w, b):
        return F_.conv1d(x, w, b, stride=2, padding=2, dilation=2)
    _check(fn, [(2, 3, 9), (4, 3, 3), (4,)], np.float32, tol=1e-5)


@ng.jit
def _pooled_loss(x):
    return (F.max_pool2d(x * x, 2, 1, padding=1) ** 2).sum() + F.max_pool1d(x.flatten(2), 3,
                                                                              2).sum()


def test_jit_runs_the_pool_primitive_and_agrees_with_torch_on_ties_and_nan():
    x = RNG.integers(-2, 3, (2, 2, 3, 4)).astype(np.float32)
    x[0, 0, 1, 1] = np.nan
    tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    TF = torch.nn.functional
    want = ((TF.max_pool2d(tx * tx, 2, 1, padding=1) ** 2).sum()
            + TF.max_pool1d(tx.flatten(2), 3, 2).sum())
    want.backward()
    got = _pooled_loss(nx)
    got.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, equal_nan=True)
    # the plan runs the primitive and its Numba gradient, not the compare chain
    prims = {e.prim.name for e in _pooled_loss.trace(nx).eqns}
    assert {"max_pool", "max_pool_scatter"} <= prims and "gt" not in prims


@pytest.mark.parametrize("dtype,shape", [(np.float32, (2, 3, 6, 8)), (np.float64, (1, 2, 5, 7))])
def test_2x2_pools_own_loops_match_torch_on_nan_inf_ties_and_a_remainder(dtype, shape):
    # 2x2 stride 2 (LeNet's pools) runs window_kernels' 2x2 loops; an odd size leaves a
    # remainder the forward skips (and the scatter, then not tiling, leaves to the route)
    x = RNG.integers(-2, 3, shape).astype(dtype)
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = np.nan  # two NaNs in a window: the last one wins
    x[0, 1, :2, :2] = -np.inf
    g = RNG.standard_normal((shape[0], shape[1], shape[2] // 2, shape[3] // 2)).astype(dtype)
    g[0, 1, 0, 0] = np.inf  # reaches only the winner: the others stay 0, not NaN
    tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    want = torch.nn.functional.max_pool2d(tx, 2)
    got = F.max_pool2d(nx, 2)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    want.backward(torch.tensor(g))
    got.backward(ng.tensor(g))
    np.testing.assert_array_equal(nx.grad.numpy(), tx.grad.numpy())

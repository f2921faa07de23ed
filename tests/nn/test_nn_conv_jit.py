"""The layers compiled: ``@ng.jit`` (call + ``.backward()``), ``jit(value_and_grad)`` and a
second derivative under jit agree with eager mode (itself checked against torch in
test_nn_conv_pool.py), on the CPU and on CUDA (the simulator unless a GPU is present)."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad.devices import cuda_is_available
from numgrad.nn import functional as F

TOL = dict(rtol=1e-9, atol=1e-10)


def layers(x, w, wt, b):
    """Most of the layers in one chain (every window kind, both pads, both resizes)."""
    h = F.conv2d(x, w, b, stride=1, padding=1, groups=1)
    h = F.batch_norm(h, None, None, training=True)
    h = F.max_pool2d(F.relu(h), 2, stride=1, padding=1)
    h = F.avg_pool2d(h, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    h = F.pad(h, (1, 1, 2, 0), mode="reflect")
    h = F.conv_transpose2d(h, wt, stride=2, output_padding=1)
    h = F.interpolate(h, size=(7, 5), mode="bilinear")
    a = F.adaptive_avg_pool2d(h, (3, 2)) + F.adaptive_max_pool2d(h, (3, 2))
    u = F.fold(F.unfold(h, 2, padding=1), (7, 5), 2, padding=1)
    return (a * a).sum() + (u * F.interpolate(h, scale_factor=1)).sum() * 0.1


def one_d(x, w):
    h = F.conv1d(F.pad(x, (2, 1), mode="replicate"), w, padding="same", dilation=2)
    h = F.group_norm(h, 2)
    return (F.max_pool1d(h, 2) * F.avg_pool1d(h, 2)).sum() + F.adaptive_avg_pool1d(h, 3).sum()


layers_vg = ng.jit(ng.value_and_grad(layers, argnums=(0, 1, 2, 3)))
one_d_jit = ng.jit(one_d)


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in [(2, 2, 5, 4), (3, 2, 3, 3), (3, 2, 2, 2), (3,)]]


def _eager_grads(fn, arrays):
    ts = [ng.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward()
    return float(out), [t.grad.numpy() for t in ts]


def test_layers_under_jit_value_and_grad_match_eager():
    arrays = _arrays()
    want, want_g = _eager_grads(layers, arrays)
    value, grads = layers_vg(*[ng.tensor(a) for a in arrays])
    assert float(value) == pytest.approx(want, rel=1e-12)
    for a, b in zip(grads, want_g):
        np.testing.assert_allclose(a.numpy(), b, **TOL)


def test_one_d_layers_under_jit_then_backward_match_eager():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((2, 3, 9)), rng.standard_normal((4, 3, 3))]
    want, want_g = _eager_grads(one_d, arrays)
    got, got_g = _eager_grads(one_d_jit, arrays)
    assert got == pytest.approx(want, rel=1e-12)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, **TOL)


def _conv_pool(x, w):
    return (F.max_pool2d(F.conv2d(x, w, padding=1), 2) ** 2).sum()


def test_second_derivative_under_jit_matches_eager():
    # d/dw of |d loss / dx|^2 through conv and max pool: im2col's and col2im's rules
    # differentiated again, compiled.
    def gnorm(x, w):
        (gx,) = ng.autograd.grad(_conv_pool(x, w), [x], create_graph=True)
        return (gx * gx).sum()
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((2, 2, 3, 3))
    want = ng.grad(gnorm, argnums=1)(ng.tensor(x, requires_grad=True), ng.tensor(w))
    got = ng.jit(ng.grad(gnorm, argnums=1))(ng.tensor(x, requires_grad=True), ng.tensor(w))
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL)


@pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")
def test_layers_on_cuda_eager_and_jit_match_cpu():
    def small(x, w, b):
        h = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2)
        h = F.batch_norm(h, None, None, training=True)
        return (F.interpolate(h, scale_factor=2, mode="bilinear") ** 2).sum()
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(1, 2, 4, 4), (2, 2, 3, 3), (2,)]]
    want, want_g = _eager_grads(small, arrays)
    dev = [ng.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    out = small(*dev)
    out.backward()
    assert float(out.cpu()) == pytest.approx(want, rel=1e-12)
    for t, g in zip(dev, want_g):
        np.testing.assert_allclose(t.grad.cpu().numpy(), g, **TOL)
    value, grads = ng.jit(ng.value_and_grad(small, argnums=(0, 1, 2)))(
        *[ng.tensor(a, device="cuda") for a in arrays])
    assert float(value.cpu()) == pytest.approx(want, rel=1e-12)
    for g, w in zip(grads, want_g):
        assert g.device.type == "cuda"
        np.testing.assert_allclose(g.cpu().numpy(), w, **TOL)

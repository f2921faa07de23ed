"""ops.conv's max_pool primitives against torch on the cases their fast paths branch on:
ties (the first maximum wins, -0 before +0 keeps its sign), NaN windows (the running rule's
last NaN gets the gradient), overlapping windows (gradients add), and the second order
(scatter and gather are each other's vjp)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.nn import functional as F

X = np.array([[[[1, np.nan, np.nan, 0], [np.nan, 2, 3, 3], [-0.0, 0.0, 5, 5],
                [0.0, -0.0, 5, 1]]]])


@pytest.mark.parametrize("kernel,stride", [(2, 2), (2, 1), (3, 1)])
@pytest.mark.parametrize("nan", [True, False])
def test_values_signs_and_gradients_match_torch(kernel, stride, nan):
    x = X if nan else np.nan_to_num(X, nan=3.0)
    tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    want = torch.nn.functional.max_pool2d(tx, kernel, stride)
    got = F.max_pool2d(nx, kernel, stride)
    g = np.arange(1.0, 1 + want.numel()).reshape(want.shape)
    (want * torch.tensor(g)).sum().backward()
    (got * ng.tensor(g)).sum().backward()
    w, o = want.detach().numpy(), got.detach().numpy()
    np.testing.assert_array_equal(o, w)
    np.testing.assert_array_equal(np.signbit(o), np.signbit(w))
    np.testing.assert_array_equal(nx.grad.numpy(), tx.grad.numpy())


def test_second_order_matches_torch():
    x = np.random.default_rng(0).standard_normal((2, 2, 5, 5))
    results = []
    for lib, F_ in ((torch, torch.nn.functional), (ng, F)):
        xt = lib.tensor(x, requires_grad=True)
        y = F_.max_pool2d(xt * xt, 3, 2, padding=1)
        (g,) = (torch.autograd.grad if lib is torch else ng.autograd.grad)(
            (y * y).sum(), xt, create_graph=True)
        (gg,) = (torch.autograd.grad if lib is torch else ng.autograd.grad)((g * g).sum(), xt)
        results.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)

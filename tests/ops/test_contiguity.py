"""Tensor.contiguous and is_contiguous against PyTorch: the same tensor back when it is
contiguous, a row-major copy in the graph (CloneBackward0) when not, eagerly and under
@ng.jit (where view() of the copy must work as it does eagerly)."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")
A = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("make", [lambda x: x, lambda x: x.t(), lambda x: x[:, ::2],
                                  lambda x: x.unsqueeze(0).expand(2, 2, 3), lambda x: x[1]],
                         ids=["plain", "t", "strided", "expand", "row"])
def test_contiguous_matches_torch(make):
    x, tx = ng.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    v, tv = make(x), make(tx)
    assert v.is_contiguous() == tv.is_contiguous()
    c, tc = v.contiguous(), tv.contiguous()
    assert (c is v) == (tc is tv) and c.is_contiguous()
    if tc is not tv:
        assert c.grad_fn.name() == tc.grad_fn.name() == "CloneBackward0"
    w = np.arange(1.0, 1 + tc.numel()).reshape(tuple(tc.shape))
    (c.view(-1) * ng.tensor(w.ravel())).sum().backward()
    (tc.view(-1) * torch.tensor(w.ravel())).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_contiguous_under_jit():
    f = ng.jit(lambda x: x.t().contiguous().view(-1) * 2)
    x = ng.tensor(A, requires_grad=True)
    out = f(x)
    np.testing.assert_array_equal(out.detach().numpy(), A.T.ravel() * 2)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full_like(A, 2.0))

"""Reductions and softmaxes of a 0-d tensor along dim 0 or -1: PyTorch (and ``@ng.jit``)
take the dim as the whole tensor; eager numgrad must too (not NumPy's AxisError), with
torch's values, dtypes and gradients, and torch's IndexError for any other dim."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from conftest import assert_close

torch = pytest.importorskip("torch")

CASES = {
    "sum": lambda m, x, d: x.sum(dim=d),
    "sum_tuple_keepdim": lambda m, x, d: x.sum(dim=(d,), keepdim=True),
    "mean": lambda m, x, d: x.mean(d),
    "amax": lambda m, x, d: m.amax(x, d),
    "amin": lambda m, x, d: x.amin(d),
    "prod": lambda m, x, d: x.prod(d),
    "softmax": lambda m, x, d: m.softmax(x, d),
    "log_softmax": lambda m, x, d: m.log_softmax(x, d),
    "logsumexp": lambda m, x, d: m.logsumexp(x, d),
    "norm": lambda m, x, d: x.norm(dim=d),
    "max_values": lambda m, x, d: m.max(x, d)[0],
}


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", CASES)
def test_zero_dim_reductions_match_torch(name, dim):
    fn = CASES[name]
    x = ng.tensor(1.5, requires_grad=True)
    xt = torch.tensor(1.5, requires_grad=True)
    got, want = fn(ng, x, dim), fn(torch, xt, dim)
    assert_close(got, want)
    got.backward()
    want.backward()
    assert_close(x.grad, xt.grad)


def test_integer_and_bool_zero_dim_reductions_match_torch():
    for m_fn in (lambda m, x: x.sum(0), lambda m, x: x.amax(-1), lambda m, x: x.all(0),
                 lambda m, x: x.any(-1)):
        for v in (3, True):
            assert_close(m_fn(ng, ng.tensor(v)), m_fn(torch, torch.tensor(v)))


def test_other_dims_of_a_zero_dim_tensor_are_torchs_index_error():
    with pytest.raises(IndexError) as want:
        torch.tensor(1.0).sum(1)
    with pytest.raises(IndexError) as got:
        ng.tensor(1.0).sum(1)
    assert str(got.value) == str(want.value)


@ng.jit
def _softmax_sum(x):
    return ng.softmax(x, 0) + x.sum(-1) + x.mean(0)


def test_jit_agrees_with_eager_on_zero_dim_reductions():
    x = ng.tensor(np.float32(0.25), requires_grad=True)
    got = _softmax_sum(x)
    want = ng.softmax(x, 0) + x.sum(-1) + x.mean(0)
    assert_close(got, want)

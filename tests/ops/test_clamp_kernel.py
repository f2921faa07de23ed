"""clamp's eager kernel against PyTorch bit for bit: the sign of zero at a zero bound, NaN
inputs, crossed bounds, integers; and a NaN bound as @ng.jit computes it."""
import numpy as np
import pytest
import torch

import numgrad as ng

V = [-0.0, 0.0, 1.0, float("nan"), -2.0, 3.0, float("inf"), -float("inf")]
NAN = float("nan")


@pytest.mark.parametrize("kw", [dict(min=0.0), dict(max=-0.0), dict(min=-0.0), dict(max=0.0),
                                dict(min=0.0, max=0.0), dict(min=-1.0, max=-2.0),
                                dict(min=-1, max=1),
                                dict(min=0.5)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clamp_matches_torch_bitwise(kw, dtype):
    got = ng.tensor(V, dtype=getattr(ng, dtype)).clamp(**kw).numpy()
    want = torch.tensor(V, dtype=getattr(torch, dtype)).clamp(**kw).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]),
                                  np.signbit(want[~np.isnan(want)]))


def test_integer_clamp_matches_torch():
    a = [1, 5, -3, 0]
    for kw in (dict(min=0, max=2), dict(min=0.5, max=2), dict(max=-1)):
        got, want = ng.tensor(a).clamp(**kw), torch.tensor(a).clamp(**kw)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


_clamp_nan = ng.jit(lambda x: (x.clamp(min=NAN), x.clamp(max=NAN), x.clamp(NAN, 1.0),
                               x.clamp(-1.0, NAN)))


def test_a_nan_bound_gives_nan_everywhere_as_torch_eager_and_jit():
    x, tx = ng.tensor(V, requires_grad=True), torch.tensor(V, requires_grad=True)
    kws = (dict(min=NAN), dict(max=NAN), dict(min=NAN, max=1.0), dict(min=-1.0, max=NAN))
    for kw, compiled in zip(kws, _clamp_nan(x.detach())):
        got, want = x.clamp(**kw), tx.clamp(**kw)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(compiled.numpy(), want.detach().numpy())
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
        x.grad = tx.grad = None

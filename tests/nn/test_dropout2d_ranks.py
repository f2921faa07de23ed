"""F.dropout2d on inputs of any rank, as PyTorch's: one draw per (dim 0, dim 1) pair, its
deprecation warnings, and the error below 2 dims."""
import warnings

import numpy as np
import pytest

import numgrad as ng
import numgrad.nn.functional as F

torch = pytest.importorskip("torch")


def _warned(fn, x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = fn(x, 0.5, True)
    return y, [str(m.message) for m in w]


@pytest.mark.parametrize("shape", [(40, 30), (8, 16, 6), (8, 16, 3, 3), (4, 8, 2, 2, 2)])
def test_dropout2d_masks_and_warnings_match_torch(shape):
    ng.manual_seed(0)
    y, got = _warned(F.dropout2d, ng.ones(*shape))
    _, want = _warned(torch.nn.functional.dropout2d, torch.ones(*shape))
    assert got == want
    a = y.numpy().reshape(shape[0], shape[1], -1)
    assert (a == a[:, :, :1]).all()                       # one draw per (dim 0, dim 1)
    assert set(np.unique(a)) <= {0.0, 2.0} and 0.3 < (a == 0).mean() < 0.7


def test_dropout2d_below_two_dims_warns_then_raises_torchs_error():
    with pytest.warns(UserWarning) as want_w, pytest.raises(RuntimeError) as want:
        torch.nn.functional.dropout2d(torch.ones(4))
    with pytest.warns(UserWarning) as got_w, pytest.raises(RuntimeError) as got:
        F.dropout2d(ng.ones(4))
    assert str(got.value) == str(want.value)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in want_w]


def test_dropout2d_module_on_lstm_features_trains():
    m = ng.nn.Dropout2d(0.5)
    x = ng.ones(6, 4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m(x).sum().backward()
    assert set(np.unique(x.grad.numpy())) <= {0.0, 2.0}

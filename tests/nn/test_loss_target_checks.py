"""Class indices out of range are PyTorch's ``IndexError`` in ``nll_loss`` and
``cross_entropy``, eagerly and under ``@ng.jit`` alike (a one-hot mask alone would add 0 to
the sum and 1 to the mean's count), while in-range and ignored targets give torch's values
and gradients; ``label_smoothing`` is checked and applied as torch does."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
import numgrad.nn.functional as F
from conftest import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@ng.jit
def _ce_mean(x, t):
    return F.cross_entropy(x, t)


@ng.jit
def _nll_sum_ignore(x, t):
    return F.nll_loss(F.log_softmax(x, 1), t, ignore_index=7, reduction="sum")


X = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
OUT_OF_RANGE = [[0, 5, 1], [0, -1, 1], [10 ** 9, 0, 0], [-10 ** 9, 0, 0], [3, 3, 3]]


@pytest.mark.parametrize("bad", OUT_OF_RANGE)
@pytest.mark.parametrize("jitted", [False, True])
def test_out_of_range_targets_raise_torchs_index_error(bad, jitted):
    with pytest.raises(IndexError) as want:
        TF.cross_entropy(torch.tensor(X), torch.tensor(bad))
    fn = _ce_mean if jitted else (lambda x, t: F.cross_entropy(x, t))
    with pytest.raises(IndexError) as got:
        fn(ng.tensor(X, requires_grad=True), ng.tensor(bad))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("jitted", [False, True])
def test_ignored_and_valid_targets_match_torch(jitted):
    fn = _nll_sum_ignore if jitted else (
        lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, ignore_index=7, reduction="sum"))
    for t in ([7, 1, 2], [0, 7, 7]):
        x = ng.tensor(X, requires_grad=True)
        xt = torch.tensor(X, requires_grad=True)
        got = fn(x, ng.tensor(t))
        want = TF.nll_loss(TF.log_softmax(xt, 1), torch.tensor(t), ignore_index=7,
                           reduction="sum")
        got.backward()
        want.backward()
        assert_close(got, want)
        assert_close(x.grad, xt.grad)
    with pytest.raises(IndexError, match="Target 3 is out of bounds."):
        fn(ng.tensor(X), ng.tensor([7, 3, 2]))
    assert_close(_ce_mean(ng.tensor(X), ng.tensor([2, 0, 1])),
                 TF.cross_entropy(torch.tensor(X), torch.tensor([2, 0, 1])))


def test_label_smoothing_is_checked_and_applied_as_torch_does():
    x, p = X, np.random.default_rng(1).random((3, 3)).astype(np.float32)
    for target in ([0, 2, 1], p):
        tt = torch.tensor(target)
        nt = ng.tensor(target)
        with pytest.raises(RuntimeError) as want:
            TF.cross_entropy(torch.tensor(x), tt, label_smoothing=1.5)
        with pytest.raises(RuntimeError) as got:
            F.cross_entropy(ng.tensor(x), nt, label_smoothing=1.5)
        assert str(got.value) == str(want.value)
        for ls in (0.25, 1.0, -0.1):  # torch runs a negative one as no smoothing
            assert_close(F.cross_entropy(ng.tensor(x), nt, label_smoothing=ls),
                         TF.cross_entropy(torch.tensor(x), tt, label_smoothing=ls))


@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 3, 2)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_label_smoothing_with_weights_and_ignored_targets_matches_torch(
        shape, reduction, weighted, ignore_index):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape)
    c = shape[1] if len(shape) > 1 else shape[0]
    t = rng.integers(0, c, (shape[0],) + shape[2:] if len(shape) > 1 else ())
    if t.ndim:
        t.flat[0] = ignore_index if ignore_index >= 0 else 2  # one ignored sample
    w = rng.random(c) if weighted else None
    xt, xn = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    kw = dict(reduction=reduction, ignore_index=ignore_index, label_smoothing=0.2)
    want = TF.cross_entropy(xt, torch.tensor(t), None if w is None else torch.tensor(w), **kw)
    got = F.cross_entropy(xn, ng.tensor(t), None if w is None else ng.tensor(w), **kw)
    assert got.shape == tuple(want.shape)  # "none" keeps the targets' shape
    assert_close(got, want)
    want.sum().backward()
    got.sum().backward()
    assert_close(xn.grad, xt.grad)


@pytest.mark.skipif(not ng.cuda.is_available(), reason="needs CUDA or Numba's simulator")
def test_out_of_range_targets_raise_under_jit_on_cuda():
    x = ng.tensor(X, device="cuda", requires_grad=True)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        _ce_mean(x, ng.tensor([0, 5, 1], device="cuda"))
    got = _ce_mean(x, ng.tensor([0, 2, 1], device="cuda"))
    assert_close(got.cpu(), TF.cross_entropy(torch.tensor(X), torch.tensor([0, 2, 1])))

"""Convolution, padding, pooling, unfold/fold, interpolation, batch/group norm and the
remaining losses, functional forms: values, gradients and grad_fn names against torch
(float64), double backward against torch's, finite differences, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from conftest import check_numeric_grad, second_order
from numgrad.nn import functional as NF

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-11)


def cases(F):
    """``(id, fn(*tensors), input shapes)``: the same call for torch's and numgrad's ``F``."""
    return [
        ("conv2d", lambda x, w, b: F.conv2d(x, w, b), [(2, 3, 7, 6), (4, 3, 3, 2), (4,)]),
        ("conv2d_s2p1d2", lambda x, w: F.conv2d(x, w, stride=2, padding=1, dilation=2),
         [(2, 3, 9, 8), (4, 3, 3, 3)]),
        ("conv2d_groups", lambda x, w: F.conv2d(x, w, groups=2, padding=(1, 0)),
         [(2, 4, 6, 6), (6, 2, 3, 3)]),
        ("conv2d_same", lambda x, w: F.conv2d(x, w, padding="same"), [(1, 2, 5, 6), (3, 2, 3, 3)]),
        ("conv2d_valid", lambda x, w: F.conv2d(x, w, padding="valid"),
         [(1, 2, 5, 6), (3, 2, 2, 3)]),
        ("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
         [(2, 3, 9), (4, 3, 3), (4,)]),
        ("conv1d_same_dil", lambda x, w: F.conv1d(x, w, padding="same", dilation=2),
         [(2, 2, 8), (2, 2, 3)]),
        ("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b),
         [(2, 3, 4, 5), (3, 2, 3, 3), (2,)]),
        ("conv_transpose2d_s2p1op1",
         lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
         [(2, 3, 4, 4), (3, 2, 3, 3)]),
        ("conv_transpose2d_groups_dil", lambda x, w: F.conv_transpose2d(x, w, groups=2, dilation=2),
         [(1, 4, 3, 3), (4, 3, 2, 2)]),
        ("pad_constant", lambda x: F.pad(x, (1, 2, 0, 1)), [(2, 3, 4, 4)]),
        ("pad_value_negative", lambda x: F.pad(x, (1, -1, 2, 0), value=1.5), [(2, 3, 4, 4)]),
        ("pad_reflect", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), [(2, 3, 4, 4)]),
        ("pad_replicate", lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"), [(2, 3, 4, 4)]),
        ("pad_circular", lambda x: F.pad(x, (1, 2), mode="circular"), [(2, 3, 4)]),
        ("max_pool2d", lambda x: F.max_pool2d(x, 2), [(2, 3, 6, 7)]),
        ("max_pool2d_ceil_pad",
         lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), [(2, 3, 8, 7)]),
        ("max_pool2d_dilation", lambda x: F.max_pool2d(x, (2, 3), stride=1, dilation=2),
         [(1, 2, 7, 8)]),
        ("max_pool1d", lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [(2, 3, 9)]),
        ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), [(2, 3, 6, 7)]),
        ("avg_pool2d_exclude_pad",
         lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
         [(2, 3, 8, 7)]),
        ("avg_pool2d_include_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
         [(2, 3, 8, 7)]),
        ("avg_pool2d_divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3), [(1, 3, 4, 4)]),
        ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, 1), [(2, 3, 9)]),
        ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [(2, 3, 7, 6)]),
        ("adaptive_avg_pool2d_even", lambda x: F.adaptive_avg_pool2d(x, 2), [(2, 3, 4, 6)]),
        ("adaptive_avg_pool2d_none", lambda x: F.adaptive_avg_pool2d(x, (None, 3)),
         [(2, 3, 4, 5)]),
        ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 4), [(2, 3, 7)]),
        ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 4)), [(2, 3, 7, 6)]),
        ("adaptive_max_pool2d_even", lambda x: F.adaptive_max_pool2d(x, 1), [(2, 3, 4, 6)]),
        ("unfold", lambda x: F.unfold(x, (2, 3), dilation=1, padding=1, stride=2),
         [(2, 3, 5, 6)]),
        ("fold", lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=2), [(2, 18, 9)]),
        ("nearest", lambda x: F.interpolate(x, scale_factor=2), [(2, 3, 3, 4)]),
        ("nearest_size", lambda x: F.interpolate(x, size=(5, 7)), [(2, 3, 3, 4)]),
        ("nearest1d", lambda x: F.interpolate(x, size=7), [(2, 3, 4)]),
        ("bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
         [(2, 3, 3, 4)]),
        ("bilinear_align_corners",
         lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
         [(2, 3, 3, 4)]),
        ("bilinear_down", lambda x: F.interpolate(x, size=(2, 3), mode="bilinear"),
         [(1, 2, 5, 7)]),
        ("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         [(4, 3, 2, 2), (3,), (3,)]),
        ("batch_norm_1d", lambda x: F.batch_norm(x, None, None, training=True), [(5, 3)]),
        ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3, 2), (4,), (4,)]),
        ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.7), [(3, 4)]),
        ("huber_loss", lambda x, t: F.huber_loss(x, t, delta=0.6), [(3, 4), (3, 4)]),
        ("smooth_l1_loss", lambda x, t: F.smooth_l1_loss(x, t, beta=0.6), [(3, 4), (3, 4)]),
        ("mse_loss", lambda x, t: F.mse_loss(x, t), [(3, 4), (3, 4)]),
        ("bce_with_logits", lambda x, t: F.binary_cross_entropy_with_logits(x, t),
         [(3, 4), (3, 4)]),
        ("kl_div_batchmean",
         lambda x, t: F.kl_div(F.log_softmax(x, 1), F.softmax(t, 1), reduction="batchmean"),
         [(3, 4), (3, 4)]),
        ("kl_div_log_target", lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
         [(3, 4), (3, 4)]),
    ]


IDS = [c[0] for c in cases(TF)]
PAIRS = dict(zip(IDS, zip(cases(TF), cases(NF))))
# Where our node is not PyTorch's: circular padding is a gather here (PyTorch: CopySlices).
OTHER_NODE = {"pad_circular"}


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("case", IDS)
def test_values_gradients_and_node_match_torch(case):
    (_, tfn, shapes), (_, nfn, _) = PAIRS[case]
    arrs = _inputs(shapes)
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    ns = [ng.tensor(a, requires_grad=True) for a in arrs]
    want, got = tfn(*ts), nfn(*ns)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL)
    if case not in OTHER_NODE:
        assert got.grad_fn.name() == want.grad_fn.name()
    cot = np.random.default_rng(1).standard_normal(tuple(want.shape))
    tg = torch.autograd.grad(want, ts, torch.tensor(cot))
    ngs = ng.autograd.grad(got, ns, ng.tensor(cot))
    for a, b in zip(ngs, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL)


@pytest.mark.parametrize("case", ["conv2d_s2p1d2", "conv_transpose2d_s2p1op1", "max_pool2d",
                                  "avg_pool2d_include_pad", "pad_reflect", "bilinear",
                                  "batch_norm", "group_norm", "fold", "adaptive_avg_pool2d"])
def test_double_backward_matches_torch(case):
    (_, tfn, shapes), (_, nfn, _) = PAIRS[case]
    arrs = _inputs(shapes, 2)
    rng = np.random.default_rng(3)
    out_shape = tuple(tfn(*[torch.tensor(a) for a in arrs]).shape)
    vs = [rng.standard_normal(out_shape)]
    ws = [rng.standard_normal(s) for s in shapes]
    want = second_order(torch, lambda lib, *xs: tfn(*xs), arrs, vs, ws)
    got = second_order(ng, lambda lib, *xs: nfn(*xs), arrs, vs, ws)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("fn,shapes", [
    (lambda x, w: NF.conv2d(x, w, stride=2, padding=1, groups=2), [(1, 2, 5, 4), (2, 1, 3, 2)]),
    (lambda x, w: NF.conv_transpose2d(x, w, stride=2, output_padding=1), [(1, 2, 2, 3),
                                                                          (2, 1, 2, 2)]),
    (lambda x: NF.max_pool2d(x, 2, stride=1, padding=1), [(1, 1, 3, 4)]),
    (lambda x: NF.unfold(x, 2, padding=1), [(1, 2, 3, 3)]),
])
def test_gradients_match_finite_differences(fn, shapes):
    check_numeric_grad(fn, _inputs(shapes, 4), np.random.default_rng(5))


def test_max_pool_indices_and_tie_gradient_match_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 8))
    x[0, 0, :4, :4] = 0.0  # ties: the first maximum gets the whole gradient, as in PyTorch
    x[1, 1, 2, 2] = np.nan
    for kw in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=(2, 3), dilation=2, stride=1)]:
        want, wi = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        got, gi = NF.max_pool2d(ng.tensor(x), return_indices=True, **kw)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(gi.numpy(), wi.numpy())
    want, wi = TF.max_pool1d(torch.tensor(x[0]), 3, return_indices=True)
    got, gi = NF.max_pool1d(ng.tensor(x[0]), 3, return_indices=True)
    np.testing.assert_array_equal(gi.numpy(), wi.numpy())
    tx, nx = torch.tensor(x, requires_grad=True), ng.tensor(x, requires_grad=True)
    TF.max_pool2d(tx, 2).sum().backward()
    NF.max_pool2d(nx, 2).sum().backward()
    np.testing.assert_array_equal(nx.grad.numpy(), tx.grad.numpy())


def test_batch_norm_updates_running_statistics_like_torch():
    x = np.random.default_rng(0).standard_normal((4, 3, 2))
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    nm, nv = ng.zeros(3, dtype=ng.float64), ng.ones(3, dtype=ng.float64)
    want = TF.batch_norm(torch.tensor(x), rm, rv, training=True, momentum=0.3)
    got = NF.batch_norm(ng.tensor(x), nm, nv, training=True, momentum=0.3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL)
    np.testing.assert_allclose(nm.numpy(), rm.numpy(), **TOL)
    np.testing.assert_allclose(nv.numpy(), rv.numpy(), **TOL)
    evals = [f.batch_norm(lib.tensor(x), m, v) for f, lib, m, v in
             [(TF, torch, rm, rv), (NF, ng, nm, nv)]]
    np.testing.assert_allclose(evals[1].numpy(), evals[0].numpy(), **TOL)


def test_cross_entropy_prints_nll_loss_node():
    x = ng.randn(4, 3, requires_grad=True)
    assert NF.cross_entropy(x, ng.tensor([0, 2, 1, 2])).grad_fn.name() == "NllLossBackward0"


def _raises_like_torch(call):
    with pytest.raises(Exception) as want:
        call(TF, torch)
    with pytest.raises(type(want.value)) as got:
        call(NF, ng)
    return str(got.value), str(want.value)


@pytest.mark.parametrize("call", [
    lambda F, lib: F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(2, 2, 3, 3)),
    lambda F, lib: F.conv2d(lib.ones(1, 4, 5, 5), lib.ones(3, 2, 3, 3), groups=2),
    lambda F, lib: F.conv2d(lib.ones(1, 2, 5, 5), lib.ones(2, 2, 3, 3), stride=2,
                            padding="same"),
    lambda F, lib: F.conv2d(lib.ones(1, 2, 2, 2), lib.ones(2, 2, 3, 3)),
    lambda F, lib: F.pad(lib.ones(1, 2, 3, 3), (1, 2, 3)),
    lambda F, lib: F.pad(lib.ones(1, 2, 3, 3), (3, 3, 1, 1), mode="reflect"),
    lambda F, lib: F.max_pool2d(lib.ones(1, 1, 4, 4), 2, padding=2),
    lambda F, lib: F.batch_norm(lib.ones(1, 3), None, None, training=True),
    lambda F, lib: F.group_norm(lib.ones(2, 3, 4), 2),
    lambda F, lib: F.interpolate(lib.ones(1, 1, 2, 2)),
    lambda F, lib: F.fold(lib.ones(1, 4, 5), (3, 3), 2),
])
def test_errors_match_torch(call):
    got, want = _raises_like_torch(call)
    assert got.split(",")[0].split(":")[0] == want.split(",")[0].split(":")[0]


@pytest.mark.parametrize("size", [(3, 4), 2, (1, None)])
def test_adaptive_max_pool_indices_match_torch(size):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    x[0, 0, :3, :3] = 1.0  # ties: the first maximum in the window, as PyTorch picks
    want, wi = TF.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)
    got, gi = NF.adaptive_max_pool2d(ng.tensor(x), size, return_indices=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(gi.numpy(), wi.numpy())
    _, gi = NF.adaptive_max_pool2d(ng.tensor(x[0]), size, return_indices=True)
    np.testing.assert_array_equal(gi.numpy(), wi.numpy()[0])


@pytest.mark.parametrize("fn", [lambda x: NF.pad(x, (0, 0)), lambda x: NF.max_pool2d(x, 1),
                                lambda x: NF.conv2d(x, ng.ones(2, 2, 1, 1))])
def test_results_own_their_storage(fn):
    # an in-place op on the result must not write through to the input
    x = ng.ones(1, 2, 3, 3, requires_grad=True) * 1.0
    y = fn(x)
    y.relu_()
    y.mul_(0.0)
    assert float(x.sum()) == 18.0

"""The convolution, pooling, normalisation, shape, dropout, activation and loss modules:
outputs and gradients against torch's modules with copied weights, PyTorch's default
initialisation bounds, running statistics, reprs and constructor errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

torch = pytest.importorskip("torch")
TOL = dict(rtol=1e-10, atol=1e-11)


def _copy_params(ours, theirs):
    """Give torch's module ``ours``'s parameter values (float64 both)."""
    with torch.no_grad():
        for (n, p), (m, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert n == m and tuple(p.shape) == tuple(q.shape)
            q.copy_(torch.tensor(p.detach().numpy()))


def _same_module(ours, theirs, shape, seed=0, target=None):
    ours, theirs = ours.double(), theirs.double()
    _copy_params(ours, theirs)
    x = np.random.default_rng(seed).standard_normal(shape)
    nx, tx = ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    args = () if target is None else (target[0],)
    targs = () if target is None else (target[1],)
    got, want = ours(nx, *args), theirs(tx, *targs)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), **TOL)
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=n, **TOL)
    return got


@pytest.mark.parametrize("make,shape", [
    (lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7)),
    (lambda m: m.Conv2d(4, 6, (3, 2), padding="same", dilation=2, groups=2, bias=False),
     (2, 4, 6, 5)),
    (lambda m: m.Conv2d(2, 3, 3, padding=2, padding_mode="reflect"), (1, 2, 5, 6)),
    (lambda m: m.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"), (1, 2, 5, 6)),
    (lambda m: m.Conv2d(2, 3, 3, padding="same", padding_mode="circular"), (1, 2, 5, 6)),
    (lambda m: m.Conv1d(2, 3, 3, padding=1, padding_mode="reflect"), (2, 2, 7)),
    (lambda m: m.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 4, 4)),
    (lambda m: m.BatchNorm2d(3), (4, 3, 2, 2)),
    (lambda m: m.BatchNorm1d(3, affine=False), (4, 3, 5)),
    (lambda m: m.GroupNorm(2, 4), (2, 4, 3, 3)),
    (lambda m: m.MaxPool2d(3, 2, padding=1, ceil_mode=True), (2, 3, 8, 7)),
    (lambda m: m.MaxPool1d(2), (2, 3, 8)),
    (lambda m: m.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 8, 7)),
    (lambda m: m.AvgPool1d(3, 2), (2, 3, 8)),
    (lambda m: m.AdaptiveAvgPool2d((1, 1)), (2, 3, 5, 5)),
    (lambda m: m.AdaptiveAvgPool1d(3), (2, 3, 8)),
    (lambda m: m.AdaptiveMaxPool2d((2, 3)), (2, 3, 5, 7)),
    (lambda m: m.Flatten(), (2, 3, 4)),
    (lambda m: m.Flatten(0, 1), (2, 3, 4)),
    (lambda m: m.Unflatten(1, (2, 2)), (3, 4, 5)),
    (lambda m: m.LeakyReLU(0.2), (3, 4)),
    (lambda m: m.ELU(0.5), (3, 4)),
    (lambda m: m.SiLU(), (3, 4)),
    (lambda m: m.Softplus(2.0, 1.0), (3, 4)),
    (lambda m: m.Hardtanh(-0.5, 0.5), (3, 4)),
    (lambda m: m.Softmax(1), (3, 4)),
    (lambda m: m.LogSoftmax(dim=1), (3, 4)),
    (lambda m: m.Identity(54, unused="x"), (3, 4)),
])
def test_module_matches_torch_with_copied_weights(make, shape):
    ours, theirs = make(nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    _same_module(ours, theirs, shape)


def test_lenet_sequential_matches_torch():
    def lenet(m):
        return m.Sequential(m.Conv2d(1, 6, 5, padding=2), m.ReLU(), m.MaxPool2d(2),
                            m.Conv2d(6, 16, 5), m.ReLU(), m.MaxPool2d(2), m.Flatten(),
                            m.Linear(400, 120), m.ReLU(), m.Linear(120, 84), m.ReLU(),
                            m.Linear(84, 10), m.LogSoftmax(dim=1))
    ours, theirs = lenet(nn), lenet(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [tuple(p.shape) for p in ours.parameters()] == \
        [tuple(p.shape) for p in theirs.parameters()]
    out = _same_module(ours, theirs, (2, 1, 28, 28))
    assert out.grad_fn.name() == "LogSoftmaxBackward0" or out.shape == (2, 10)


@pytest.mark.parametrize("make", [
    lambda m: m.Conv2d(3, 8, (3, 5), groups=1), lambda m: m.Conv1d(4, 6, 3, groups=2),
    lambda m: m.ConvTranspose2d(6, 4, 3, groups=2),
])
def test_conv_default_init_bounds_are_torchs(make):
    ours, theirs = make(nn), make(torch.nn)
    w = ours.weight.detach().numpy()
    fan_in = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)[0]
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)): gain sqrt(1/3) * sqrt(3/fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(ours.bias.detach().numpy()).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.25 * bound
    assert ours.weight.dtype == ng.float32


@pytest.mark.parametrize("momentum,track", [(0.1, True), (None, True), (0.3, False)])
def test_batch_norm_running_stats_train_and_eval(momentum, track):
    ours = nn.BatchNorm2d(3, momentum=momentum, track_running_stats=track).double()
    theirs = torch.nn.BatchNorm2d(3, momentum=momentum, track_running_stats=track).double()
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 2, 2)) * 2 + 1
        np.testing.assert_allclose(ours(ng.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), **TOL)
    got, want = ours.state_dict(), theirs.state_dict()
    assert list(got) == list(want)
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k].numpy()), want[k].numpy(), **TOL)
    ours.eval(), theirs.eval()
    x = rng.standard_normal((2, 3, 2, 2))
    np.testing.assert_allclose(ours(ng.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), **TOL)


def test_batch_norm_prints_torchs_node_and_checks_dims():
    x = ng.randn(4, 3, requires_grad=True)
    assert nn.BatchNorm1d(3)(x).grad_fn.name() == "NativeBatchNormBackward0"
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(x)


@pytest.mark.parametrize("cls,shape", [("Dropout2d", (8, 16, 3, 3)), ("Dropout1d", (8, 16, 5))])
def test_channel_dropout_zeroes_whole_channels(cls, shape):
    ng.manual_seed(0)
    m = getattr(nn, cls)(p=0.5)
    x = ng.ones(*shape, requires_grad=True)
    y = m(x)
    a = y.detach().numpy().reshape(shape[0], shape[1], -1)
    per_channel = a[:, :, 0]
    assert (a == per_channel[:, :, None]).all()            # one draw per channel
    assert set(np.unique(per_channel)) <= {0.0, 2.0}         # dropped or scaled by 1/(1-p)
    assert 0.3 < (per_channel == 0).mean() < 0.7
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    m.eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="dropout probability"):
        getattr(nn, cls)(p=1.5)


def _targets(kind, shape, rng):
    if kind == "class":
        return rng.integers(0, shape[1], shape[0])
    if kind == "prob":
        return rng.uniform(0.05, 0.95, shape)
    return rng.standard_normal(shape)


@pytest.mark.parametrize("make,kind,squash", [
    (lambda m: m.NLLLoss(), "class", "log_softmax"),
    (lambda m: m.NLLLoss(reduction="sum", ignore_index=1), "class", "log_softmax"),
    (lambda m: m.BCELoss(), "prob", "sigmoid"),
    (lambda m: m.BCELoss(size_average=False), "prob", "sigmoid"),
    (lambda m: m.BCEWithLogitsLoss(), "prob", None),
    (lambda m: m.L1Loss(), "real", None),
    (lambda m: m.L1Loss(reduce=False), "real", None),
    (lambda m: m.SmoothL1Loss(beta=0.5), "real", None),
    (lambda m: m.HuberLoss(delta=0.5, reduction="sum"), "real", None),
    (lambda m: m.KLDivLoss(reduction="batchmean"), "prob", "log_softmax"),
    (lambda m: m.KLDivLoss(reduction="none", log_target=True), "real", None),
])
def test_loss_modules_match_torch(make, kind, squash):
    shape = (4, 3)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal(shape), _targets(kind, shape, rng)
    ours, theirs = make(nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    nx, tx = ng.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)

    def squashed(lib, v):
        if squash == "log_softmax":
            return lib.log_softmax(v, 1)
        return lib.sigmoid(v) if squash == "sigmoid" else v
    got = ours(squashed(ng, nx), ng.tensor(t))
    want = theirs(squashed(torch, tx), torch.tensor(t))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL)
    assert got.grad_fn.name() == want.grad_fn.name()
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), **TOL)


def test_bce_with_logits_pos_weight_module():
    rng = np.random.default_rng(1)
    x, t, pw = rng.standard_normal((4, 3)), rng.uniform(size=(4, 3)), rng.uniform(1, 3, 3)
    got = nn.BCEWithLogitsLoss(pos_weight=ng.tensor(pw))(ng.tensor(x), ng.tensor(t))
    want = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw))(torch.tensor(x),
                                                                    torch.tensor(t))
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL)


@pytest.mark.parametrize("call", [
    lambda m: m.Conv2d(3, 4, 3, groups=2),
    lambda m: m.Conv2d(4, 3, 3, groups=2),
    lambda m: m.Conv2d(2, 4, 3, stride=2, padding="same"),
    lambda m: m.Conv2d(2, 4, 3, padding="full"),
    lambda m: m.Conv2d(2, 4, 3, padding_mode="mirror"),
    lambda m: m.ConvTranspose2d(2, 4, 3, padding_mode="reflect"),
    lambda m: m.GroupNorm(3, 4),
    lambda m: m.Dropout2d(-0.1),
])
def test_constructor_errors_match_torch(call):
    with pytest.raises(Exception) as want:
        call(torch.nn)
    with pytest.raises(type(want.value)) as got:
        call(nn)
    assert str(got.value).split("{")[0] == str(want.value).split("{")[0]


@pytest.mark.parametrize("name", ["numgrad.nn.functional_conv", "numgrad.nn.functional_norm",
                                  "numgrad.nn.conv", "numgrad.nn.pooling",
                                  "numgrad.nn.normalization", "numgrad.nn.shape_and_dropout",
                                  "numgrad.nn.activation_extra", "numgrad.nn.loss_extra"])
def test_docstring_examples_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name),
                             extraglobs={"ng": ng, "F": ng.nn.functional},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_conv_transpose_output_size_matches_torch():
    ours, theirs = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double(), \
        torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    _copy_params(ours, theirs)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5))
    got = ours(ng.tensor(x), output_size=[8, 10])
    want = theirs(torch.tensor(x), output_size=[8, 10])
    assert tuple(got.shape) == tuple(want.shape) == (1, 3, 8, 10)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL)
    with pytest.raises(ValueError, match="requested an output size of"):
        theirs(torch.tensor(x), output_size=[12, 10])
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(ng.tensor(x), output_size=[12, 10])

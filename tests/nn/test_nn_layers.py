"""Layers, the functional forms they use, initialisation and gradient clipping, against torch
(values and gradients in float64) and against the distributions PyTorch documents."""
from __future__ import annotations

import math

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn
from numgrad.devices import cuda_is_available
from numgrad.nn import functional as F

torch = pytest.importorskip("torch")
TOL = dict(rtol=1e-10, atol=1e-12)


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(a, b, **tol):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **(tol or TOL))


@pytest.mark.parametrize("shape,normalized", [((3, 5), (5,)), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(shape, normalized, affine):
    x, tx = _pair(shape)
    w, tw = _pair(normalized, 1) if affine else (None, None)
    b, tb = _pair(normalized, 2) if affine else (None, None)
    out = F.layer_norm(x, normalized, w, b, eps=1e-5)
    tout = torch.nn.functional.layer_norm(tx, normalized, tw, tb, eps=1e-5)
    _close(out, tout)
    g = np.random.default_rng(3).standard_normal(shape)
    out.backward(ng.tensor(g))
    tout.backward(torch.tensor(g))
    for ours, theirs in [(x, tx)] + ([(w, tw), (b, tb)] if affine else []):
        _close(ours.grad, theirs.grad)


def test_layer_norm_shape_error():
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[4\]"):
        F.layer_norm(ng.zeros(2, 3), (4,))


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_matches_torch(padding_idx):
    w, tw = _pair((6, 3))
    idx = [[1, 2, 1], [5, 0, 1]]
    out = F.embedding(ng.tensor(idx), w, padding_idx)
    tout = torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx)
    _close(out, tout)
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(ng.tensor(g))
    tout.backward(torch.tensor(g))
    _close(w.grad, tw.grad)


def test_embedding_errors():
    with pytest.raises(RuntimeError, match="Long"):
        F.embedding(ng.tensor([0.0]), ng.zeros(3, 2))
    with pytest.raises(IndexError):
        F.embedding(ng.tensor([3]), ng.zeros(3, 2))


@pytest.mark.parametrize("num_classes", [-1, 5])
def test_one_hot_matches_torch(num_classes):
    idx = [[0, 3], [2, 1]]
    ours = F.one_hot(ng.tensor(idx), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(idx), num_classes)
    assert ours.dtype is ng.int64 and ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("bad", [[-1, 0], [0, 7]])
def test_one_hot_errors_match_torch(bad):
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.one_hot(torch.tensor(bad), 3)
    with pytest.raises(RuntimeError) as ours:
        F.one_hot(ng.tensor(bad), 3)
    assert str(ours.value) == str(theirs.value)


def test_layers_match_torch_with_copied_weights():
    ng.manual_seed(0)
    ours = nn.Sequential(nn.Embedding(7, 4), nn.LayerNorm(4), nn.Linear(4, 6), nn.GELU(),
                         nn.Linear(6, 5), nn.Sigmoid(), nn.Linear(5, 3), nn.Tanh()).double()
    theirs = torch.nn.Sequential(
        torch.nn.Embedding(7, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 6),
        torch.nn.GELU(), torch.nn.Linear(6, 5), torch.nn.Sigmoid(), torch.nn.Linear(5, 3),
        torch.nn.Tanh()).double()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()})
    idx = [[0, 6, 2], [3, 3, 1]]
    target = [[0, 1, 2], [2, 2, 0]]
    for loss_ours, loss_theirs in [(nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss())]:
        lo = loss_ours(ours(ng.tensor(idx)).reshape(-1, 3), ng.tensor(target).reshape(-1))
        lt = loss_theirs(theirs(torch.tensor(idx)).reshape(-1, 3),
                         torch.tensor(target).reshape(-1))
        lo.backward()
        lt.backward()
        assert float(lo) == pytest.approx(lt.item(), rel=1e-12)
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), err_msg=name, **TOL)


def test_mse_loss_module_matches_torch():
    x, tx = _pair((4, 3))
    y = np.random.default_rng(5).standard_normal((4, 3))
    for red in ("mean", "sum"):
        a = nn.MSELoss(reduction=red)(x, ng.tensor(y))
        b = torch.nn.MSELoss(reduction=red)(tx, torch.tensor(y))
        assert float(a) == pytest.approx(b.item(), rel=1e-12)


def test_activation_modules_match_functional():
    x, tx = _pair((3, 4))
    for ours, theirs in [(nn.ReLU(), torch.nn.ReLU()), (nn.Tanh(), torch.nn.Tanh()),
                         (nn.Sigmoid(), torch.nn.Sigmoid()), (nn.GELU(), torch.nn.GELU()),
                         (nn.GELU("tanh"), torch.nn.GELU("tanh")),
                         (nn.Softmax(1), torch.nn.Softmax(1)),
                         (nn.LogSoftmax(1), torch.nn.LogSoftmax(1))]:
        _close(ours(x), theirs(tx))
        assert repr(ours) == repr(theirs)


# ------------------------------------------------------------------------------ init
def test_linear_default_init_distribution():
    ng.manual_seed(1)
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform(a=sqrt(5)) and the bias rule both give this
    w, b = layer.weight.numpy(force=True), layer.bias.numpy(force=True)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.99 * bound
    # U(-a, a): mean 0, variance a^2 / 3 (120000 samples: a 2% band is > 10 sigma)
    assert abs(w.mean()) < 0.01 * bound
    assert w.var() == pytest.approx(bound ** 2 / 3, rel=0.02)
    assert layer.weight.dtype is ng.float32


def test_embedding_layer_default_init():
    ng.manual_seed(2)
    emb = nn.Embedding(1000, 64, padding_idx=3)
    w = emb.weight.numpy(force=True)
    assert not w[3].any()
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.02 and rest.std() == pytest.approx(1.0, rel=0.02)


def test_manual_seed_repeats_init():
    ng.manual_seed(5)
    a = nn.Linear(4, 3).weight.numpy(force=True).copy()
    ng.manual_seed(5)
    b = nn.Linear(4, 3).weight.numpy(force=True)
    ng.manual_seed(6)
    c = nn.Linear(4, 3).weight.numpy(force=True)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_init_functions_distributions_and_gain():
    ng.manual_seed(0)
    t = ng.empty(300, 200, dtype=ng.float64)
    nn.init.xavier_uniform_(t)
    a = math.sqrt(6 / 500)
    assert np.abs(t.numpy()).max() <= a and t.numpy().var() == pytest.approx(a * a / 3, rel=0.03)
    nn.init.kaiming_normal_(t, nonlinearity="relu")
    assert t.numpy().std() == pytest.approx(math.sqrt(2 / 200), rel=0.03)
    nn.init.constant_(t, 0.5)
    assert (t.numpy() == 0.5).all()
    for name in ("linear", "tanh", "relu", "selu", "sigmoid"):
        assert nn.init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == \
        torch.nn.init.calculate_gain("leaky_relu", 0.2)
    p = nn.Parameter(ng.zeros(3, 3))
    v = p._version
    nn.init.ones_(p)  # in place on a leaf that requires grad: under no_grad, version bumped
    assert p.requires_grad and p._version > v and p.tolist()[0] == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------------ clip_grad
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s) for s in [(3, 4), (4,)]]
    ours = [nn.Parameter(ng.zeros(*g.shape, dtype=ng.float64)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, tp, g in zip(ours, theirs, grads):
        p.grad, tp.grad = ng.tensor(g), torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert float(total) == pytest.approx(t_total.item(), rel=1e-12)
    for p, tp in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), **TOL)


def test_clip_grad_value_matches_torch():
    g = np.linspace(-2, 2, 9)
    p, tp = nn.Parameter(ng.zeros(9, dtype=ng.float64)), torch.nn.Parameter(
        torch.zeros(9, dtype=torch.float64))
    p.grad, tp.grad = ng.tensor(g), torch.tensor(g)
    nn.utils.clip_grad_value_([p], 0.7)
    torch.nn.utils.clip_grad_value_([tp], 0.7)
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy())


def test_clip_grad_norm_nonfinite_error():
    p = nn.Parameter(ng.zeros(2))
    p.grad = ng.tensor([math.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


# -------------------------------------------------------------- cross_entropy on CUDA
@pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")
def test_cross_entropy_on_a_cuda_tensor():
    # the class index row nll_loss compares against is made on the input's device
    x = np.random.default_rng(0).standard_normal((4, 3))
    y = [0, 2, 1, 2]
    cpu = F.cross_entropy(ng.tensor(x, requires_grad=True), ng.tensor(y))
    xc = ng.tensor(x, device="cuda", requires_grad=True)
    dev = F.cross_entropy(xc, ng.tensor(y, device="cuda"))
    assert dev.device.type == "cuda"
    assert float(dev.cpu()) == pytest.approx(float(cpu), rel=1e-12)
    dev.backward()
    assert xc.grad.device.type == "cuda"
    hot = F.one_hot(ng.tensor(y, device="cuda"), 3)
    assert hot.device.type == "cuda" and hot.cpu().tolist() == np.eye(3, dtype=int)[y].tolist()

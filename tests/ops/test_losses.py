"""The fused eager losses (ops.losses) against PyTorch: values, gradients, grad_fn names,
double backward, and the composite they decompose into under @ng.jit, vmap and forward AD."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import numgrad as ng
import numgrad.nn.functional as F
from numgrad.ops import losses

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4))
Y = np.array([0, 3, 1, -100, 2])
W = RNG.random(4) + 0.5
P = RNG.random((5, 4)) * 0.9 + 0.05
T = RNG.random((5, 4))


def _pair(a, grad=True):
    return (ng.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad))


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol,
                               atol=tol)


CASES = {
    "log_softmax": (lambda m, F, x, t: m.log_softmax(x, 1) * t, X, T, "LogSoftmaxBackward0"),
    "log_softmax_dim0": (lambda m, F, x, t: m.log_softmax(x, -2) * t, X, T,
                         "LogSoftmaxBackward0"),
    "mse_mean": (lambda m, F, x, t: F.mse_loss(x, t), X, T, "MseLossBackward0"),
    "mse_sum": (lambda m, F, x, t: F.mse_loss(x, t, reduction="sum"), X, T,
                "MseLossBackward0"),
    "mse_none": (lambda m, F, x, t: F.mse_loss(x, t, reduction="none") * t, X, T, None),
    "bce_logits": (lambda m, F, x, t: F.binary_cross_entropy_with_logits(x, t), X, T,
                   "BinaryCrossEntropyWithLogitsBackward0"),
    "bce_logits_sum": (lambda m, F, x, t: F.binary_cross_entropy_with_logits(
        x, t, reduction="sum"), X, T, "BinaryCrossEntropyWithLogitsBackward0"),
    "bce": (lambda m, F, x, t: F.binary_cross_entropy(x, t), P, T,
            "BinaryCrossEntropyBackward0"),
    "bce_none": (lambda m, F, x, t: F.binary_cross_entropy(x, t, reduction="none") * t, P, T,
                 None),
}


@pytest.mark.parametrize("name", CASES)
def test_two_input_losses_match_torch(name):
    f, xa, ta, node = CASES[name]
    (x, tx), (t, tt) = _pair(xa), _pair(ta)
    out, ref = f(ng, F, x, t), f(torch, TF, tx, tt)
    _close(out, ref)
    if node is not None:  # the loss's node, or for log_softmax * t the product's input
        fn, rfn = out.grad_fn, ref.grad_fn
        if fn.name() == "MulBackward0":
            fn, rfn = fn.next_functions[0][0], rfn.next_functions[0][0]
        assert fn.name() == node == rfn.name()
    gx, gt = ng.autograd.grad(out.sum(), (x, t), create_graph=True)
    rx, rt = torch.autograd.grad(ref.sum(), (tx, tt), create_graph=True)
    _close(gx, rx)
    _close(gt, rt)
    # Double backward: through the vjp rules, written in numgrad ops.
    hx, ht = ng.autograd.grad((gx * gx).sum() + (gt * x).sum(), (x, t))
    rhx, rht = torch.autograd.grad((rx * rx).sum() + (rt * tx).sum(), (tx, tt))
    _close(hx, rhx, 1e-8)
    _close(ht, rht, 1e-8)


NLL = {
    "mean": dict(), "sum": dict(reduction="sum"), "none": dict(reduction="none"),
    "weight": dict(weight=W), "weight_sum": dict(weight=W, reduction="sum"),
    "ignore": dict(ignore_index=3, target=np.array([0, 3, 1, 3, 2])),
    "smoothing": dict(label_smoothing=0.2),
    "weight_smoothing": dict(weight=W, label_smoothing=0.1, reduction="sum"),
}


@pytest.mark.parametrize("name", NLL)
def test_cross_entropy_matches_torch(name):
    kw = dict(NLL[name])
    ya = kw.pop("target", Y)
    nkw, tkw = dict(kw), dict(kw)
    if "weight" in kw:
        nkw["weight"], tkw["weight"] = ng.tensor(kw["weight"]), torch.tensor(kw["weight"])
    (x, tx), y, ty = _pair(X), ng.tensor(ya), torch.tensor(ya)
    out, ref = F.cross_entropy(x, y, **nkw), TF.cross_entropy(tx, ty, **tkw)
    _close(out, ref)
    if "label_smoothing" not in kw:
        assert out.grad_fn.name() == ref.grad_fn.name() == "NllLossBackward0"
        assert out.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    up = ng.tensor(T[:, 0]) if kw.get("reduction") == "none" else 1.0
    (gx,) = ng.autograd.grad((out * up).sum(), x, create_graph=True)
    (rx,) = torch.autograd.grad((ref * torch.tensor(T[:, 0] if kw.get("reduction") == "none"
                                                    else 1.0)).sum(), tx, create_graph=True)
    _close(gx, rx)
    (hx,) = ng.autograd.grad((gx * gx.detach().exp()).sum(), x)
    (rhx,) = torch.autograd.grad((rx * rx.detach().exp()).sum(), tx)
    _close(hx, rhx, 1e-8)


def test_nll_loss_backward_of_backward_is_named_and_linear():
    (x, tx), (s, ts) = _pair(X), _pair(np.array(1.5))
    y, ty = ng.tensor(Y), torch.tensor(Y)
    logp, tlogp = x.log_softmax(1), tx.log_softmax(1)
    (g,) = ng.autograd.grad((F.nll_loss(logp, y, reduction="none") * s).sum(), logp,
                            create_graph=True)
    (tg,) = torch.autograd.grad((TF.nll_loss(tlogp, ty, reduction="none") * ts).sum(), tlogp,
                                create_graph=True)
    _close(g, tg)
    assert g.grad_fn.name() == tg.grad_fn.name() == "NllLossBackwardBackward0"
    (gs,) = ng.autograd.grad((g * ng.tensor(T)).sum(), s)
    (rs,) = torch.autograd.grad((tg * torch.tensor(T)).sum(), ts)
    _close(gs, rs)


def test_log_softmax_backward_of_backward_is_named_as_pytorch():
    (x, tx), (s, ts) = _pair(X), _pair(T)
    (g,) = ng.autograd.grad((x.log_softmax(1) * s).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx.log_softmax(1) * ts).sum(), tx, create_graph=True)
    assert g.grad_fn.name() == tg.grad_fn.name() == "LogSoftmaxBackwardDataBackward0"
    _close(g, tg)


def test_all_ignored_mean_is_nan_with_zero_gradient():
    x, tx = _pair(X[:2])
    out = F.cross_entropy(x, ng.tensor([-100, -100]))
    ref = TF.cross_entropy(tx, torch.tensor([-100, -100]))
    assert np.isnan(out.item()) and np.isnan(ref.item())
    out.backward()
    ref.backward()
    _close(x.grad, tx.grad)
    assert not x.grad.numpy().any()


def test_bad_targets_raise_pytorchs_errors():
    x = ng.tensor(X, requires_grad=True)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, ng.tensor([0, 4, 1, 1, 1]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(x, x.detach(), reduction="avg")
    with pytest.raises(IndexError):
        x.log_softmax(2)


def test_a_weight_that_requires_grad_is_refused_as_in_torch():
    x, w = ng.tensor(X, requires_grad=True), ng.tensor(W, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.cross_entropy(x, ng.tensor(Y), weight=w)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        TF.cross_entropy(torch.tensor(X), torch.tensor(Y), weight=torch.tensor(W).requires_grad_())
    with ng.no_grad():
        F.cross_entropy(x, ng.tensor(Y), weight=w)


def test_float32_and_retain_graph():
    x = ng.tensor(X.astype(np.float32), requires_grad=True)
    out = F.cross_entropy(x, ng.tensor(Y))
    assert out.dtype == ng.float32
    out.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-6)
    assert x.grad.dtype == ng.float32
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()


def test_inplace_change_of_a_saved_input_is_caught():
    x, t = ng.tensor(X, requires_grad=True), ng.tensor(T)
    out = F.mse_loss(x * 1, t)
    t.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@ng.jit
def _jit_ce(x, y):
    return F.cross_entropy(x, y)


def test_decomposes_under_jit_vmap_and_forward_ad():
    x, y = ng.tensor(X, requires_grad=True), ng.tensor(Y)
    eager = F.cross_entropy(x, y)
    assert losses.fused(x)
    np.testing.assert_allclose(_jit_ce(x, y).item(), eager.item(), rtol=1e-12)
    # vmap: per-row mse through the composite.
    xs, ts = ng.tensor(X), ng.tensor(T)
    got = ng.func.vmap(lambda a, b: F.mse_loss(a, b))(xs, ts)
    want = ((X - T) ** 2).mean(1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    # Forward mode: the tangent of log_softmax.
    import numgrad.autograd.forward_ad as fwAD
    tangent = RNG.standard_normal(X.shape)
    with fwAD.dual_level():
        d = fwAD.make_dual(ng.tensor(X), ng.tensor(tangent))
        jvp = fwAD.unpack_dual(d.log_softmax(1)).tangent
    _, ref = torch.func.jvp(lambda a: a.log_softmax(1), (torch.tensor(X),),
                            (torch.tensor(tangent),))
    _close(jvp, ref)


def test_relu_backward_is_one_node_and_matches_torch():
    a = np.array([[-1.0, 0.0, -0.0, 2.0, np.nan, 3.0]])
    (x, tx), (s, ts) = _pair(a), _pair(np.array([[1.0, 2, 3, 4, 5, 6]]))
    (g,) = ng.autograd.grad((x.relu() * s).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx.relu() * ts).sum(), tx, create_graph=True)
    _close(g, tg)
    assert g.grad_fn.name() == tg.grad_fn.name() == "ThresholdBackwardBackward0"
    (gs,) = ng.autograd.grad((g * ng.tensor(a[:, ::-1].copy())).sum(), s)
    (rs,) = torch.autograd.grad((tg * torch.tensor(a[:, ::-1].copy())).sum(), ts)
    _close(gs, rs)



@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_unweighted_fast_path_has_the_general_paths_bits(reduction):
    # No weight and no ignored target: the kernels skip the masks and the gathers. An
    # explicit all-ones weight takes the general path; values and gradients agree bit for bit.
    xa = X.astype(np.float32)
    xa[1, 2] = np.inf
    y = ng.tensor(np.array([0, 3, 1, 1, 2]))
    outs = []
    for weight in (None, ng.tensor(np.ones(4, np.float32))):
        x = ng.tensor(xa, requires_grad=True)
        out = F.nll_loss(x, y, weight=weight, reduction=reduction)
        out.backward(ng.tensor(np.linspace(1, 2, 5, dtype=np.float32))
                     if reduction == "none" else None)
        outs.append((out.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype == np.float32
    ref = TF.nll_loss(torch.tensor(xa), torch.tensor([0, 3, 1, 1, 2]), reduction=reduction)
    np.testing.assert_allclose(outs[0][0], ref.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("targets, ignore_index", [
    ([0, 3, 1, 1, 2], 1),        # every target a class, one of them ignored
    ([0, -100, 1, 3, 2], -100),  # the default ignore_index among the targets
    ([2, 2, 2, 2, 2], 2),        # every row ignored: NaN mean, zero gradient
])
def test_ignored_targets_take_the_masked_kernels(targets, ignore_index):
    # One pass over the targets settles which kernel runs; where a row is ignored the masked
    # one must, in the forward and the backward, as PyTorch's values and gradients show.
    xa = X.astype(np.float64)
    x, tx = ng.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    out = F.cross_entropy(x, ng.tensor(np.array(targets)), ignore_index=ignore_index)
    ref = TF.cross_entropy(tx, torch.tensor(targets), ignore_index=ignore_index)
    out.backward()
    ref.backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_targets_changed_in_place_before_backward_are_caught():
    # The kernels trust a check made in the forward: the saved targets' version guards it.
    y = ng.tensor(np.array([0, 3, 1, 1, 2]))
    loss = F.nll_loss(ng.tensor(X.astype(np.float32), requires_grad=True), y)
    y[0] = 7
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()

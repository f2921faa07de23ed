"""ops.convolution's eager conv primitives against torch in float64: values, the node's
name, first and second order over groups, stride, padding and dilation (grouped and
ungrouped layouts of the windows' gradient), conv1d, the primitives under @ng.jit, and the
composite that vmap, forward mode and device plans take instead agreeing with them."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.nn import functional as F

TF = torch.nn.functional
RNG = np.random.default_rng(0)

# (input shape, weight shape, stride, padding, dilation, groups)
CASES = [
    ((2, 1, 6, 5), (3, 1, 3, 2), 1, 1, 1, 1),
    ((2, 6, 5, 5), (4, 6, 2, 3), 1, 0, 1, 1),
    ((1, 6, 7, 6), (2, 6, 3, 3), 2, (1, 2), (2, 1), 1),
    ((2, 4, 6, 6), (6, 2, 3, 3), (2, 1), 1, 1, 2),
    ((1, 6, 5, 5), (6, 1, 2, 2), 1, 1, 2, 6),  # depthwise
]


def _both(shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    return ([ng.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _close(got, want):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-10)


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CASES)
def test_values_and_two_orders_match_torch(xs, ws, stride, padding, dilation, groups):
    (nx, nw, nb), (tx, tw, tb) = _both([xs, ws, ws[:1]])
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    got, want = F.conv2d(nx, nw, nb, **kw), TF.conv2d(tx, tw, tb, **kw)
    assert got.grad_fn.name() == want.grad_fn.name() == "ConvolutionBackward0"
    _close(got, want)
    g = RNG.standard_normal(want.shape)
    ng_grads = ng.autograd.grad(got, [nx, nw, nb], ng.tensor(g), create_graph=True)
    t_grads = torch.autograd.grad(want, [tx, tw, tb], torch.tensor(g), create_graph=True)
    for a, b in zip(ng_grads, t_grads):
        _close(a, b)
    # second order: a cubic of the first-order gradients, back to the input and weight
    ng2 = ng.autograd.grad(sum((a * a * a).sum() for a in ng_grads[:2]), [nx, nw])
    t2 = torch.autograd.grad(sum((a * a * a).sum() for a in t_grads[:2]), [tx, tw])
    for a, b in zip(ng2, t2):
        _close(a, b)


def test_conv1d_without_bias_matches_torch():
    (nx, nw), (tx, tw) = _both([(2, 6, 5), (3, 6, 2)])
    got, want = F.conv1d(nx, nw, None, padding=1), TF.conv1d(tx, tw, None, padding=1)
    _close(got, want)
    assert got.grad_fn.next_functions[2][0] is None  # no bias: nothing flows there
    g = RNG.standard_normal(want.shape)
    got.backward(ng.tensor(g))
    want.backward(torch.tensor(g))
    _close(nx.grad, tx.grad)
    _close(nw.grad, tw.grad)


def test_only_the_weight_requires_grad_like_a_first_layer():
    (nw, nb), (tw, tb) = _both([(3, 1, 3, 3), (3,)])
    x = RNG.standard_normal((2, 1, 6, 6))
    got = F.conv2d(ng.tensor(x), nw, nb, padding=1)
    want = TF.conv2d(torch.tensor(x), tw, tb, padding=1)
    assert got.grad_fn.next_functions[0][0] is None  # the input's windows record no node
    got.sum().backward()
    want.sum().backward()
    _close(nw.grad, tw.grad)
    _close(nb.grad, tb.grad)


@pytest.mark.filterwarnings("ignore:Using padding=.same.")
def test_unbatched_and_asymmetric_same_padding_match_torch():
    (nx, nw), (tx, tw) = _both([(6, 5, 5), (2, 6, 2, 2)])
    for padding in (1, "same"):  # "same" with an even kernel pads unevenly: the composite
        got, want = F.conv2d(nx, nw, padding=padding), TF.conv2d(tx, tw, padding=padding)
        _close(got, want)
        got.sum().backward()
        want.sum().backward()
    _close(nx.grad, tx.grad)
    _close(nw.grad, tw.grad)


@ng.jit
def _jit_conv(x, w, b):
    return F.conv2d(x, w, b, stride=2, padding=1, groups=2).sum()


def test_jit_agrees_with_eager():
    arrays = [RNG.standard_normal(s) for s in [(1, 4, 5, 5), (2, 2, 3, 3), (2,)]]
    grads = []
    for fn in (_jit_conv, lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1,
                                                   groups=2).sum()):
        ts = [ng.tensor(a, requires_grad=True) for a in arrays]
        loss = fn(*ts)
        loss.backward()
        grads.append([float(loss.detach())] + [t.grad.numpy() for t in ts])
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    for a, b in zip(grads[0][1:], grads[1][1:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_vmap_and_forward_mode_match_torch():
    x, w = RNG.standard_normal((3, 2, 6, 5, 5)), RNG.standard_normal((2, 6, 2, 2))
    got = ng.func.vmap(lambda xi: F.conv2d(xi, ng.tensor(w), padding=1))(ng.tensor(x))
    want = torch.func.vmap(lambda xi: TF.conv2d(xi, torch.tensor(w), padding=1))(
        torch.tensor(x))
    _close(got, want)
    import numgrad.autograd.forward_ad as fwad
    t = RNG.standard_normal(x.shape[1:])
    with fwad.dual_level():
        y = F.conv2d(fwad.make_dual(ng.tensor(x[0]), ng.tensor(t)), ng.tensor(w), padding=1)
        tangent = fwad.unpack_dual(y).tangent
    _close(tangent, TF.conv2d(torch.tensor(t), torch.tensor(w), padding=1))


def test_a_plan_runs_the_primitives_on_the_cpu_and_the_composite_on_a_device():
    x = ng.tensor(RNG.standard_normal((1, 2, 4, 4)))
    w = ng.tensor(RNG.standard_normal((2, 2, 3, 3)))

    def prims(*args):
        return {e.prim.name for e in ng.jit(lambda x, w: F.conv2d(x, w)).trace(*args).eqns}
    assert "conv" in prims(x, w)
    if ng.cuda.is_available():
        assert "conv" not in prims(x.cuda(), w.cuda())


def test_jacrev_and_hessian_through_the_rules_match_torch():
    x, w = RNG.standard_normal((1, 2, 4, 4)), RNG.standard_normal((3, 2, 3, 3))
    got = ng.func.jacrev(lambda x, w: F.conv2d(x, w, padding=1), argnums=(0, 1))(
        ng.tensor(x), ng.tensor(w))
    want = torch.func.jacrev(lambda x, w: TF.conv2d(x, w, padding=1), argnums=(0, 1))(
        torch.tensor(x), torch.tensor(w))
    for a, b in zip(got, want):
        _close(a, b)
    got = ng.func.hessian(lambda w: (F.conv2d(ng.tensor(x), w, padding=1) ** 3).sum())(
        ng.tensor(w))
    want = torch.func.hessian(lambda w: (TF.conv2d(torch.tensor(x), w, padding=1) ** 3).sum())(
        torch.tensor(w))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-9)


def test_a_weight_changed_in_place_after_the_forward_is_refused_as_torch_refuses():
    (nx, nw), (tx, tw) = _both([(1, 2, 4, 4), (3, 2, 3, 3)])
    for lib, x, w, conv in ((torch, tx, tw, TF.conv2d), (ng, nx, nw, F.conv2d)):
        y = conv(x, w)
        with lib.no_grad():
            w.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

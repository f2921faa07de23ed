"""nn.functional.cross_entropy's eager fast path (ops.losses.cross_entropy): torch's values,
gradients, graph (NllLossBackward0 over LogSoftmaxBackward0) and errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import numgrad as ng
import numgrad.nn.functional as F

RNG = np.random.default_rng(3)
Z = RNG.standard_normal((5, 4)).astype(np.float32)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets", [[0, 3, 1, 2, 2], [0, -100, 1, 2, -100], [1, 1, 3, 0, 2]])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_values_and_gradients_match_torch(reduction, targets, ignore_index):
    z, tz = ng.tensor(Z, requires_grad=True), torch.tensor(Z, requires_grad=True)
    y, ty = ng.tensor(targets), torch.tensor(targets)
    try:
        ref = TF.cross_entropy(tz, ty, ignore_index=ignore_index, reduction=reduction)
    except IndexError as e:  # a -100 that is not ignore_index: torch's error, ours too
        with pytest.raises(IndexError, match=str(e)):
            F.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction)
        return
    out = F.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.arange(1, out.numel() + 1, dtype=np.float32).reshape(out.shape)
    out.backward(ng.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_graph_is_torchs():
    z = ng.tensor(Z, requires_grad=True)
    out = F.cross_entropy(z, ng.tensor([0, 3, 1, 2, 2]))
    tout = TF.cross_entropy(torch.tensor(Z, requires_grad=True), torch.tensor([0, 3, 1, 2, 2]))
    assert out.grad_fn.name() == tout.grad_fn.name()
    below = out.grad_fn.next_functions[0][0]
    assert below.name() == tout.grad_fn.next_functions[0][0].name()


def test_create_graph_second_order_matches_torch():
    z, tz = ng.tensor(Z, requires_grad=True), torch.tensor(Z, requires_grad=True)
    (g,) = ng.autograd.grad(F.cross_entropy(z, ng.tensor([0, 3, 1, 2, 2])), z,
                            create_graph=True)
    (tg,) = torch.autograd.grad(TF.cross_entropy(tz, torch.tensor([0, 3, 1, 2, 2])), tz,
                                create_graph=True)
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_target_out_of_range_raises_torchs_error():
    with pytest.raises(IndexError) as ours:
        F.cross_entropy(ng.tensor(Z), ng.tensor([0, 4, 1, 2, 2]))
    with pytest.raises(IndexError) as theirs:
        TF.cross_entropy(torch.tensor(Z), torch.tensor([0, 4, 1, 2, 2]))
    assert str(ours.value) == str(theirs.value)


def test_modified_target_before_backward_is_an_error():
    z, y = ng.tensor(Z, requires_grad=True), ng.tensor([0, 3, 1, 2, 2])
    out = F.cross_entropy(z, y)
    y.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()

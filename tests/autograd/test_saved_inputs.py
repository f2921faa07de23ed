"""A recorded op keeps its saved inputs as (tensor, version) (ops.dispatch.record): the
version check, the freed error, retain_graph and saved_tensors_hooks behave as torch's."""
import pytest
import torch

import numgrad as ng


def _error(lib, fn):
    with pytest.raises(RuntimeError) as info:
        fn(lib)
    return str(info.value)


def _modified(lib):
    x = lib.ones(3, requires_grad=True)
    w = lib.ones(3, requires_grad=True)
    a = x.mul(2)
    y = a * w
    a.add_(1)
    y.sum().backward()


def test_modified_saved_input_names_version_and_producer_as_torch():
    ours, theirs = _error(ng, _modified), _error(torch, _modified)
    assert ours.split(" Hint")[0] == theirs.split(" Hint")[0].replace("torch.", "numgrad.")


def _twice(lib):
    x = lib.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def test_second_backward_without_retain_graph_raises_torchs_error():
    assert _error(ng, _twice) == _error(torch, _twice)


def test_retain_graph_keeps_saved_inputs():
    x = ng.tensor([1., 2.], requires_grad=True)
    y = (x * x.sin()).sum()
    y.backward(retain_graph=True)
    y.backward()
    tx = torch.tensor([1., 2.], requires_grad=True)
    ty = (tx * tx.sin()).sum()
    ty.backward(retain_graph=True)
    ty.backward()
    assert x.grad.tolist() == pytest.approx(tx.grad.tolist())


def test_saved_tensors_hooks_see_every_saved_input():
    packed = []
    x = ng.tensor([1., 2.], requires_grad=True)
    with ng.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = (x * x.sin()).sum()
    y.backward()
    tx = torch.tensor([1., 2.], requires_grad=True)
    tpacked = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: tpacked.append(t) or t, lambda t: t):
        ty = (tx * tx.sin()).sum()
    ty.backward()
    assert len(packed) == len(tpacked)
    assert x.grad.tolist() == pytest.approx(tx.grad.tolist())

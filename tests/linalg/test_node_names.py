"""The grad_fn names of the decompositions' outputs and vector_norm(ord=0), against torch."""
import pytest
import torch

import numgrad as ng


def _pair(shape):
    g = torch.Generator().manual_seed(0)
    t = torch.randn(*shape, generator=g, dtype=torch.float64)
    return ng.tensor(t.numpy(), requires_grad=True), t.requires_grad_()


def _names(outs):
    return [type(o.grad_fn).__name__ if isinstance(o, torch.Tensor) else o.grad_fn.name()
            for o in outs]


@pytest.mark.parametrize("fn, kw", [("qr", {}), ("qr", {"mode": "r"}),
                                    ("qr", {"mode": "complete"}), ("eigh", {}),
                                    ("svd", {}), ("svd", {"full_matrices": False})])
def test_decomposition_parts_carry_torch_node_name(fn, kw):
    a, t = _pair((2, 3, 3))
    assert _names(getattr(ng.linalg, fn)(a, **kw)) == _names(getattr(torch.linalg, fn)(t, **kw))


@pytest.mark.parametrize("fn", ["eigvalsh", "svdvals"])
def test_values_only_carry_torch_node_name(fn):
    a, t = _pair((3, 3))
    assert _names([getattr(ng.linalg, fn)(a)]) == _names([getattr(torch.linalg, fn)(t)])


def test_named_parts_still_differentiate_like_torch():
    a, t = _pair((3, 2))
    q, r = ng.linalg.qr(a)
    (q.sum() + r.sum()).backward()
    tq, tr = torch.linalg.qr(t)
    (tq.sum() + tr.sum()).backward()
    assert torch.allclose(torch.from_numpy(a.grad.numpy()), t.grad)


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True},
                                {"keepdim": True}, {"dim": (-1, 0)}])
def test_vector_norm_ord_zero_has_a_node_and_no_gradient(kw):
    data = [[0.0, -0.0, 2.0], [float("inf"), float("nan"), -3.0]]
    x, t = ng.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    n, tn = ng.linalg.vector_norm(x, ord=0, **kw), torch.linalg.vector_norm(t, ord=0, **kw)
    assert n.grad_fn.name() == type(tn.grad_fn).__name__ == "LinalgVectorNormBackward0"
    assert n.tolist() == tn.tolist() and n.dtype == ng.float32
    (n.sum() + x.sum()).backward()
    (tn.sum() + t.sum()).backward()   # the norm adds nothing to the gradient
    assert x.grad.tolist() == t.grad.tolist()
    n2, tn2 = ng.linalg.vector_norm(x, ord=0), torch.linalg.vector_norm(t, ord=0)
    n2.backward()
    tn2.backward()


def test_vector_norm_ord_zero_of_a_scalar():
    x, t = ng.tensor(2.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    assert ng.linalg.vector_norm(x, ord=0).tolist() == torch.linalg.vector_norm(t, ord=0).item()


def test_vector_norm_ord_zero_without_grad_is_a_constant():
    assert ng.linalg.vector_norm(ng.tensor([1.0, 0.0]), ord=0).grad_fn is None


_count = ng.jit(lambda x: ng.linalg.vector_norm(x, ord=0, dim=1) + x.sum(1))


def test_vector_norm_ord_zero_under_jit():
    data = [[0.0, 1.0, 2.0], [0.0, 0.0, -3.0]]
    x, t = ng.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ty = _count(x), torch.linalg.vector_norm(t, ord=0, dim=1) + t.sum(1)
    assert y.tolist() == ty.tolist()
    y.sum().backward()
    ty.sum().backward()
    assert x.grad.tolist() == t.grad.tolist()

"""Boolean-mask indexing, masked_select and nonzero under @ng.jit: their extent is a count of
values, so the plan breaks there (compiler.graph_break): compiled segments, and between them
one eager step with the extent known at run time, forward and backward. Values, gradients and
errors are PyTorch's; a new count reuses the segments (shape-generic after the second);
functions that segments cannot replay exactly (in-place writes to inputs, random draws,
hooks, a gradient taken inside through a break) run eagerly; x[mask] = scalar compiles
without a break; trace() names the line."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

X = np.array([0.5, -1.0, 2.0, -0.25, 1.5])


def L(x):
    return torch if isinstance(x, torch.Tensor) else ng


def read(x):
    y = x.tanh() * 2
    return (y[y > 0] ** 2).sum() + y.mean()  # <break>


def two_breaks(x, w):
    a = x * w
    b = a[a > 0].exp()
    c = L(x).nonzero(x < 0)
    return b.sum() * c.shape[0] + (L(x).masked_select(a, a < 1) * 3).sum() + a.sum()


def tuple_results(x):
    d = x.detach()  # (torch's unique of a tensor that requires grad fails in backward)
    vals, counts = L(x).unique(d.round() if L(x) is torch else ng.floor(d + 0.5),
                               return_counts=True)
    rows, = L(x).nonzero(x > 0, as_tuple=True)
    return (vals * counts).sum() + x[rows].sum() * rows.shape[0]


def write_tensor(x, v):
    x = x * 1
    x[x > 0] = v
    return x.sin()


def write_scalar(x, v):
    x = x * 1
    x[x > 0] = v
    return x.sin()


def dropout_then_mask(x):
    y = L(x).nn.functional.dropout(x, 0.5)
    return y[y != 0].sum()


def inplace_then_mask(x):
    x.add_(1)
    return x[x > 1].sum()


def grad_inside(x):
    y = x.sin() * 3
    loss = (y[y > 0] ** 2).sum()
    (g,) = L(x).autograd.grad(loss, x, create_graph=True)  # x only through the break
    (h,) = L(x).autograd.grad(loss + y.sum(), x, create_graph=True)  # and around it
    return (g * x).sum() + (h * h).sum() + loss


def grad_around(x):
    y = x.sin() * 3
    loss = (y[y > 0] ** 2).sum() + y.sum()
    (h,) = L(x).autograd.grad(loss, x, create_graph=True)  # x through the break and around
    return (h * h).sum()


def item_after_break(x):
    z = x[x > 0]
    return x * z.sum().item()


JITTED = {f.__name__: ng.jit(f) for f in (read, two_breaks, tuple_results, write_tensor,
                                           write_scalar,
                                           dropout_then_mask, inplace_then_mask,
                                           grad_inside, grad_around, item_after_break)}


def _compare(name, arrays, grads=True):
    ng_in = [ng.tensor(a, requires_grad=grads) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=grads) for a in arrays]
    got, want = JITTED[name](*ng_in), globals()[name](*t_in)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-13)
    if grads:
        w = np.linspace(1, 2, want.numel()).reshape(tuple(want.shape))
        (got * ng.tensor(w)).sum().backward()
        (want * torch.tensor(w)).sum().backward()
        for n, t in zip(ng_in, t_in):
            np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), rtol=1e-13)
    return got


def test_segments_match_torch_and_compile_once_per_count():
    for k, a in enumerate([X, X[::-1].copy(), -X, X + 3]):  # counts 3, 3, 2, 5
        out = _compare("read", [a])
        assert out.grad_fn.name() == "CompiledFunctionBackward"
    assert JITTED["read"].stats.traces == 1  # the one signature; its segments have their own


def test_two_breaks_nonzero_and_masked_select():
    out = _compare("two_breaks", [X, np.array([1.0, 2.0, -1.0, 0.5, 0.25])])
    assert out.grad_fn.name() == "CompiledFunctionBackward"


def test_breaks_with_tuple_results():
    _compare("tuple_results", [np.array([0.2, 1.4, 1.2, -0.7, 3.0])])


def test_mask_writes():
    _compare("write_tensor", [X, np.array([3.0, 4.0, 5.0])])  # a value per place: a break
    _compare("write_scalar", [X, np.array(3.0)])  # one value: a where, no break
    plan = next(iter(JITTED["write_scalar"]._plans.values()))
    assert not getattr(plan, "graph_break", False) and JITTED["write_scalar"].stats.kernels


def test_what_segments_cannot_replay_runs_eagerly():
    ng.manual_seed(3)
    got = JITTED["dropout_then_mask"](ng.tensor(X))
    ng.manual_seed(3)
    np.testing.assert_array_equal(got.numpy(), dropout_then_mask(ng.tensor(X)).numpy())
    x, xe = ng.tensor(X), ng.tensor(X)
    got, want = JITTED["inplace_then_mask"](x), inplace_then_mask(xe)
    np.testing.assert_array_equal(x.numpy(), X + 1)  # written once, not once per segment
    assert got.item() == want.item()
    _compare("item_after_break", [X], grads=False)  # .item() of a break's result
    _compare("grad_inside", [X])  # a gradient through the break, taken inside
    _compare("grad_around", [X])
    for transform in (ng.grad, ng.value_and_grad):  # a derived gradient through a break
        got, want = ng.jit(transform(grad_around))(ng.tensor(X)), transform(grad_around)(
            ng.tensor(X))
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-13)


def test_errors_are_eagers():
    f = ng.jit(lambda x, m: ng.masked_select(x, m > 0))
    with pytest.raises(RuntimeError) as want:
        torch.masked_select(torch.tensor(X), torch.tensor([True, False]))
    with pytest.raises(RuntimeError) as got:
        f(ng.tensor(X), ng.tensor([1.0, -1.0]))
    assert str(got.value) == str(want.value)
    g = ng.jit(lambda x: x[x > 0][7])  # out of range in the segment after the break
    with pytest.raises(IndexError) as want:
        torch.tensor(X)[torch.tensor(X) > 0][7]
    with pytest.raises(IndexError) as got:
        g(ng.tensor(X))
    assert str(got.value) == str(want.value)


def test_a_constant_mask_still_compiles_and_trace_names_the_break():
    f = ng.jit(lambda x, m: x[m] * 2)
    m = X > 0
    np.testing.assert_array_equal(f(ng.tensor(X), m).numpy(), X[m] * 2)
    assert f.stats.kernels > 0  # a NumPy mask is a constant: a static extent
    with pytest.raises(ng.TracingError, match=r"test_jit_graph_break.py:\d+: `return \(y\[y"):
        JITTED["read"].trace(ng.tensor(X))


@pytest.mark.skipif(not ng.cuda.is_available(),
                    reason="neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")
def test_cuda_segments():
    x = ng.tensor(X[:3]).cuda().requires_grad_()
    out = ng.jit(read)(x)
    out.backward()
    tx = torch.tensor(X[:3], requires_grad=True)
    want = read(tx)
    want.backward()
    assert x.grad.device.type == "cuda" and out.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(out.item(), want.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12)

"""The backward engine: graph nodes, retain/create graph, inputs=, autograd.grad, accumulation,
non-leaf .grad, error paths and deep graphs. torch is the oracle for every value and message."""

from __future__ import annotations

import re
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close, to_numpy, to_torch  # noqa: E402

SECOND_TIME_MSG = ("Trying to backward through the graph a second time (or directly access saved "
                   "tensors after they have already been freed).")
UNUSED_MSG = ("appears to not have been used in the graph. Set allow_unused=True if this is the "
              "desired behavior.")
NO_GRAD_FN_MSG = "element 0 of tensors does not require grad and does not have a grad_fn"


def pair(data, dtype="float32"):
    x = ng.tensor(np.array(data, dtype=dtype), requires_grad=True)
    return x, to_torch(x)


# ----------------------------------------------------------------------------- grad_fn names
NAMED = [
    ("mul", lambda x, y: x * y),
    ("mul_scalar", lambda x, y: x * 2.0),
    ("add", lambda x, y: x + y),
    ("sub", lambda x, y: x - y),
    ("div", lambda x, y: x / y),
    ("neg", lambda x, y: -x),
    ("clone", lambda x, y: x.clone()),
    ("sum", lambda x, y: x.sum()),
    ("mean", lambda x, y: x.mean()),
    ("pow_scalar", lambda x, y: x ** 2),
    ("pow_tensor", lambda x, y: x ** y),
    ("exp", lambda x, y: x.exp()),
    ("log", lambda x, y: x.log()),
    ("sqrt", lambda x, y: x.sqrt()),
    ("sin", lambda x, y: x.sin()),
    ("cos", lambda x, y: x.cos()),
    ("tanh", lambda x, y: x.tanh()),
    ("sigmoid", lambda x, y: x.sigmoid()),
    ("relu", lambda x, y: x.relu()),
    ("abs", lambda x, y: x.abs()),
]


@pytest.mark.parametrize("fn", [n[1] for n in NAMED], ids=[n[0] for n in NAMED])
def test_grad_fn_name_matches_torch(fn):
    x, tx = pair([1.0, 2.0, 3.0])
    y, ty = pair([0.5, 1.5, 2.5])
    out, tout = fn(x, y), fn(tx, ty)
    assert out.grad_fn.name() == type(tout.grad_fn).__name__


def test_root_grad_fn_names():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    assert (x * x).grad_fn.name() == "MulBackward0"
    assert (x + x).grad_fn.name() == "AddBackward0"
    assert x.clone().grad_fn.name() == "CloneBackward0"
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert (x ** 2).grad_fn.name() == "PowBackward0"


def _is_accumulate_grad(node):
    return node is not None and node.name() in ("AccumulateGrad",
                                                "torch::autograd::AccumulateGrad")


def test_next_functions_structure():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    c = ng.tensor([3.0, 4.0])  # does not require grad
    out = x * c
    nf = out.grad_fn.next_functions
    tx = to_torch(x)
    tnf = (tx * torch.tensor([3.0, 4.0])).grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == len(tnf) == 2
    for entry in nf:
        assert isinstance(entry, tuple) and len(entry) == 2
        assert isinstance(entry[1], int)
    assert _is_accumulate_grad(nf[0][0]) and nf[0][1] == 0
    assert nf[1][0] is None and nf[1][1] == 0


def test_next_functions_chain():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = (y * y).sum()
    assert z.grad_fn.name() == "SumBackward0"
    (mul, idx), = z.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and idx == 0
    (e1, _), (e2, _) = mul.next_functions
    assert e1.name() == e2.name() == "ExpBackward0"
    assert e1 is e2  # one node per op, shared by both uses
    (acc, _), = e1.next_functions
    assert _is_accumulate_grad(acc)


def test_accumulate_grad_node_points_at_leaf():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert acc.variable is x


def test_leaf_and_no_grad_results_have_no_grad_fn():
    x = ng.tensor([1.0], requires_grad=True)
    assert x.grad_fn is None
    assert (ng.tensor([1.0]) * 2).grad_fn is None


# ----------------------------------------------------------------------------- retain_graph
def test_second_backward_without_retain_graph_raises():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    y.backward()
    g = to_numpy(x.grad)
    with pytest.raises(RuntimeError, match=re.escape(SECOND_TIME_MSG)):
        y.backward()
    np.testing.assert_array_equal(to_numpy(x.grad), g)  # untouched by the failed call


def test_second_backward_mul_of_two_tensors_raises():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    w = ng.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=re.escape(SECOND_TIME_MSG)):
        y.backward()


def test_autograd_grad_frees_graph_too():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    ng.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match=re.escape(SECOND_TIME_MSG)):
        ng.autograd.grad(y, x)


def test_retain_graph_accumulates_twice():
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        once = x.grad.clone()
        y.backward(retain_graph=True)
        y.backward()
        return once, x.grad

    once, thrice = run(ng)
    tonce, tthrice = run(torch)
    assert_close(once, tonce)
    assert_close(thrice, tthrice)
    np.testing.assert_allclose(to_numpy(thrice), 3 * to_numpy(once), rtol=1e-6)


# ----------------------------------------------------------------------------- create_graph
def _hvp(m, xd, yd, vd):
    x = m.tensor(xd, requires_grad=True)
    y = m.tensor(yd, requires_grad=True)
    f = (x * y).tanh().sum()
    gx, gy = m.autograd.grad(f, [x, y], create_graph=True)
    v = m.tensor(vd)
    s = (gx * v).sum() + (gy * v).sum()
    hx, hy = m.autograd.grad(s, [x, y])
    return gx, gy, hx, hy


def test_hessian_vector_product_matches_torch():
    xd = np.array([0.3, -0.7, 1.1], dtype=np.float64)
    yd = np.array([1.2, 0.4, -0.5], dtype=np.float64)
    vd = np.array([1.0, -2.0, 0.5], dtype=np.float64)
    got = _hvp(ng, xd, yd, vd)
    want = _hvp(torch, xd, yd, vd)
    for g, w in zip(got, want):
        assert_close(g.detach(), w.detach())
    assert got[0].requires_grad and got[0].grad_fn is not None


def test_create_graph_third_order():
    def run(m):
        x = m.tensor([0.5, -1.5, 2.0], dtype=m.float64, requires_grad=True)
        (g1,) = m.autograd.grad((x ** 4).sum(), x, create_graph=True)
        (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = m.autograd.grad(g2.sum(), x)
        return g1, g2, g3

    for g, w in zip(run(ng), run(torch)):
        assert_close(g.detach(), w.detach())
    np.testing.assert_allclose(to_numpy(run(ng)[2]), 24 * np.array([0.5, -1.5, 2.0]))


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph_gives_differentiable_grad():
    x = ng.tensor([1.0, 2.0], dtype=ng.float64, requires_grad=True)
    tx = to_torch(x)
    (x ** 3).sum().backward(create_graph=True)
    (tx ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    (gg,) = ng.autograd.grad(x.grad.sum(), x)
    (tgg,) = torch.autograd.grad(tx.grad.sum(), tx)
    assert_close(gg, tgg)


def test_without_create_graph_grad_has_no_graph():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ng.autograd.grad((x ** 3).sum(), x)
    assert g.requires_grad is False and g.grad_fn is None
    (x ** 3).sum().backward()
    assert x.grad.requires_grad is False and x.grad.grad_fn is None


# ----------------------------------------------------------------------------- inputs=
def test_backward_inputs_accumulates_only_into_given():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = m.tensor([3.0, 4.0], requires_grad=True)
        (x * y).sum().backward(inputs=[x])
        return x, y

    x, y = run(ng)
    tx, ty = run(torch)
    assert_close(x.grad, tx.grad)
    assert y.grad is None and ty.grad is None


def test_backward_inputs_single_tensor():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = ng.tensor([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=y)
    assert x.grad is None
    np.testing.assert_array_equal(to_numpy(y.grad), [1.0, 2.0])


# ----------------------------------------------------------------------------- autograd.grad
def test_autograd_grad_returns_tuple_and_leaves_grad_alone():
    x, tx = pair([1.0, 2.0, 3.0])
    out = ng.autograd.grad((x.sin() * x).sum(), [x])
    tout = torch.autograd.grad((tx.sin() * tx).sum(), [tx])
    assert isinstance(out, tuple) and len(out) == 1
    assert_close(out[0], tout[0])
    assert x.grad is None


def test_autograd_grad_single_tensor_input():
    x, tx = pair([1.0, 2.0])
    out = ng.autograd.grad((x * x).sum(), x)
    assert isinstance(out, tuple) and len(out) == 1
    assert_close(out[0], torch.autograd.grad((tx * tx).sum(), tx)[0])


def test_autograd_grad_with_grad_outputs():
    x, tx = pair([[1.0, 2.0], [3.0, 4.0]])
    go = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float32)
    (g,) = ng.autograd.grad(x * x, x, grad_outputs=ng.tensor(go))
    (tg,) = torch.autograd.grad(tx * tx, tx, grad_outputs=torch.tensor(go))
    assert_close(g, tg)
    (g,) = ng.autograd.grad([x * x], [x], grad_outputs=[ng.tensor(go)])
    assert_close(g, tg)


def test_autograd_grad_multiple_outputs_sum():
    x, tx = pair([1.0, 2.0])
    (g,) = ng.autograd.grad([(x * x).sum(), x.exp().sum()], [x])
    (tg,) = torch.autograd.grad([(tx * tx).sum(), tx.exp().sum()], [tx])
    assert_close(g, tg)


def test_autograd_grad_non_scalar_requires_grad_outputs():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError,
                       match=re.escape("grad can be implicitly created only for scalar outputs")):
        ng.autograd.grad(x * 2, x)


def test_autograd_grad_allow_unused():
    x, tx = pair([1.0, 2.0])
    y, ty = pair([3.0, 4.0])
    gx, gy = ng.autograd.grad((x * x).sum(), [x, y], allow_unused=True)
    tgx, tgy = torch.autograd.grad((tx * tx).sum(), [tx, ty], allow_unused=True)
    assert_close(gx, tgx)
    assert gy is None and tgy is None


def test_autograd_grad_unused_without_allow_unused_raises():
    x, tx = pair([1.0, 2.0])
    y, ty = pair([3.0, 4.0])
    with pytest.raises(RuntimeError, match=re.escape(UNUSED_MSG)):
        torch.autograd.grad((tx * tx).sum(), [tx, ty])
    with pytest.raises(RuntimeError, match=re.escape(UNUSED_MSG)):
        ng.autograd.grad((x * x).sum(), [x, y])


def test_autograd_grad_on_output_without_graph_raises():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        ng.autograd.grad(ng.tensor([1.0]).sum(), [x])


def test_autograd_grad_wrt_intermediate():
    x, tx = pair([1.0, 2.0])
    h, th = x * 3, tx * 3
    (g,) = ng.autograd.grad((h ** 2).sum(), h)
    (tg,) = torch.autograd.grad((th ** 2).sum(), th)
    assert_close(g, tg)
    assert x.grad is None


# ----------------------------------------------------------------------------- accumulation
def test_accumulates_into_existing_grad():
    def run(m):
        x = m.tensor([1.0, -2.0], requires_grad=True)
        (x * 3).sum().backward()
        (x ** 2).sum().backward()
        (x.exp() * 0.5).sum().backward()
        return x

    assert_close(run(ng).grad, run(torch).grad)


def test_accumulation_does_not_alias_gradient_argument():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    g = ng.tensor([1.0, 1.0])
    (x * 1).backward(g)
    (x * 1).backward(g)
    np.testing.assert_array_equal(to_numpy(g), [1.0, 1.0])
    np.testing.assert_array_equal(to_numpy(x.grad), [2.0, 2.0])


def test_broadcast_gradient_is_reduced_to_input_shape():
    def run(m):
        a = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        b = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        c = m.tensor(2.0, requires_grad=True)
        ((a * b + c) ** 2).sum().backward()
        return a, b, c

    for g, w in zip(run(ng), run(torch)):
        assert_close(g.grad, w.grad)


# ----------------------------------------------------------------------------- non-leaf .grad
def test_non_leaf_grad_warns_and_is_none():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match=re.escape("retain_grad()")):
        assert y.grad is None


def test_retain_grad_keeps_non_leaf_grad():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        z = (y ** 2).sum()
        z.backward()
        return x, y

    x, y = run(ng)
    tx, ty = run(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(y.grad, ty.grad)
    assert_close(x.grad, tx.grad)


def test_retain_grad_accumulates_across_backward():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.retain_grad()
        z = (y * 3).sum()
        z.backward(retain_graph=True)
        z.backward()
        return y.grad

    assert_close(run(ng), run(torch))


def test_retain_grad_on_leaf_is_noop():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [2.0, 2.0])


# ----------------------------------------------------------------------------- gradient shape
def test_gradient_of_wrong_shape_raises():
    x = ng.ones(2, 3, requires_grad=True)
    y = x * 2
    msg = ("Mismatch in shape: grad_output[0] has a shape of (3,) and output[0] has a shape of "
           "(2, 3).")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        y.backward(ng.ones(3))
    assert x.grad is None


def test_failed_backward_leaves_existing_grad_untouched():
    x = ng.ones(2, 3, requires_grad=True)
    (x * 2).sum().backward()
    before = to_numpy(x.grad)
    y = x * 5
    with pytest.raises(RuntimeError):
        y.backward(ng.ones(3))
    np.testing.assert_array_equal(to_numpy(x.grad), before)
    assert x._version == 0
    # the graph is still usable after the failed call
    y.backward(ng.ones(2, 3))
    np.testing.assert_array_equal(to_numpy(x.grad), before + 5)


def test_backward_under_no_grad_of_graph_built_outside_works():
    x, tx = pair([1.0, 2.0])
    y, ty = (x ** 2).sum(), (tx ** 2).sum()
    with ng.no_grad():
        y.backward()
    with torch.no_grad():
        ty.backward()
    assert_close(x.grad, tx.grad)


# ----------------------------------------------------------------------------- graph shapes
def test_diamond_graph():
    def run(m):
        x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        a = x * 2
        b = a.exp()
        c = a.sin()
        d = b * c + a * x + x
        e = (d * d).sum() + x.sum()
        e.backward()
        return x

    assert_close(run(ng).grad, run(torch).grad)


def test_same_tensor_used_many_times():
    def run(m):
        x = m.tensor([1.5, -0.5], requires_grad=True)
        y = x * x * x + x / x - x
        y.sum().backward()
        return x

    assert_close(run(ng).grad, run(torch).grad)


def test_gradient_through_unused_branch_is_not_accumulated():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        w = m.tensor([3.0, 4.0], requires_grad=True)
        _unused = w.exp()
        (x * 2).sum().backward()
        return x, w

    x, w = run(ng)
    assert w.grad is None
    assert_close(x.grad, run(torch)[0].grad)


def test_deep_chain_does_not_hit_recursion_limit():
    n = max(2000, sys.getrecursionlimit() + 500)  # deeper than Python's recursion limit

    def run(m):
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        y = x
        for i in range(n):
            y = y * 1.0005 if i % 2 else y + 0.001
        y.sum().backward()
        return x, y

    x, y = run(ng)
    tx, ty = run(torch)
    assert_close(y.detach(), ty.detach())
    assert_close(x.grad, tx.grad)


def test_deep_chain_autograd_grad_and_teardown():
    x = ng.tensor([0.1], dtype=ng.float64, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y.sin()
    (g,) = ng.autograd.grad(y.sum(), x)
    tx = to_torch(x)
    ty = tx
    for _ in range(3000):
        ty = ty.sin()
    (tg,) = torch.autograd.grad(ty.sum(), tx)
    assert_close(g, tg)
    del y  # dropping a deep graph must not overflow the stack either


# ----------------------------------------------------------------------------- training loop
def test_sgd_training_loop_matches_torch():
    """The everyday pattern: forward, backward, in-place update under no_grad, zero the grad."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3)).astype(np.float32)
    Y = rng.standard_normal((8, 2)).astype(np.float32)
    W0 = rng.standard_normal((2, 3)).astype(np.float32)
    b0 = np.zeros(2, dtype=np.float32)

    def run(m):
        F = m.nn.functional
        w = m.tensor(W0.copy(), requires_grad=True)
        b = m.tensor(b0.copy(), requires_grad=True)
        w_id = id(w)
        losses = []
        for _ in range(5):
            loss = F.mse_loss(F.linear(m.tensor(X), w, b).tanh(), m.tensor(Y))
            loss.backward()
            losses.append(loss.item())
            with m.no_grad():
                w -= 0.5 * w.grad
                b.sub_(0.5 * b.grad)
            w.grad.zero_()
            b.grad = None
        assert id(w) == w_id and w.is_leaf and w.requires_grad
        return w, b, losses

    w, b, losses = run(ng)
    tw, tb, tlosses = run(torch)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5)
    assert_close(w.detach(), tw.detach())
    assert_close(b.detach(), tb.detach())
    assert_close(w.grad, tw.grad)
    assert b.grad is None


def test_leaf_grad_does_not_alias_backward_gradient():
    v = ng.tensor([1.0, 2.0], requires_grad=True)
    g = ng.tensor([3.0, 4.0])
    v.backward(g)
    g.add_(100.0)
    np.testing.assert_array_equal(to_numpy(v.grad), [3.0, 4.0])
    v.grad.mul_(0.0)
    np.testing.assert_array_equal(to_numpy(g), [103.0, 104.0])


def test_autograd_grad_retain_graph_allows_reuse():
    x, tx = pair([0.5, 1.5])
    y, ty = (x.exp() * x).sum(), (tx.exp() * tx).sum()
    (g1,) = ng.autograd.grad(y, x, retain_graph=True)
    (g2,) = ng.autograd.grad(y, x)
    (tg,) = torch.autograd.grad(ty, tx)
    assert_close(g1, tg)
    assert_close(g2, tg)


def test_setitem_with_grad_value_flows_to_value():
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        w = m.tensor([10.0, 20.0], requires_grad=True)
        y = x * 1
        y[1:3] = w * w
        (y * m.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        return x, w, y

    x, w, y = run(ng)
    tx, tw, ty = run(torch)
    assert_close(y.detach(), ty.detach())
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)

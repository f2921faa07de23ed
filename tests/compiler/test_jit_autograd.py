"""Compiled calls inside the eager autograd graph.

Outputs of ``ng.jit`` functions are ordinary tensors: hooks and ``retain_grad`` on them,
eager ops before and after them, compiled calls feeding compiled calls, nested jitted
functions, in-place ops on inputs (written back to the caller), and grad mode. Gradients
are compared with torch running the same Python function eagerly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import W_DATA, X_DATA, assert_close, pair, to_numpy  # noqa: E402

COMPILED = ["cpu", "numpy"]
G_DATA = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=np.float32)


def jits(fn):
    return {"cpu": ng.jit(fn), "numpy": ng.jit(fn, backend="numpy")}


# ----------------------------------------------------------------------------- functions
def _elementwise(x, w):
    return x.tanh() * w + x * x


def _two_outputs(x, w):
    s = x * w
    return s.sigmoid(), (s - x).sum()


def _scale_sum(x):
    return (x * 3.0).sum()


ELEMENTWISE = jits(_elementwise)
TWO_OUTPUTS = jits(_two_outputs)
SCALE_SUM = jits(_scale_sum)


# ----------------------------------------------------------------------------- output hooks
@pytest.mark.parametrize("mode", COMPILED)
def test_hook_on_compiled_output_replaces_gradient(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    seen, tseen = [], []

    def hook(g):
        seen.append(to_numpy(g))
        return g * g

    def thook(g):
        tseen.append(to_numpy(g))
        return g * g

    y = ELEMENTWISE[mode](x, w)
    assert y.grad_fn.name() == "CompiledFunctionBackward"
    handle = y.register_hook(hook)
    ty = _elementwise(tx, tw)
    ty.register_hook(thook)
    (y.exp()).sum().backward(retain_graph=True)
    (ty.exp()).sum().backward(retain_graph=True)
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], tseen[0], rtol=1e-5)
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)
    handle.remove()
    (y.exp()).sum().backward()
    assert len(seen) == 1  # removed
    # the second backward ran without the hook: compare with a hook-free torch run
    tx2, tw2 = pair(X_DATA)[1], pair(W_DATA)[1]
    _elementwise(tx2, tw2).exp().sum().backward()
    assert_close(x.grad, tx.grad + tx2.grad)


@pytest.mark.parametrize("mode", COMPILED)
def test_retain_grad_on_compiled_outputs(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    a, s = TWO_OUTPUTS[mode](x, w)
    ta, ts = _two_outputs(tx, tw)
    for t in (a, s, ta, ts):
        t.retain_grad()
    loss = (a * a).sum() + s * 2.0
    tloss = (ta * ta).sum() + ts * 2.0
    loss.backward()
    tloss.backward()
    assert_close(a.grad, ta.grad)
    assert_close(s.grad, ts.grad)
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("mode", COMPILED)
def test_unused_output_gets_zero_cotangent(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    a, s = TWO_OUTPUTS[mode](x, w)
    ta, ts = _two_outputs(tx, tw)
    s.backward()  # `a` takes no part
    ts.backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)
    x.grad = None
    w.grad = None
    tx.grad = None
    tw.grad = None
    a, s = TWO_OUTPUTS[mode](x, w)
    ta, ts = _two_outputs(tx, tw)
    a.backward(ng.tensor(G_DATA))
    ta.backward(torch.tensor(G_DATA))
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


# ----------------------------------------------------------------------------- eager <-> compiled
def _mixed(lib_or_mode, x, w, b):
    """eager -> compiled -> eager -> compiled -> eager."""
    if lib_or_mode in COMPILED:
        ew, tm, sc = ELEMENTWISE[lib_or_mode], TWO_OUTPUTS[lib_or_mode], SCALE_SUM[lib_or_mode]
    else:
        ew, tm, sc = _elementwise, _two_outputs, _scale_sum
    h = x * b + 1.0             # eager
    y = ew(h, w)                # compiled
    z = y.relu() - w            # eager
    a, s = tm(z, h)             # compiled, fed by eager and compiled values
    return sc(a) + s * s + (z * z).mean()  # compiled + eager


@pytest.mark.parametrize("mode", COMPILED)
def test_eager_and_compiled_mix_in_one_graph(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    b, tb = pair(G_DATA)
    out = _mixed(mode, x, w, b)
    tout = _mixed("torch", tx, tw, tb)
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    for got, want in ((x, tx), (w, tw), (b, tb)):
        assert_close(got.grad, want.grad)
    e = [pair(d) for d in (X_DATA, W_DATA, G_DATA)]
    _mixed("eager", *[p[0] for p in e]).backward()
    for (ge, _), got in zip(e, (x, w, b)):
        assert_close(got.grad, to_numpy(ge.grad))


@pytest.mark.parametrize("mode", COMPILED)
def test_autograd_grad_through_mixed_graph(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    b, tb = pair(G_DATA)
    gx, gb = ng.autograd.grad(_mixed(mode, x, w, b), [x, b])
    tgx, tgb = torch.autograd.grad(_mixed("torch", tx, tw, tb), [tx, tb])
    assert_close(gx, tgx)
    assert_close(gb, tgb)
    assert x.grad is None and w.grad is None


@pytest.mark.parametrize("mode", COMPILED)
def test_compiled_input_that_is_a_non_leaf(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA, requires_grad=False)
    h = x.exp()
    y = ELEMENTWISE[mode](h, w)
    th = tx.exp()
    ty = _elementwise(th, tw)
    y.backward(ng.tensor(G_DATA))
    ty.backward(torch.tensor(G_DATA))
    assert_close(y, ty.detach())
    assert_close(x.grad, tx.grad)
    assert w.grad is None


# ----------------------------------------------------------------------------- nesting
def _inner(x):
    return x.sin() * 2.0


INNER = {m: ng.jit(_inner, backend=(None if m == "cpu" else m)) for m in COMPILED}


def _make_outer(mode):
    inner = INNER[mode]

    def outer(x, w):
        return (inner(x) * w).sum() + inner(x * w).mean()

    return outer


OUTER = {m: ng.jit(_make_outer(m), backend=(None if m == "cpu" else m)) for m in COMPILED}


@pytest.mark.parametrize("mode", COMPILED)
def test_nested_jit_is_inlined(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    traces_before = INNER[mode].stats.traces
    out = OUTER[mode](x, w)
    assert INNER[mode].stats.traces == traces_before  # inlined, not compiled separately
    tout = (_inner(tx) * tw).sum() + _inner(tx * tw).mean()
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)
    listing = str(OUTER[mode].trace(x, w))
    assert listing.count("sin ") == 2  # both inner calls in the one outer graph
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    assert out.grad_fn.next_functions  # edges straight to the leaves, no inner node
    # the inner function still works on its own afterwards
    y = INNER[mode](x)
    assert_close(y, _inner(tx).detach())


# ----------------------------------------------------------------------------- grad mode
@pytest.mark.parametrize("mode", COMPILED)
def test_compiled_forward_under_no_grad(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    with ng.no_grad():
        y = ELEMENTWISE[mode](x, w)
        a, s = TWO_OUTPUTS[mode](x, w)
    for t in (y, a, s):
        assert t.requires_grad is False and t.grad_fn is None
    assert_close(y, _elementwise(tx, tw).detach())
    assert_close(a, _two_outputs(tx, tw)[0].detach())
    # grad mode is back on: the next call is differentiable again
    y2 = ELEMENTWISE[mode](x, w)
    assert y2.requires_grad and y2.grad_fn.name() == "CompiledFunctionBackward"


@pytest.mark.parametrize("mode", COMPILED)
def test_compiled_forward_with_no_input_requiring_grad(mode):
    x, tx = pair(X_DATA, requires_grad=False)
    w, tw = pair(W_DATA, requires_grad=False)
    y = ELEMENTWISE[mode](x, w)
    assert y.requires_grad is False and y.grad_fn is None
    assert_close(y, _elementwise(tx, tw))


@pytest.mark.parametrize("mode", COMPILED)
def test_partial_requires_grad(mode):
    x, tx = pair(X_DATA, requires_grad=False)
    w, tw = pair(W_DATA)
    a, s = TWO_OUTPUTS[mode](x, w)
    ta, ts = _two_outputs(tx, tw)
    (a.sum() + s).backward()
    (ta.sum() + ts).backward()
    assert x.grad is None
    assert_close(w.grad, tw.grad)


def _no_grad_inside(x):
    with ng.no_grad():
        c = x * 10.0
    return (x * c).sum()


def _no_grad_inside_torch(x):
    with torch.no_grad():
        c = x * 10.0
    return (x * c).sum()


NO_GRAD_INSIDE = jits(_no_grad_inside)


@pytest.mark.parametrize("mode", COMPILED)
def test_no_grad_region_inside_fn(mode):
    x, tx = pair(X_DATA)
    out = NO_GRAD_INSIDE[mode](x)
    out.backward()
    _no_grad_inside_torch(tx).backward()
    assert_close(x.grad, tx.grad)


def _detach_inside(x):
    return (x * x.detach().exp()).sum()


DETACH_INSIDE = jits(_detach_inside)


@pytest.mark.parametrize("mode", COMPILED)
def test_detach_inside_fn(mode):
    x, tx = pair(X_DATA)
    DETACH_INSIDE[mode](x).backward()
    _detach_inside(tx).backward()
    assert_close(x.grad, tx.grad)


# ----------------------------------------------------------------------------- in-place on inputs
def _inplace_once(x, w):
    x.mul_(2.0)
    return x * w


def _inplace_twice(x, w):
    x.add_(1.0)
    x.mul_(2.0)
    return x * w


INPLACE_ONCE = jits(_inplace_once)
INPLACE_TWICE = jits(_inplace_twice)


@pytest.mark.parametrize("mode", COMPILED)
@pytest.mark.parametrize("w_grad", [False, True])
def test_inplace_on_input_writes_back(mode, w_grad):
    x, tx = pair(X_DATA, requires_grad=False)
    w, tw = pair(W_DATA, requires_grad=w_grad)
    v0 = x._version
    y = INPLACE_ONCE[mode](x, w)
    ty = _inplace_once(tx, tw)
    assert_close(x, tx)                    # the caller's tensor was modified
    assert x._version == v0 + 1 == tx._version
    assert_close(y, ty.detach())
    assert y.requires_grad is w_grad


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_on_input_then_backward(mode):
    x, tx = pair(X_DATA, requires_grad=False)
    w, tw = pair(W_DATA)
    y = INPLACE_ONCE[mode](x, w)
    ty = _inplace_once(tx, tw)
    y.backward(ng.tensor(G_DATA))
    ty.backward(torch.tensor(G_DATA))
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_twice_bumps_version_twice(mode):
    x, tx = pair(X_DATA, requires_grad=False)
    w, tw = pair(W_DATA)
    y = INPLACE_TWICE[mode](x, w)
    ty = _inplace_twice(tx, tw)
    e, _ = pair(X_DATA, requires_grad=False)
    _inplace_twice(e, w)
    assert_close(x, tx)
    assert_close(y, ty.detach())
    assert e._version == tx._version == 2
    assert x._version == tx._version


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_writeback_is_seen_by_aliases(mode):
    x, tx = pair(X_DATA, requires_grad=False)
    w, _ = pair(W_DATA)
    alias = x.detach()
    view = x[0]
    INPLACE_ONCE[mode](x, w)
    np.testing.assert_allclose(to_numpy(alias), X_DATA * 2)
    np.testing.assert_allclose(to_numpy(view), X_DATA[0] * 2)
    assert alias._version == x._version == 1


def _inplace_nonleaf(h):
    h.mul_(3.0)
    return (h * h).sum()


INPLACE_NONLEAF = jits(_inplace_nonleaf)


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_on_non_leaf_input_gradient(mode):
    x, tx = pair(X_DATA)
    h = x * 1.0
    th = tx * 1.0
    out = INPLACE_NONLEAF[mode](h)
    tout = _inplace_nonleaf(th)
    assert_close(h, th.detach())
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_on_non_leaf_input_rewrites_its_history(mode):
    x, tx = pair(X_DATA)
    h = x * 1.0
    th = tx * 1.0
    INPLACE_NONLEAF[mode](h)
    _inplace_nonleaf(th)
    h.sum().backward()  # the caller's h is now 3 * x, as in eager mode
    th.sum().backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_on_leaf_requiring_grad_raises_like_eager(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    with pytest.raises(RuntimeError) as want:
        _inplace_once(tx, tw)
    with pytest.raises(RuntimeError) as eager:
        _inplace_once(ng.tensor(X_DATA, requires_grad=True), w)
    with pytest.raises(RuntimeError) as got:
        INPLACE_ONCE[mode](x, w)
    assert str(got.value) == str(eager.value)
    assert "leaf Variable that requires grad" in str(want.value)
    assert "leaf Variable that requires grad" in str(got.value)
    np.testing.assert_array_equal(to_numpy(x), X_DATA)
    assert x._version == 0 and x.grad is None


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_on_input_after_call_is_detected(mode):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    y = ELEMENTWISE[mode](x, w)
    with ng.no_grad():
        w.mul_(2.0)
    ty = _elementwise(tx, tw)
    with torch.no_grad():
        tw.mul_(2.0)
    with pytest.raises(RuntimeError, match=re.escape(
            "modified by an inplace operation")):
        y.sum().backward()
    with pytest.raises(RuntimeError, match=re.escape("modified by an inplace operation")):
        ty.sum().backward()

"""When ``ng.jit`` traces again, when it reuses a plan, and nested inputs/outputs (pytrees).

A plan is keyed by the call's signature: tree structure, shapes, dtypes, requires_grad
flags, grad mode and the values of non-tensor arguments. ``stats.traces`` counts new
plans, ``stats.cache_hits`` counts reuses.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import W_DATA, X_DATA, assert_close, pair  # noqa: E402


def _f(x, w):
    return (x.sigmoid() * w - x).sum()


def _scaled(x, k, how="sum"):
    y = x * k
    return y.sum() if how == "sum" else y.mean()


def fresh(fn=_f, backend="numpy"):
    return ng.jit(fn, backend=backend)


def counts(cf):
    return cf.stats.traces, cf.stats.cache_hits


# ----------------------------------------------------------------------------- same signature
@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_same_signature_reuses_the_plan(backend):
    cf = fresh(backend=backend)
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    out = cf(x, w)
    assert counts(cf) == (1, 0)
    assert cf.stats.compiles == 1
    if backend == "cpu":
        assert cf.stats.kernels >= 1
    for i in range(3):
        x2, _ = pair(X_DATA * (i + 2))  # other values, same signature
        out2 = cf(x2, w)
        assert_close(out2, _f(torch.tensor(X_DATA * (i + 2)), tw).detach())
    assert counts(cf) == (1, 3)
    assert cf.stats.compiles == 1
    out.backward()
    _f(tx, tw).backward()
    assert_close(x.grad, tx.grad)


def test_keyword_and_positional_calls():
    cf = fresh()
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    a = cf(x, w=w)
    b = cf(x, w=w)
    assert counts(cf) == (1, 1)
    assert_close(a, _f(tx, tw).detach())
    assert_close(b, a)


# ----------------------------------------------------------------------------- retraces
@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_shape_change_retraces(backend):
    cf = fresh(backend=backend)
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA)
    cf(x, w)
    big = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    xb, txb = pair(big)
    out = cf(xb, w[:1])  # (4, 3) and (1, 3): broadcasting, another signature
    assert counts(cf) == (2, 0)
    tout = _f(txb, torch.tensor(W_DATA[:1]))
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    assert_close(xb.grad, txb.grad)
    cf(x, w)  # back to the first signature: its plan is still there
    assert counts(cf) == (2, 1)


def test_dtype_change_retraces():
    cf = fresh()
    x32, _ = pair(X_DATA)
    w32, _ = pair(W_DATA)
    assert cf(x32, w32).dtype == ng.float32
    x64, tx64 = pair(X_DATA.astype(np.float64))
    w64, tw64 = pair(W_DATA.astype(np.float64))
    out = cf(x64, w64)
    assert counts(cf) == (2, 0)
    tout = _f(tx64, tw64)
    assert_close(out, tout.detach())  # dtype float64 included
    out.backward()
    tout.backward()
    assert_close(x64.grad, tx64.grad)
    assert_close(w64.grad, tw64.grad)


def test_mixed_dtype_promotion_matches_torch():
    cf = fresh()
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA.astype(np.float64))
    out = cf(x, w)
    tout = _f(tx, tw)
    # float32 intermediates promoted to float64: float32 rounding, float64 dtype
    assert_close(out, tout.detach(), rtol=1e-6)
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad, rtol=1e-6)
    e, _ = pair(X_DATA)
    ew, _ = pair(W_DATA.astype(np.float64))
    _f(e, ew).backward()
    assert_close(w.grad, ew.grad.detach().numpy())


def test_requires_grad_change_retraces():
    cf = fresh()
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA, requires_grad=False)
    out = cf(x, w)
    assert out.requires_grad
    xn, _ = pair(X_DATA, requires_grad=False)
    out2 = cf(xn, w)
    assert counts(cf) == (2, 0)
    assert out2.requires_grad is False and out2.grad_fn is None
    w2, tw2 = pair(W_DATA)
    out3 = cf(x, w2)
    assert counts(cf) == (3, 0)
    out3.backward()
    _f(tx, tw2).backward()
    assert_close(w2.grad, tw2.grad)
    assert_close(x.grad, tx.grad)
    cf(xn, w)
    assert counts(cf) == (3, 1)


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_grad_mode_change_retraces(backend):
    cf = fresh(backend=backend)
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    cf(x, w)
    with ng.no_grad():
        out = cf(x, w)
    assert counts(cf) == (2, 0)
    assert out.requires_grad is False and out.grad_fn is None
    assert_close(out, _f(tx, tw).detach())
    with ng.no_grad():
        cf(x, w)
    assert counts(cf) == (2, 1)
    out = cf(x, w)
    assert counts(cf) == (2, 2)
    assert out.grad_fn.name() == "CompiledFunctionBackward"


def test_inference_mode_and_set_grad_enabled():
    cf = fresh()
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    with ng.set_grad_enabled(False):
        a = cf(x, w)
    with ng.inference_mode():
        b = cf(x, w)
    for t in (a, b):
        assert t.requires_grad is False
        assert_close(t, _f(tx, tw).detach())


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_constant_argument_change_retraces(backend):
    cf = fresh(_scaled, backend=backend)
    x, tx = pair(X_DATA)
    a = cf(x, 2.0)
    b = cf(x, 3.0)
    assert counts(cf) == (2, 0)
    assert_close(a, _scaled(tx, 2.0).detach())
    assert_close(b, _scaled(tx, 3.0).detach())
    c = cf(x, 2.0)
    assert counts(cf) == (2, 1)
    assert_close(c, a)
    d = cf(x, 2.0, how="mean")
    e = cf(x, 2.0, "mean")  # positional spelling: another tree, another plan
    assert cf.stats.traces >= 3
    assert_close(d, _scaled(tx, 2.0, "mean").detach())
    assert_close(e, d)
    traces = cf.stats.traces
    cf(x, 2.0, how="mean")
    assert cf.stats.traces == traces
    c.backward()
    _scaled(tx, 2.0).backward()
    assert_close(x.grad, tx.grad)


def test_int_and_float_constants_are_distinct():
    cf = fresh(_scaled)
    x, tx = pair(X_DATA)
    a = cf(x, 2)
    b = cf(x, 2.0)
    assert cf.stats.traces == 2
    assert_close(a, _scaled(tx, 2).detach())
    assert_close(b, _scaled(tx, 2.0).detach())


def test_changed_closure_entry_retraces():
    k = [2.0]

    def g(x):
        return x * k[0]

    cf = ng.jit(g, backend="numpy")
    x, tx = pair(X_DATA)
    assert_close(cf(x), tx.detach() * 2.0)
    assert_close(cf(x), tx.detach() * 2.0)
    assert cf.stats.traces == 1
    k[0] = 5.0  # the trace baked 2.0 in: the guard on the entry sees the change
    assert_close(cf(x), tx.detach() * 5.0)
    assert cf.stats.traces == 2


def test_pytree_structure_change_retraces():
    cf = fresh(_pair_sum)
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA)
    a = cf((x, w))
    b = cf([x, w])
    assert counts(cf) == (2, 0)
    assert_close(a, b)


# ----------------------------------------------------------------------------- pytrees
def _pair_sum(p):
    a, b = p
    return (a * b).sum()


def _tree_fn(inp):
    x = inp["x"]
    w, (b,) = inp["params"]
    h = (x * w + b).tanh()
    return {"out": h.sum(), "parts": [h, (h * x, x.exp())]}


def _flat_leaves(tree):
    if isinstance(tree, dict):
        return [leaf for k in tree for leaf in _flat_leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [leaf for c in tree for leaf in _flat_leaves(c)]
    return [tree]


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_pytree_inputs_and_outputs(backend):
    cf = ng.jit(_tree_fn, backend=backend)
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    b, tb = pair(X_DATA[0] * 0.5)
    out = cf({"x": x, "params": [w, (b,)]})
    tout = _tree_fn({"x": tx, "params": [tw, (tb,)]})
    assert isinstance(out, dict) and list(out) == ["out", "parts"]
    assert isinstance(out["parts"], list) and isinstance(out["parts"][1], tuple)
    leaves, tleaves = _flat_leaves(out), _flat_leaves(tout)
    assert len(leaves) == len(tleaves) == 4
    for got, want in zip(leaves, tleaves):
        assert_close(got, want.detach())
        assert got.grad_fn.name() == "CompiledFunctionBackward"
    gs = [np.full(t.shape, 0.5 + i, dtype=np.float32) for i, t in enumerate(tleaves)]
    loss = leaves[0] * 0.0
    tloss = tleaves[0] * 0.0
    for o, to, g in zip(leaves, tleaves, gs):
        loss = loss + (o * ng.tensor(g)).sum()
        tloss = tloss + (to * torch.tensor(g)).sum()
    loss.backward()
    tloss.backward()
    for got, want in ((x, tx), (w, tw), (b, tb)):
        assert_close(got.grad, want.grad)
    cf({"x": x, "params": [w, (b,)]})
    assert cf.stats.traces == 1 and cf.stats.cache_hits == 1


def _seq_out(x, w):
    return [x * w, (x + w, x - w)]


@pytest.mark.parametrize("container", [tuple, list])
def test_sequence_inputs(container):
    cf = ng.jit(_pair_sum, backend="numpy")
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    out = cf(container([x, w]))
    tout = _pair_sum(container([tx, tw]))
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


def test_list_and_tuple_outputs_keep_their_types():
    cf = ng.jit(_seq_out, backend="numpy")
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    out = cf(x, w)
    tout = _seq_out(tx, tw)
    assert type(out) is list and type(out[1]) is tuple
    for got, want in zip(_flat_leaves(out), _flat_leaves(tout)):
        assert_close(got, want.detach())
    (out[0].sum() + out[1][1].sum()).backward()
    (tout[0].sum() + tout[1][1].sum()).backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


def test_output_that_is_an_input():
    def ident_and_square(x):
        return x, x * x

    cf = ng.jit(ident_and_square, backend="numpy")
    x, tx = pair(X_DATA)
    a, b = cf(x)
    assert a is x  # as eager: returning an input returns the same tensor
    (a.sum() + b.sum()).backward()
    ta, tb = ident_and_square(tx)
    (ta.sum() + tb.sum()).backward()
    assert_close(x.grad, tx.grad)


def test_options_without_function_return_a_decorator():
    @ng.jit(parallel=False, backend="numpy")
    def h(x):
        return x * 2

    x, tx = pair(X_DATA)
    out = h(x)
    assert h.stats.traces == 1
    assert_close(out, tx.detach() * 2)
    assert h.__name__ == "h"
    assert ng.jit(h) is h

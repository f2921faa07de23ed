"""Indexing with integer tensors that are values of the jitted function.

``x[rows]``, ``x[rows][:, cols]``, ``x[rows, 0]`` and ``x[rows] = v`` have static shapes
(those of the index tensors), so @ng.jit compiles them: a gather whose backward is a
scatter-add (repeated indices add up) and the other way round. Out-of-range indices raise
eager mode's (and PyTorch's) IndexError when the compiled code runs; a boolean mask, whose
result has a data-dependent shape, is a graph break (the call runs eagerly).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng

X = np.arange(12.0).reshape(3, 4) / 7
ROWS = np.array([2, 0, 2, -1])
COLS = np.array([1, 3, 3])


def _rows(x, r, c):
    return x[r]


def _rows_cols(x, r, c):
    return x[r][:, c].exp()


def _rows_int(x, r, c):
    return x[r, 0] * x[r, -1]


def _broadcast_pair(x, r, c):
    return x[r[:3, None], c] * 2


def _computed_index(x, r, c):
    return x[r, x.argmax(1)[r]]          # an index computed inside the function


def _setitem_scalar(x, r, c):
    y = x * 1.0
    y[r] = 7.0
    return y


def _setitem_tensor(x, r, c):
    y = x * 1.0
    y[r[:2], c[:2]] = x[0, :2] * 3
    return y.sin()


PROGRAMS = [_rows, _rows_cols, _rows_int, _broadcast_pair, _computed_index, _setitem_scalar,
            _setitem_tensor]
JITTED = {f.__name__: ng.jit(f) for f in PROGRAMS}


def _run(lib, fn, rows=ROWS):
    x = lib.tensor(X.copy(), requires_grad=True)
    out = fn(x, lib.tensor(rows), lib.tensor(COLS))
    w = lib.tensor(np.linspace(-1, 2, out.numel()).reshape(out.shape))
    (out * w).sum().backward()
    return out.detach().numpy().copy(), x.grad.numpy().copy()


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_tensor_index_compiles_and_matches_eager_and_torch(fn):
    want = _run(torch, fn)
    eager = _run(ng, fn)
    for rows in (ROWS, ROWS[::-1].copy()):  # new index values, same plan
        jit = _run(ng, JITTED[fn.__name__], rows)
        ref = _run(ng, fn, rows)
        for a, b in zip(jit, ref):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(eager, want):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    assert JITTED[fn.__name__].stats.traces == 1


def test_gather_second_order_and_value_and_grad():
    def f(x, r):
        return (x[r] ** 3).sum()
    r = ng.tensor(ROWS)
    vg = ng.jit(ng.value_and_grad(f))
    value, g = vg(ng.tensor(X), r)
    xt = torch.tensor(X, requires_grad=True)
    yt = (xt[torch.tensor(ROWS)] ** 3).sum()
    (gt,) = torch.autograd.grad(yt, xt, create_graph=True)
    np.testing.assert_allclose(value.numpy(), yt.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(g.numpy(), gt.detach().numpy(), rtol=1e-14)
    # double backward through the compiled gather / scatter-add
    x = ng.tensor(X, requires_grad=True)
    (g1,) = ng.autograd.grad(ng.jit(f)(x, r), x, create_graph=True)
    (g2,) = ng.autograd.grad((g1 * g1).sum(), x)
    (g2t,) = torch.autograd.grad((gt * gt).sum(), xt)
    np.testing.assert_allclose(g2.numpy(), g2t.numpy(), rtol=1e-13)


@pytest.mark.parametrize("bad", [[0, 3], [-4], [5, 1]])
def test_out_of_range_index_raises_like_eager(bad):
    with pytest.raises(IndexError) as want:
        torch.tensor(X)[torch.tensor(bad)]
    for fn in (_rows, JITTED["_rows"]):
        with pytest.raises(IndexError) as got:
            fn(ng.tensor(X), ng.tensor(bad), None)
        assert str(got.value) == str(want.value)
    with pytest.raises(IndexError, match="out of bounds"):
        JITTED["_setitem_scalar"](ng.tensor(X), ng.tensor(bad), None)


def test_boolean_mask_is_a_graph_break():
    # The call runs eagerly (compiler.graph_break); only the graph's inspection refuses.
    f = ng.jit(lambda x, m: x[m])
    np.testing.assert_array_equal(f(ng.tensor(X), ng.tensor(X > 0.5)).numpy(), X[X > 0.5])
    with pytest.raises(ng.TracingError, match="boolean mask"):
        f.trace(ng.tensor(X), ng.tensor(X > 0.5))


PICK = ng.tensor([0, 2])


def _pick_rows(x):
    return x[PICK] * 2


def test_captured_index_tensor_is_read_at_every_call():
    f = ng.jit(_pick_rows)
    x = ng.tensor(X)
    np.testing.assert_array_equal(f(x).numpy(), _pick_rows(x).numpy())
    PICK[0] = 1                      # changed in place between calls
    try:
        np.testing.assert_array_equal(f(x).numpy(), _pick_rows(x).numpy())
        np.testing.assert_array_equal(f(x).numpy(), X[[1, 2]] * 2)
    finally:
        PICK[0] = 0

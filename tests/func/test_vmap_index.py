"""vmap over indexing by a tensor whose values differ per example (x[idx], index_select,
gather, scatter_add, x[idx] = v, and their gradients): one batched gather/scatter, never
the per-example loop, with torch.func.vmap's values, eagerly and under @ng.jit."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from numgrad.func import batching  # noqa: E402
from helpers import assert_same_tree  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
X4 = RNG.standard_normal((3, 4, 5, 2))
I_ROWS = RNG.integers(0, 4, (3, 2))          # per example: 2 rows of 4
I_COLS = RNG.integers(0, 5, (3, 2))          # per example: 2 columns of 5
I_GATHER = RNG.integers(0, 4, (3, 2, 5))     # gather/scatter along dim 0 of (4, 5)
I_LAST = RNG.integers(0, 2, (3, 2))


def setitem_rows(x, i, v):
    y = x.clone()
    y[i] = v
    return y


def setitem_cols(x, i, v):
    y = x.clone()
    y[:, i] = v
    return y


# name: (function of (module, *args), args, in_dims)
CASES = {
    "rows": (lambda m, x, i: x[i], (X, I_ROWS), (0, 0)),
    "cols after a slice": (lambda m, x, i: x[:, i], (X, I_COLS), (0, 0)),
    "ellipsis": (lambda m, x, i: x[..., i[:, None]], (X, I_COLS), (0, 0)),
    "new axis and slice first": (lambda m, x, i: x[None, 1:, i], (X, I_COLS), (0, 0)),
    "int then index": (lambda m, x, i: x[1, i], (X, I_COLS), (0, 0)),
    "split runs": (lambda m, x, i, j: x[i, :, j], (X4, I_ROWS, I_LAST), (0, 0, 0)),
    "shared operand": (lambda m, x, i, j: x[i, j], (X[0], I_ROWS, I_COLS), (None, 0, 0)),
    "index_select": (lambda m, x, i: m.index_select(x, 1, i), (X, I_COLS), (0, 0)),
    "gather": (lambda m, x, i: m.gather(x, 0, i), (X, I_GATHER), (0, 0)),
    "scatter_add": (lambda m, x, i, s: m.scatter_add(x, 0, i, s), (X, I_GATHER, X[:, :2]),
                    (0, 0, 0)),
    "scatter_add shared src": (lambda m, x, i, s: m.scatter_add(x, 0, i, s),
                               (X, I_GATHER, X[0, :2]), (0, 0, None)),
    "setitem": (lambda m, x, i, v: setitem_rows(x, i, v), (X, I_ROWS, X[:, :2]), (0, 0, 0)),
    "setitem shared value": (lambda m, x, i, v: setitem_rows(x, i, v), (X, I_ROWS, X[0, 0]),
                             (0, 0, None)),
    "setitem after a slice": (lambda m, x, i, v: setitem_cols(x, i, v), (X, I_COLS, X[:, :, :2]),
                              (0, 0, 0)),
    "grad through a gather": (lambda m, x, i: m.func.grad(lambda a: (a[:, i] ** 2).sum())(x),
                              (X, I_COLS), (0, 0)),
}


# torch.func.vmap itself refuses this one (its batched index_put lays the values out with the
# advanced dims first): the oracle is torch run on each example, stacked.
PER_EXAMPLE_ORACLE = {"setitem after a slice"}


def torch_per_example(name):
    f, args, dims = CASES[name]
    outs = [f(torch, *[torch.tensor(a if d is None else a[b]) for a, d in zip(args, dims)])
            for b in range(len(args[0]))]
    return torch.stack(outs)


def batched(m, name):
    f, args, dims = CASES[name]
    tensors = [m.tensor(a) for a in args]
    return m.func.vmap(lambda *a: f(m, *a), in_dims=dims), tensors


@pytest.mark.parametrize("name", list(CASES))
def test_batched_index_matches_torch_without_the_loop(name, monkeypatch):
    looped = []
    monkeypatch.setattr(batching, "loop", lambda *a: looped.append(a[1].name))
    fn, args = batched(ng, name)
    got = fn(*args)
    if name in PER_EXAMPLE_ORACLE:
        assert_same_tree(got, torch_per_example(name))
    else:
        tfn, targs = batched(torch, name)
        assert_same_tree(got, tfn(*targs))
    assert looped == []


JITTED = {}


@pytest.mark.parametrize("name", ["rows", "split runs", "scatter_add", "grad through a gather"])
def test_batched_index_under_jit_is_one_plan_that_matches_torch(name, monkeypatch):
    looped = []
    monkeypatch.setattr(batching, "loop", lambda *a: looped.append(a[1].name))
    fn, args = batched(ng, name)
    jitted = ng.jit(fn)
    tfn, targs = batched(torch, name)
    assert_same_tree(jitted(*args), tfn(*targs))
    other = [a * 2 if a.dtype.is_floating_point else a for a in args]
    tother = [a * 2 if a.dtype.is_floating_point else a for a in targs]
    assert_same_tree(jitted(*other), tfn(*tother))  # the plan, run again on new values
    assert looped == []


def test_out_of_range_index_inside_vmap_raises_as_torch():
    x = np.zeros((3, 4))
    i = np.array([[0, 1], [2, 7], [1, 1]])
    msgs = []
    for m in (ng, torch):
        with pytest.raises(IndexError) as info:
            m.func.vmap(lambda a, b: a[b])(m.tensor(x), m.tensor(i))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]

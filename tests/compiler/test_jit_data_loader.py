"""A DataLoader whose last batch is smaller does not make a jitted step compile again.

``DataLoader(drop_last=False)`` over a length its batch size does not divide marks the
batches' dim 0 as varying (``Tensor._ng_dynamic``): the first plan is shape-generic, the
last batch traces and reuses its kernels, and a generic plan whose loops would not
thread at its shapes never compiles a multi-threaded tier. Eager mode is the reference.
"""

from __future__ import annotations

import warnings

import numpy as np

import numgrad as ng
from numgrad.utils.data import DataLoader, TensorDataset

F = ng.nn.functional
N, BATCH = 23, 8          # batches of 8, 8 and 7


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = ng.tensor(rng.standard_normal((N, 5)))
    T = ng.tensor(rng.integers(0, 3, N))
    W = ng.tensor(rng.standard_normal((5, 3)) * 0.5)
    b = ng.zeros(3, dtype=ng.float64)
    return TensorDataset(X, T), W, b


def _loss(W, b, X, T):
    return F.cross_entropy(ng.tanh(X @ W + b), T)


def _close(got, want):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    for g, w in zip(got, want):
        if isinstance(g, (tuple, list)):
            _close(g, w)
        else:
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12,
                                       atol=1e-14)


def test_the_last_batch_reuses_the_first_batchs_kernels():
    ds, W, b = _data()
    step = ng.jit(ng.value_and_grad(_loss, argnums=(0, 1)))
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True)
    sizes = []
    for epoch in range(2):
        for X, T in loader:
            sizes.append(X.shape[0])
            got = step(W, b, X, T)
            if len(sizes) == 1:
                first = (step.stats.traces, step.stats.compiles)
            _close(got, ng.value_and_grad(_loss, argnums=(0, 1))(W, b, X, T))
    assert sizes == [8, 8, 7] * 2
    assert first == (1, 1)
    assert step.stats.compiles == 1           # the batch of 7 traced, compiled nothing
    assert step.stats.traces == 2
    for plan in step._plans.values():
        assert plan.opts.generic
        # No loop threads at these shapes: the serial tier is final (no prange compile).
        assert all(p.tier == "final" for p in plan.programs)


def test_the_habit_path_compiles_only_at_its_first_two_calls():
    ds, W, b = _data(1)
    f = ng.jit(_loss)
    loader = DataLoader(ds, batch_size=BATCH)
    counts = []
    for epoch in range(2):
        for X, T in loader:
            Wg, bg = W.detach().requires_grad_(True), b.detach().requires_grad_(True)
            f(Wg, bg, X, T).backward()
            We, be = W.detach().requires_grad_(True), b.detach().requires_grad_(True)
            _loss(We, be, X, T).backward()
            _close((Wg.grad, bg.grad), (We.grad, be.grad))
            counts.append(f.stats.compiles)
    # The plan, then the one-pass forward and backward at the second call; nothing later.
    assert counts == [1] + [2] * 5


def test_batches_are_marked_only_when_the_last_one_is_smaller():
    ds, _, _ = _data()
    ragged = list(DataLoader(ds, batch_size=BATCH))
    assert all(t._ng_dynamic == (0,) for batch in ragged for t in batch)
    for loader in (DataLoader(ds, batch_size=BATCH, drop_last=True),
                   DataLoader(TensorDataset(ng.ones(24, 2)), batch_size=BATCH)):
        for batch in loader:
            assert all(getattr(t, "_ng_dynamic", None) is None for t in batch)
    # A collated dataset: the tensors inside dicts are marked too.
    items = [{"x": np.full(2, float(i)), "y": i} for i in range(5)]
    batches = list(DataLoader(items, batch_size=2))
    assert [b["x"].shape[0] for b in batches] == [2, 2, 1]
    assert all(b["x"]._ng_dynamic == (0,) and b["y"]._ng_dynamic == (0,) for b in batches)


def test_unmarked_batches_keep_a_static_plan():
    ds, W, b = _data()
    step = ng.jit(ng.value_and_grad(_loss, argnums=(0, 1)))
    for X, T in DataLoader(ds, batch_size=BATCH, drop_last=True):
        step(W, b, X, T)
    (plan,) = step._plans.values()
    assert not plan.opts.generic


def _flat_sq(W, X, Y):
    return ((X @ W - Y).reshape(-1) ** 2).sum()   # the reshape's size is compiled in


def test_a_function_that_is_not_fully_generic_says_so_once():
    rng = np.random.default_rng(2)
    ds = TensorDataset(ng.tensor(rng.standard_normal((N, 4))),
                       ng.tensor(rng.standard_normal((N, 2))))
    W = ng.tensor(rng.standard_normal((4, 2)))
    step = ng.jit(ng.value_and_grad(_flat_sq))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(2):
            for X, Y in DataLoader(ds, batch_size=BATCH):
                _close(step(W, X, Y), ng.value_and_grad(_flat_sq)(W, X, Y))
    notes = [str(w.message) for w in caught if "drop_last=True" in str(w.message)]
    assert len(notes) == 1, notes
    assert "batch of 7 (the first had 8)" in notes[0] and "_flat_sq" in notes[0]
    assert step.stats.compiles == 2

"""saved_tensors_hooks / save_on_cpu around a call of an @ng.jit function: the hooks see the
tensors the plan saves for its backward, packed after every forward and unpacked at every
backward (as torch.compile runs them at its graph's boundaries); contexts opened inside
the function are refused clearly."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402

X = [[0.5, -1.0], [2.0, 0.25]]
W = [[1.0, -0.5], [0.3, 2.0]]


def program(m, x, w):
    return (x @ w).exp().sum()


JIT = ng.jit(lambda x, w: program(ng, x, w))


def logging_hooks(log, scale=1.0):
    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t.clone()  # the hooks keep their own copy

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t * scale
    return pack, unpack


def test_hooks_around_a_call_pack_at_every_forward_and_unpack_at_every_backward():
    tx, tw = (torch.tensor(v, requires_grad=True) for v in (X, W))
    program(torch, tx, tw).backward()
    counts = []
    for _ in range(3):  # tracing, then the cached plan
        log = []
        x, w = (ng.tensor(v, requires_grad=True) for v in (X, W))
        with ng.autograd.graph.saved_tensors_hooks(*logging_hooks(log)):
            y = JIT(x, w)
        packed = len(log)
        assert packed > 0 and all(e[0] == "pack" for e in log)
        y.backward()
        assert [e[0] for e in log[packed:]] == ["unpack"] * packed
        assert sorted(e[1] for e in log[packed:]) == sorted(e[1] for e in log[:packed])
        counts.append(packed)
        assert_close(x.grad, tx.grad)
        assert_close(w.grad, tw.grad)
    assert counts == counts[:1] * 3


def test_what_unpack_returns_is_what_the_backward_reads():
    # Every tensor the plan saves is scaled by 2 on the way back; d/dx of exp(x @ w).sum()
    # reads w and exp(x @ w) (or x @ w, if the plan recomputes exp), and d/dw reads x:
    # each gradient is the eager one with its saved factors doubled, so it changes.
    x, w = (ng.tensor(v, requires_grad=True) for v in (X, W))
    with ng.autograd.graph.saved_tensors_hooks(*logging_hooks([], scale=2.0)):
        y = JIT(x, w)
    y.backward()
    ex, ew = (ng.tensor(v, requires_grad=True) for v in (X, W))
    program(ng, ex, ew).backward()
    assert not np.allclose(x.grad.numpy(), ex.grad.numpy())
    assert not np.allclose(w.grad.numpy(), ew.grad.numpy())


def test_hooks_own_what_they_saved_and_save_on_cpu():
    # As eagerly: with the hooks holding copies, an in-place change after the forward is no
    # error and the backward uses the values saved (torch does the same, eagerly).
    grads = {}
    for m, f in ((torch, lambda x, w: program(torch, x, w)), (ng, JIT)):
        x, w = (m.tensor(v, requires_grad=True) for v in (X, W))
        a, b = x * 1, w * 1
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = f(a, b)
        with m.no_grad():
            a.add_(1.0)
            b.mul_(3.0)
        y.backward()
        with m.autograd.graph.save_on_cpu():
            z = f(x, w)
        z.backward()
        grads[m] = (x.grad, w.grad)
    assert_close(grads[ng][0], grads[torch][0])
    assert_close(grads[ng][1], grads[torch][1])
    x, w = (ng.tensor(v, requires_grad=True) for v in (X, W))
    a = x * 1
    y = JIT(a, w)
    with ng.no_grad():
        a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()  # without hooks the plan's own check still holds


def test_bad_unpack_results_and_contexts_inside_the_function_are_refused():
    x, w = (ng.tensor(v, requires_grad=True) for v in (X, W))
    with ng.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 0):
        y = JIT(x, w)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result "
                                        "of type int"):
        y.backward()
    with ng.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t[:1]):
        y = JIT(x, w)
    with pytest.raises(RuntimeError, match="unpack_hook returned a tensor of shape"):
        y.backward()

    @ng.jit
    def inside(x):
        with ng.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return (x * x).sum()
    with pytest.raises(ng.errors.TracingError, match="opened inside an @ng.jit function.*"
                                                     "Open the context around the call"):
        inside(x)

"""ng.utils.checkpoint: same values and gradients as without it (and as torch), random
draws replayed, PyTorch's warnings and errors; under @ng.jit the region is recomputed in
the backward instead of saved by the forward."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402
from numgrad.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402

XS = np.array([[0.5, -1.0, 0.25, 2.0], [1.0, 0.0, -0.5, 0.75]], np.float32)
WS = (np.arange(16, dtype=np.float32).reshape(4, 4) - 7) / 10


def region(m, x, w):
    return (x @ w).tanh().exp() * x


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_gradients_match_torch_and_no_checkpoint(use_reentrant):
    res = []
    for m, ck in ((ng, checkpoint), (torch, torch.utils.checkpoint.checkpoint)):
        x, w = m.tensor(XS, requires_grad=True), m.tensor(WS, requires_grad=True)
        y = ck(lambda a: region(m, a, w), x, use_reentrant=use_reentrant)
        (y * y).sum().backward()
        res.append((y, x.grad, w.grad))
    for a, b in zip(*res):
        assert_close(a, b)


def test_random_draws_are_replayed_in_the_recomputation():
    def f(t):
        return ng.nn.functional.dropout(t.sin(), 0.5) * t

    x = ng.tensor(XS, requires_grad=True)
    ng.manual_seed(3)
    y = checkpoint(f, x, use_reentrant=False)
    y.sum().backward()
    got = x.grad.clone()
    x.grad = None
    ng.manual_seed(3)
    f(x).sum().backward()
    assert_close(got, x.grad)


def test_autograd_grad_works_without_reentrancy_and_errors_with_it():
    for m, ck in ((ng, checkpoint), (torch, torch.utils.checkpoint.checkpoint)):
        x = m.tensor(XS, requires_grad=True)
        y = ck(m.sin, x, use_reentrant=False)
        g, = m.autograd.grad(y.sum(), x)
        assert_close(g, np.cos(XS))
        y = ck(m.sin, x, use_reentrant=True)
        with pytest.raises(RuntimeError) as e:
            m.autograd.grad(y.sum(), x)
        if m is ng:
            msg = str(e.value)
        else:
            assert msg == str(e.value)


def test_warnings_and_errors_match_torch():
    for m, ck, seq in ((ng, checkpoint, checkpoint_sequential),
                       (torch, torch.utils.checkpoint.checkpoint,
                        torch.utils.checkpoint.checkpoint_sequential)):
        x = m.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ck(m.sin, x)
            ck(m.sin, m.ones(2), use_reentrant=True)
            seq([m.nn.Identity()], 1, x)
        texts = [str(i.message) for i in w]
        with pytest.raises(ValueError) as e:
            ck(m.sin, x, use_reentrant=True, foo=1)
        if m is ng:
            got = (texts, str(e.value))
        else:
            assert got == (texts, str(e.value))


def test_checkpoint_sequential_matches_torch():
    res = []
    for m, seq in ((ng, checkpoint_sequential), (torch, torch.utils.checkpoint.
                                                   checkpoint_sequential)):
        layers = [m.nn.Linear(4, 4), m.nn.Tanh(), m.nn.Linear(4, 4), m.nn.Tanh()]
        with (ng.no_grad() if m is ng else torch.no_grad()):
            for k, layer in enumerate(layers[::2]):
                layer.weight.copy_(m.tensor(WS + k))
                layer.bias.zero_()
        x = m.tensor(XS, requires_grad=True)
        y = seq(m.nn.Sequential(*layers), 2, x, use_reentrant=False)
        y.sum().backward()
        res.append((y, x.grad, layers[0].weight.grad))
    for a, b in zip(*res):
        assert_close(a, b)


# ------------------------------------------------------------------ under @ng.jit
W_JIT = ng.tensor(WS, requires_grad=True)


def deep(t):
    for _ in range(3):
        t = (t @ W_JIT).tanh()
    return t


@ng.jit
def plain(x):
    return deep(x).sum()


@ng.jit
def checkpointed(x):
    return checkpoint(deep, x, use_reentrant=False).sum()


def test_jit_recomputes_the_region_in_the_backward_instead_of_saving_it():
    x = ng.tensor(XS, requires_grad=True)
    checkpointed(x).backward()
    got = (x.grad.clone(), W_JIT.grad.clone())
    x.grad = W_JIT.grad = None
    deep(x).sum().backward()
    assert_close(got[0], x.grad)
    assert_close(got[1], W_JIT.grad)
    n_plain = plain._plan((x,), {})[0].n_saved
    n_ckpt = checkpointed._plan((x,), {})[0].n_saved
    assert n_plain >= 3 and n_ckpt < n_plain  # the tanh outputs are no longer saved

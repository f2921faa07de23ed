"""Constants computed from shapes in shape-generic CPU plans: a mean's 1/N, var's N - 1.

The backward of ``mean`` divides by the element count, and ``var`` divides its sum by
``N - correction``. A static plan spells such a constant as a literal; a shape-generic
one takes it as a kernel input, bound once per plan (``schedule.build``'s
``shape_inputs``, ``Var.from_shape``), so every shape of the same ranks renders the same
source and reuses the compiled kernels: a DataLoader's smaller last batch compiles
nothing, and a mean loss at four sizes compiles twice (static, then generic). Eager
mode is the reference: gradients bit for bit, losses too where no sum is reordered.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import numgrad as ng
from numgrad.utils.data import DataLoader, TensorDataset

F = ng.nn.functional


def _same(got, want):
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def _mse(W, x, y):
    return ((x @ W - y) ** 2).mean()


def test_a_data_loaders_last_batch_compiles_nothing_for_a_mean_loss():
    rng = np.random.default_rng(0)
    X = ng.tensor(rng.standard_normal((22, 3)))
    Y = ng.tensor(rng.standard_normal((22, 1)))
    W = ng.tensor(rng.standard_normal((3, 1)), requires_grad=True)
    loss = ng.jit(_mse)
    sizes, counts = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(2):
            for x, y in DataLoader(TensorDataset(X, Y), batch_size=8):   # 8, 8, 6
                W.grad = None
                got = loss(W, x, y)
                got.backward()
                We = W.detach().requires_grad_(True)
                want = _mse(We, x, y)
                want.backward()
                # (The sum may add in another order than NumPy's: to rounding.)
                np.testing.assert_allclose(got.item(), want.item(), rtol=1e-14)
                _same(W.grad, We.grad)
                sizes.append(x.shape[0])
                counts.append(loss.stats.compiles)
    assert not [w for w in caught if "needed kernels of its own" in str(w.message)]
    assert sizes == [8, 8, 6] * 2
    # The plan, then the one-pass program at its second call; the batch of 6 traces
    # and reuses the generic kernels.
    assert counts == [1] + [2] * 5
    assert loss.stats.traces == 2


def _mean_sq(x):
    return (x * x).mean()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_mean_at_four_sizes_compiles_twice_with_eagers_bits(dtype):
    f = ng.jit(_mean_sq)
    rng = np.random.default_rng(1)
    sources = []
    for n in (3, 5, 6, 7):
        xs = rng.standard_normal(n).astype(dtype)
        x, xe = ng.tensor(xs, requires_grad=True), ng.tensor(xs, requires_grad=True)
        f(x).backward()
        _mean_sq(xe).backward()
        _same(x.grad, xe.grad)
        sources.append(f.source(x))
    assert f.stats.compiles == 2 and f.stats.traces == 4
    lit = f"np.{dtype}(3.0)"
    backward = sources[0].split("backward program")[1]
    assert f"/ {lit})" in backward           # the static plan keeps the literal 1/N
    generic = sources[1].split("backward program")[1]
    assert re.search(r"/ s_\w+\)", generic) and f"np.{dtype}(5.0)" not in generic
    assert sources[2] == sources[1] == sources[3]


def _losses(W, x, t, p):
    """The mean losses at once (one plan to compile): cross-entropy over probabilities and
    with label smoothing (over class indices: NLL, whose mean is a sum over a sum), MSE."""
    z = x @ W
    return (F.cross_entropy(z, p) + F.cross_entropy(z, t, label_smoothing=0.1) * 0.5
            + ng.nn.MSELoss()(z, p))


def test_mean_losses_at_three_batch_sizes_compile_twice():
    """Called, then ``.backward()``: the backward's cotangent is an input, so the mean's
    1/N is a constant of the backward graph (under ``jit(value_and_grad)`` the seed is
    known and 1/N is folded into an array of the batch's shape, generic already). The
    generic plan gives a static plan's bits; both may differ from eager's in the last
    place where a softmax's sums add in another order."""
    rng = np.random.default_rng(2)
    Ws = rng.standard_normal((3, 4))
    loss = ng.jit(_losses)
    for n in (8, 5, 6):
        x = ng.tensor(rng.standard_normal((n, 3)))
        t = ng.tensor(rng.integers(0, 4, n))
        p = F.softmax(ng.tensor(rng.standard_normal((n, 4))), 1)
        W, We = ng.tensor(Ws, requires_grad=True), ng.tensor(Ws, requires_grad=True)
        got, want = loss(W, x, t, p), _losses(We, x, t, p)
        got.backward()
        want.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-14)
        np.testing.assert_allclose(W.grad.numpy(), We.grad.numpy(), rtol=1e-13, atol=1e-15)
    assert loss.stats.compiles == 2 and loss.stats.traces == 3
    Wst = ng.tensor(Ws, requires_grad=True)
    static = ng.jit(_losses)(Wst, x, t, p)
    static.backward()
    _same(got, static)
    _same(W.grad, Wst.grad)


def _stats(x):
    return (x.var() + x.std(dim=1, correction=0).sum()
            + (F.layer_norm(x, (5,)) * F.softmax(x, 1)).sum())


def test_var_std_layer_norm_softmax_reuse_the_generic_kernels():
    f = ng.jit(_stats)
    rng = np.random.default_rng(3)
    sources = []
    for n in (4, 6, 9):
        xs = rng.standard_normal((n, 5)).astype(np.float32)
        x, xe = ng.tensor(xs, requires_grad=True), ng.tensor(xs, requires_grad=True)
        out = f(x)
        out.backward()
        want = _stats(xe)
        want.backward()
        np.testing.assert_allclose(out.item(), want.item(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
        sources.append(f.source(x))
    assert f.stats.compiles == 2
    assert sources[1] == sources[2]


def test_a_generic_single_kernel_keeps_the_direct_call():
    """var's N - 1 in the forward: the kernel's one shape constant is bound ahead of the
    call's arrays, so the one-kernel plan still calls its kernel directly."""
    def f(x):
        return x / x.var()
    jf = ng.jit(f)
    rng = np.random.default_rng(4)
    for n in (3, 4, 5):
        x = ng.tensor(rng.standard_normal((1, n)))
        np.testing.assert_allclose(jf(x).numpy(), f(x).numpy(), rtol=1e-14)
        (prog,) = jf._plan((x,), {})[0].programs
        assert prog.kernels == 1 and prog._direct is not None
    assert jf.stats.compiles == 2


def _chain(x):
    y = x
    for _ in range(3):
        y = ng.tanh(ng.sin(y) * 1.5) + ng.exp(-y * y) * 0.5
    return y.mean()


def test_an_llvm_body_reads_the_count_as_an_argument():
    """A long loop's body is LLVM IR built from a spec (backends.cpu.llvm.body): in a
    generic plan the mean's 1/N is one of its scalar arguments, not a constant of it."""
    f = ng.jit(_chain)
    rng = np.random.default_rng(5)
    sources = []
    for n in (300, 500, 700):
        x = ng.tensor(rng.standard_normal(n).astype(np.float32), requires_grad=True)
        f(x).backward()
        xe = x.detach().requires_grad_(True)
        _chain(xe).backward()
        np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-7)
        sources.append(f.source(x))
    assert f.stats.compiles == 2
    assert sources[1] == sources[2]

    def specs(source):
        return "".join(re.findall(r"chunk_kernel\('(.*?)'\)", source))
    assert '["k",' in specs(sources[0]) and float(300).hex() in specs(sources[0])
    assert specs(sources[2]) and float(700).hex() not in specs(sources[2])

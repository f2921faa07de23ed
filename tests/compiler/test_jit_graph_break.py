"""Boolean-mask indexing, masked_select and nonzero under @ng.jit: their extent is a count of
values, so the trace breaks there and the signature runs eagerly (compiler.graph_break).
Values, gradients and errors are PyTorch's; other signatures of the function still compile;
trace() names the line that broke the graph."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

X = np.array([0.5, -1.0, 2.0, -0.25, 1.5])


def read(x):
    y = x.tanh() * 2
    return (y[y > 0] ** 2).sum()  # <break>


def write(x, v):
    x = x * 1
    x[x > 0] = v
    return x.sin()


def select(x):
    return torch_or_ng(x).masked_select(x, x < 1).exp(), torch_or_ng(x).nonzero(x < 1)


def torch_or_ng(x):
    return torch if isinstance(x, torch.Tensor) else ng


JITTED = {f.__name__: ng.jit(f) for f in (read, write, select)}


def test_mask_read_matches_torch_values_and_gradients():
    x, tx = ng.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    for _ in range(2):  # the second call finds the graph-break plan
        x.grad, tx.grad = None, None
        out, want = JITTED["read"](x), read(tx)
        out.backward()
        want.backward()
        np.testing.assert_allclose(out.item(), want.item(), rtol=1e-14)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    assert JITTED["read"].stats.traces == 1


def test_mask_write_matches_torch_values_and_gradients():
    x, tx = ng.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    v, tv = ng.tensor(3.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)
    w = np.linspace(1, 2, X.size)
    out, want = JITTED["write"](x, v), write(tx, tv)
    (out * ng.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(v.grad.item(), tv.grad.item(), rtol=1e-14)


def test_masked_select_and_nonzero_match_torch():
    x, tx = ng.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (s, idx), (ts, tidx) = JITTED["select"](x), select(tx)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    s.sum().backward()
    ts.sum().backward()
    np.testing.assert_allclose(s.detach().numpy(), ts.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)


def test_errors_are_eagers():
    f = ng.jit(lambda x, m: ng.masked_select(x, m > 0))
    with pytest.raises(RuntimeError) as want:
        torch.masked_select(torch.tensor(X), torch.tensor([True, False]))
    with pytest.raises(RuntimeError) as got:
        f(ng.tensor(X), ng.tensor([1.0, -1.0]))
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
def test_cuda_mask_read():
    x = ng.tensor(X[:3]).cuda().requires_grad_()
    out = JITTED["read"](x)
    out.backward()
    tx = torch.tensor(X[:3], requires_grad=True)
    read(tx).backward()
    assert x.grad.device.type == "cuda"
    np.testing.assert_allclose(out.item(), read(tx).item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12)

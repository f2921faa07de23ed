"""compiler.schedule: the fusion plan as data, and one new op added
as a single registry row (hypot), checked against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.compiler import schedule as S
from numgrad.compiler.pipeline import STAGES, Options


def w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()


def mlp(x, w, b):
    return ng.tanh(x @ w + b).sum()


def test_schedule_of_a_fused_loss_is_one_loop_with_its_reduction():
    x, y = ng.randn(64, dtype=ng.float64), ng.randn(64, dtype=ng.float64)
    (fwd,) = ng.jit(w2).schedule(x, y)
    (k,) = fwd.kernels
    (loop,) = k.body
    assert isinstance(loop, S.Loop) and loop.flat and loop.shape == (64,)
    (red,) = loop.full_reductions
    assert red.full and red.additive and red.combine.name == "add"
    ops = [s.op.name for s in loop.body if isinstance(s, S.Stmt)]
    assert ops.count("tanh") == 1 and ops.count("exp") == 1 and ops.count("sin") == 1
    assert not any(s.store for s in loop.body if isinstance(s, S.Stmt))  # nothing leaves
    assert loop.work == 64 * loop.weight and not loop.parallel  # far below min_work
    text = str(fwd)
    assert "kernel 0 (x, y)" in text and "loop 0 over (64,) flat" in text


def test_matmul_is_a_host_step_and_raises_the_parallel_threshold():
    x, w, b = ng.randn(4, 3), ng.randn(3, 5), ng.randn(5)
    (fwd,) = ng.jit(mlp).schedule(x, w, b)
    kinds = [type(s).__name__ for s in fwd.steps]
    assert "HostStep" in kinds and kinds.count("Kernel") >= 1
    assert fwd.blas and fwd.min_work == S.PARALLEL_MIN_WORK_BESIDE_BLAS
    assert "host" in str(fwd) and "matmul" in str(fwd)


def test_large_loop_is_parallel_and_chunked_for_its_sum():
    n = 1 << 16
    x, y = ng.randn(n, dtype=ng.float64), ng.randn(n, dtype=ng.float64)
    (loop,) = ng.jit(w2).schedule(x, y)[0].kernels[0].body
    assert loop.parallel and loop.chunked and loop.chunks * loop.chunk_size >= n
    assert loop.chunks <= S.PARALLEL_CHUNKS


def test_backward_schedule_and_options():
    x = ng.randn(8, dtype=ng.float64, requires_grad=True)
    scheds = ng.jit(lambda x: (x * x).sum()).schedule(x)
    assert [s.role for s in scheds] == ["fwd", "bwd"]
    assert "schedule" in str(scheds)
    assert STAGES.index("schedule") < STAGES.index("render")
    opts = Options(name="f")
    assert opts.but(role="bwd").role == "bwd" and opts.role == "fwd"
    with pytest.raises(AttributeError):  # frozen (dataclasses.FrozenInstanceError)
        opts.role = "bwd"


# ---------------------------------------------------------------- one new op
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hypot_matches_torch_eager_and_jit(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(dtype) * 3
    b = rng.standard_normal(5).astype(dtype)
    a[0, :3] = [np.inf, 0.0, 1e30 if dtype == np.float64 else 1e20]
    b[:3] = [np.nan, 0.5, 1e30 if dtype == np.float64 else 1e20]
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    want = torch.hypot(ta, tb)
    torch.nan_to_num(want, posinf=0.0).sum().backward()

    def f(x, y):
        return ng.hypot(x, y)

    rtol = 1e-6 if dtype == np.float32 else 1e-12
    for fn in (f, ng.jit(f)):
        x = ng.tensor(a, requires_grad=True)
        y = ng.tensor(b, requires_grad=True)
        out = fn(x, y)
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=rtol)
        assert out.dtype == x.dtype
        ng.where(out == float("inf"), 0.0, out).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), ta.grad.numpy(), rtol=rtol, atol=1e-30)
        np.testing.assert_allclose(y.grad.numpy(), tb.grad.numpy(), rtol=rtol, atol=1e-30)

"""int32 is a dtype of its own, as in PyTorch: ng.tensor / as_tensor / from_numpy keep it
(from_numpy shares memory), promotion follows torch's table, and it survives jit, indexing
and save/load."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng

A = np.arange(6, dtype=np.int32).reshape(2, 3)


def _name(d):
    return str(d).split(".")[-1]


@pytest.mark.parametrize("make", ["tensor", "as_tensor", "from_numpy"])
def test_made_from_int32_data_stays_int32(make):
    t = getattr(ng, make)(A)
    assert t.dtype is ng.int32 and _name(t.dtype) == _name(getattr(torch, make)(A).dtype)
    if make != "tensor":  # shares the array's memory, as torch does
        t.add_(1)
        assert A[0, 0] == 1
        A[...] -= 1


PROMOTIONS = {
    "t + 1": lambda t, lib: t + 1,
    "t * 2.5": lambda t, lib: t * 2.5,
    "t + int64": lambda t, lib: t + lib.tensor([1, 2, 3]),
    "t + 0-d int64": lambda t, lib: t + lib.tensor(7),
    "t + float32": lambda t, lib: t + lib.ones(3),
    "t / 2": lambda t, lib: t / 2,
    "sum": lambda t, lib: t.sum(),
    "max": lambda t, lib: t.max(),
    "t > 1": lambda t, lib: t > 1,
    "matmul": lambda t, lib: t @ t.T,
    ".int() of floats": lambda t, lib: lib.ones(2).int(),
    ".long()": lambda t, lib: t.long(),
    "where": lambda t, lib: lib.where(t > 2, t, 0),
}


@pytest.mark.parametrize("case", list(PROMOTIONS))
def test_results_have_torchs_dtype_and_values(case):
    got = PROMOTIONS[case](ng.tensor(A), ng)
    want = PROMOTIONS[case](torch.tensor(A), torch)
    assert _name(got.dtype) == _name(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_int32_indices_gather_and_carry_gradients():
    x = ng.arange(5.0, requires_grad=True)
    idx = ng.tensor(np.array([4, 0, 4], dtype=np.int32))
    (x[idx] * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 0, 0, 0, 4])
    assert ng.int is ng.int32 and int(ng.tensor(np.int32(3))) == 3


def test_int32_under_jit_agrees_with_eager(tmp_path):
    def f(t, x):
        return t * 3 + 1, (x * t).sum()

    t, x = ng.tensor(A), ng.ones(2, 3)
    eager, jitted = f(t, x), ng.jit(f)(t, x)
    assert jitted[0].dtype is ng.int32
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(e.numpy(), j.numpy())
    path = tmp_path / "t.ng"
    ng.save({"t": t}, path)
    back = ng.load(path)["t"]
    assert back.dtype is ng.int32 and np.array_equal(back.numpy(), A)

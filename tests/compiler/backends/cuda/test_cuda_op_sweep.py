"""Every row of the op table (tests/ops/test_op_table.py), first sample, float64, through
``@ng.jit`` on CUDA tensors (Numba's simulator): values and input gradients equal eager
numgrad on the CPU. (test_cuda_ptx.py compiles the matrix's kernels for sm_90, not these,
to keep CI short; all of this directory's kernels, these included, compiled and assembled for
sm_90 without spills under ``NUMGRAD_PTX_ALL=1``: 298 distinct, see the README.)"""
from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import numgrad as ng
from cuda_cases import require_simulator

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                      os.pardir, "ops", "test_op_table.py")
_spec = importlib.util.spec_from_file_location("_numgrad_op_table_for_cuda", _TABLE)
table = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = table
_spec.loader.exec_module(table)

DATA_DEPENDENT = {"getitem_mask_from_cmp"}  # a data-dependent shape: jit refuses it


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def _rows():
    return [pytest.param(op, id=op.name) for op in table.OPS
            if op.name not in DATA_DEPENDENT and "float64" in op.dtypes]


def _host(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("op", _rows())
def test_op_on_cuda_matches_cpu_eager(op):
    sample = op.samples[0]
    arrays = table.make_arrays(op, sample, "float64", "cuda")
    grad = op.differentiable

    def fn(*xs):
        return op.ng_fn(*xs, **sample.kwargs)
    fn.__name__ = "op_" + "".join(c if c.isalnum() else "_" for c in op.name)
    xs = [ng.tensor(a, device="cuda", requires_grad=grad and a.dtype.kind == "f")
          for a in arrays]
    cs = [ng.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    got = ng.jit(fn)(*xs)
    want = fn(*cs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert g.device.type == "cuda"
        np.testing.assert_allclose(_host(g), _host(w), rtol=1e-9, atol=1e-12)
    floats = [(g, w) for g, w in zip(got, want) if g.dtype.is_floating_point
              and g.requires_grad]
    if not floats:
        return
    g, w = floats[0]
    ct = np.random.default_rng(0).standard_normal(w.shape)
    g.backward(ng.tensor(ct, device="cuda"))
    w.backward(ng.tensor(ct))
    for x, c in zip(xs, cs):
        if c.grad is not None:
            assert x.grad is not None and x.grad.device.type == "cuda"
            np.testing.assert_allclose(_host(x.grad), _host(c.grad), rtol=1e-9, atol=1e-12)

"""Every row of the op table (tests/ops/test_op_table.py) through ``ng.jit``.

The sweep runs on the reference backend (``backend="numpy"``: the traced graph and the
derived backward, interpreted, no Numba compile): forward values and input gradients of the
compiled function are compared with eager numgrad and with torch. A handful of fused
elementwise / reduction / matmul / softmax / log_softmax / cross_entropy functions then run
on the Numba backend ("cpu"), including their second derivatives.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import as_tuple, assert_close, rng_for, second_order  # noqa: E402

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "ops",
                      "test_op_table.py")
_spec = importlib.util.spec_from_file_location("_numgrad_op_table_for_jit", _TABLE)
table = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = table  # dataclasses look their module up while it executes
_spec.loader.exec_module(table)

# Rows whose samples have a data-dependent output shape: @ng.jit runs them with a graph
# break (compiled segments around an eager step), so the last backward node is the eager op's.
DATA_DEPENDENT = {"getitem_mask_from_cmp"}

_TH_DTYPE = {torch.float32: ng.float32, torch.float64: ng.float64, torch.int64: ng.int64,
             torch.bool: ng.bool}




def _params():
    out = []
    for op in table.OPS:
        for s in op.samples:
            first = "float32" if "float32" in op.dtypes else op.dtypes[0]  # (bitwise: int64)
            for d in [first] + (["int64"] if op.int_forward and first != "int64" else []):
                out.append(pytest.param(op, s, d, id=f"{op.name}-{s.desc}-{d}"))
    return out


def _compiled(op, sample):
    kwargs = sample.kwargs

    def fn(*xs):
        return op.ng_fn(*xs, **kwargs)

    fn.__name__ = "op_" + "".join(c if c.isalnum() else "_" for c in op.name)
    return ng.jit(fn, backend="numpy")


def _float(outs):
    return [o for o in outs if o.dtype in (ng.float32, ng.float64)]


@pytest.mark.parametrize("op,sample,dtype", _params())
def test_op_through_jit_matches_eager_and_torch(op, sample, dtype):
    arrays = table.make_arrays(op, sample, dtype, "jit")
    grad = op.differentiable and dtype != "int64"
    cf = _compiled(op, sample)
    xs = table.ng_inputs(arrays, grad)
    got = as_tuple(cf(*xs))
    eager_xs = table.ng_inputs(arrays, grad)
    eager = as_tuple(op.ng_fn(*eager_xs, **sample.kwargs))
    ts = table.torch_inputs(arrays, grad)
    want = as_tuple(op.th_fn(*ts, **sample.kwargs))
    assert len(got) == len(eager) == len(want)
    for i, (g, e, w) in enumerate(zip(got, eager, want)):
        assert isinstance(g, ng.Tensor), f"output {i} is {type(g).__name__}"
        assert g.dtype == e.dtype == _TH_DTYPE[w.dtype], f"output {i} dtype"
        assert_close(g, w.detach(), msg=f"output {i} vs torch")
        assert_close(g, e.detach().numpy(), msg=f"output {i} vs eager")
        assert g.requires_grad == e.requires_grad, f"output {i} requires_grad"
    if not grad:
        return
    outs, eouts = _float(got), _float(eager)
    touts = [o for o in want if o.is_floating_point()]
    assert len(outs) == len(touts) == 1
    if op.name not in DATA_DEPENDENT:
        assert outs[0].grad_fn.name() == "CompiledFunctionBackward"
    g = np.asarray(rng_for(op.name, sample.desc, dtype, "jit-g").standard_normal(
        tuple(touts[0].shape)), dtype=dtype)
    outs[0].backward(ng.tensor(g.copy()))
    eouts[0].backward(ng.tensor(g.copy()))
    touts[0].backward(torch.tensor(g.copy()))
    for i, (x, e, t) in enumerate(zip(xs, eager_xs, ts)):
        assert_close(x.grad, t.grad, msg=f"grad of input {i} vs torch")
        if e.grad is not None:
            assert_close(x.grad, e.grad.detach().numpy(), msg=f"grad of input {i} vs eager")
    assert cf.stats.traces == 1


# ----------------------------------------------------------------------------- cpu backend
def _lib(t):
    return torch if isinstance(t, torch.Tensor) else ng


def _fused_elementwise(x, w):
    m = _lib(x)
    return (m.tanh(x * w) * m.exp(-w * w) + m.sigmoid(x).clamp(0.2, 0.8) - x.abs().sqrt()
            + m.maximum(x, w) * m.where(x > 0, x, w * 0.5) + (x - w) ** 2 / (1.0 + w * w))


def _reductions(x, w):
    y = x.sin() * w + x.cos()
    return (y.sum(dim=1) + y.mean(dim=1) * y.amax(dim=1) - y.amin(dim=1) + (x * x).sum()
            + y.max(dim=0)[0].sum())


def _layout(x, w):
    m = _lib(x)
    y = (x * w).reshape(3, 2).T * 2 + x.permute(1, 0).transpose(0, 1).unsqueeze(0).squeeze(0)
    return y[:, 1:2].expand(2, 3) + m.cat([x[:1], w[1:]], dim=0)


def _matmul_chain(x, w):
    m = _lib(x)
    h = (x @ w.T).relu()               # (2, 2)
    return m.nn.functional.linear(h, w.T, w[0] * 0.5).tanh() @ w.T


def _softmax_family(x, w):
    return x.softmax(dim=1) * w + (x * w).log_softmax(dim=-1) + x.softmax(dim=0)


def _cross_entropy(x, w):
    m = _lib(x)
    logits = x @ w.T + x[:, :2]
    ce = m.nn.functional.cross_entropy(logits, m.tensor([1, 0]))
    mse = m.nn.functional.mse_loss(x.sigmoid(), w.tanh())
    nll = m.nn.functional.nll_loss(logits.log_softmax(dim=1), m.tensor([0, 1]), reduction="sum")
    return ce + mse + nll


def _issue11_elementwise(x, w):
    # the later elementwise primitives and composites: all in one fused kernel
    m = _lib(x)
    F = m.nn.functional
    return ((x % 0.7) * w + m.fmod(x, w) + m.erf(x * w) + (w * w).log1p() + m.expm1(x * 0.3)
            + F.gelu(x) + F.silu(w) + F.softplus(x * 2) + F.leaky_relu(x, 0.1) + F.elu(w)
            + F.gelu(w, approximate="tanh"))


def _issue11_numpy_steps(x, w):
    # cumsum/prod run as NumPy steps between kernels; the rest fuses around them
    m = _lib(x)
    F = m.nn.functional
    return (x.cumsum(1) * w + x.prod(1, keepdim=True) + x.std(1, keepdim=True) + x.norm(dim=0)
            + F.binary_cross_entropy_with_logits(x, w.sigmoid(), reduction="none")
            + x.flip(1) * w.roll(1, 0) + x.tril(1))


def _training_ops(x, w):
    # sort/topk (an argsort host step, then gathers), einsum and bmm (matmuls), all/any
    # (fused count reductions) between the kernels
    m = _lib(x)
    v, _ = x.sort(dim=1, descending=True)
    top = m.topk(x * w, 2, dim=1).values
    e = m.einsum("ij,kj->ik", x, w) + m.bmm(x.unsqueeze(0), w.T.unsqueeze(0))[0]
    flags = (x > 0).all(dim=1, keepdim=True).float() + (w > 1).any(dim=1, keepdim=True).float()
    return e * top + (v * w)[:, :2] + flags + m.argsort(x, dim=1)[:, :2].float()


CPU_CASES = {
    "training_ops": _training_ops,
    "issue11_elementwise": _issue11_elementwise,
    "issue11_numpy_steps": _issue11_numpy_steps,
    "elementwise": _fused_elementwise,
    "reductions": _reductions,
    "layout": _layout,
    "matmul": _matmul_chain,
    "softmax": _softmax_family,
    "cross_entropy": _cross_entropy,
}
CPU_JIT = {k: ng.jit(f) for k, f in CPU_CASES.items()}
XS = np.array([[0.5, -1.0, 1.5], [2.0, -0.25, 0.75]])
WS = np.array([[1.0, 0.5, -0.5], [0.25, -1.5, 2.0]])


@pytest.mark.parametrize("case", list(CPU_CASES))
def test_fused_cpu_kernels_match_torch(case):
    fn, cf = CPU_CASES[case], CPU_JIT[case]
    x = ng.tensor(XS.astype(np.float32), requires_grad=True)
    w = ng.tensor(WS.astype(np.float32), requires_grad=True)
    tx = torch.tensor(XS.astype(np.float32), requires_grad=True)
    tw = torch.tensor(WS.astype(np.float32), requires_grad=True)
    out = cf(x, w)
    tout = fn(tx, tw)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    assert_close(out, tout.detach())
    g = np.asarray(rng_for("cpu", case).standard_normal(tuple(tout.shape)), np.float32)
    out.backward(ng.tensor(g))
    tout.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)
    assert cf.stats.kernels >= 1
    src = str(cf.source(x, w))
    assert "@njit" in src
    # No silent NumPy fallback (a reassociable add of a bool count into int64 once failed
    # to type, and the case still passed on the reference backend).
    assert "failed to compile" not in src
    assert cf.stats.traces == 1


def test_fused_cpu_forward_under_no_grad():
    x = ng.tensor(XS.astype(np.float32), requires_grad=True)
    w = ng.tensor(WS.astype(np.float32), requires_grad=True)
    with ng.no_grad():
        out = CPU_JIT["elementwise"](x, w)
    assert out.requires_grad is False and out.grad_fn is None
    assert_close(out, _fused_elementwise(torch.tensor(XS.astype(np.float32)),
                                         torch.tensor(WS.astype(np.float32))))


# second order: every case on the reference backend, one on the Numba backend
SECOND = [pytest.param(c, "numpy", id=f"{c}-numpy") for c in CPU_CASES] + [
    pytest.param("elementwise", "cpu", id="elementwise-cpu")]
NUMPY_JIT = {k: ng.jit(f, backend="numpy") for k, f in CPU_CASES.items()}


@pytest.mark.parametrize("case,backend", SECOND)
def test_second_order_matches_torch(case, backend):
    fn = CPU_CASES[case]
    cf = (CPU_JIT if backend == "cpu" else NUMPY_JIT)[case]
    arrays = [XS.copy(), WS.copy()]
    rng = rng_for("cpu-gg", case)
    tout = fn(torch.tensor(XS), torch.tensor(WS))
    vs = [rng.standard_normal(tuple(tout.shape))]
    ws = [rng.standard_normal(a.shape) for a in arrays]

    def ng_fn(lib, *xs):
        return cf(*xs)

    def th_fn(lib, *xs):
        return fn(*xs)

    got = second_order(ng, ng_fn, arrays, vs, ws)
    want = second_order(torch, th_fn, arrays, vs, ws)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9, err_msg=f"second-order {i}")

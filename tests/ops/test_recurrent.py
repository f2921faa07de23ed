"""ops.recurrent's fused LSTM/GRU primitives against the same arithmetic in PyTorch ops
(float64): values, first-order gradients (the fused NumPy backward kernels) and second-order
ones (the rules' numgrad-op form under create_graph); the whole-layer primitive in both time
directions; ``@ng.jit`` against eager, and the CUDA simulator against the CPU.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.devices import cuda_is_available
from numgrad.ops import recurrent as R

T, B, H = 3, 2, 4


def _torch_lstm_cell(gates, c):
    i, f, g, o = gates.chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def _torch_gru_cell(gi, gh, h):
    ir, iz, i_n = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
    n = torch.tanh(i_n + r * hn)
    return (1 - z) * n + z * h


def _torch_lstm_sequence(gi, h, c, w_hh, reverse):
    outs = [None] * gi.shape[0]
    for t in (range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])):
        h, c = _torch_lstm_cell(gi[t] + h @ w_hh.T, c)
        outs[t] = h
    return torch.stack(outs), h, c


def _ng_lstm_cell(gates, c):
    return R.lstm_cell(gates, c)


def _ng_lstm_sequence(gi, h, c, w_hh, reverse):
    return R.lstm_sequence(gi, h, c, w_hh, reverse=reverse)


def _inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * 0.8 for s in shapes]


CASES = {
    "lstm_cell": (_ng_lstm_cell, _torch_lstm_cell, [(B, 4 * H), (B, H)]),
    "gru_cell": (lambda *a: (R.gru_cell(*a),), lambda *a: (_torch_gru_cell(*a),),
                 [(B, 3 * H), (B, 3 * H), (B, H)]),
    "lstm_sequence": (lambda *a: _ng_lstm_sequence(*a, False),
                      lambda *a: _torch_lstm_sequence(*a, False),
                      [(T, B, 4 * H), (B, H), (B, H), (4 * H, H)]),
    "lstm_sequence_reverse": (lambda *a: _ng_lstm_sequence(*a, True),
                              lambda *a: _torch_lstm_sequence(*a, True),
                              [(T, B, 4 * H), (B, H), (B, H), (4 * H, H)]),
}


def _run(lib, fn, arrays, cot, order):
    """Outputs, gradients of ``sum(out * cot)`` and, for ``order`` 2, the gradients of the
    squared norm of those gradients."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    outs = fn(*xs)
    loss = sum((o * lib.tensor(c)).sum() for o, c in zip(outs, cot))
    grad = torch.autograd.grad if lib is torch else ng.autograd.grad
    gs = grad(loss, xs, create_graph=order == 2)
    result = [o.detach().numpy() for o in outs] + [g.detach().numpy() for g in gs]
    if order == 2:
        gg = grad(sum((g * g).sum() for g in gs), xs)
        result += [g.numpy() for g in gg]
    return result


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_torch(case, order):
    ng_fn, torch_fn, shapes = CASES[case]
    arrays = _inputs(shapes, 1)
    probe = torch_fn(*[torch.tensor(a) for a in arrays])
    cot = _inputs([tuple(o.shape) for o in probe], 2)
    want = _run(torch, torch_fn, arrays, cot, order)
    got = _run(ng, ng_fn, arrays, cot, order)
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"result {k}")


def test_first_order_backward_is_fused():
    # Without create_graph the backward of a whole layer is one BPTT kernel, no per-step ops.
    gi, h, c, w = [ng.tensor(a, requires_grad=True)
                   for a in _inputs(CASES["lstm_sequence"][2], 3)]
    out, h_n, c_n = R.lstm_sequence(gi, h, c, w)
    assert out.grad_fn.next_functions[0][0].name() == "LstmLayerBackward0"
    (out.sum() + c_n.sum()).backward()
    assert all(t.grad is not None for t in (gi, h, c, w))


def _fused_loss(gi, h, c, w, x3, gh):
    out, h_n, c_n = R.lstm_sequence(gi, h, c, w)
    back, _, _ = R.lstm_sequence(gi, h, c, w, reverse=True)
    h1, c1 = R.lstm_cell(gi[0], c)
    g = R.gru_cell(x3, gh, h)
    return ((out * back).sum() + (h_n * c_n).sum() + (h1 * c1).sum() + (g * g).sum())


_jit_fused_loss = ng.jit(_fused_loss)


def test_jit_matches_eager():
    arrays = _inputs([(T, B, 4 * H), (B, H), (B, H), (4 * H, H), (B, 3 * H), (B, 3 * H)], 4)
    results = []
    for f in (_fused_loss, _jit_fused_loss):
        xs = [ng.tensor(a, requires_grad=True) for a in arrays]
        loss = f(*xs)
        loss.backward()
        results.append([loss.detach().numpy()] + [x.grad.numpy() for x in xs])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


@pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")
def test_lstm_on_cuda_eager_and_jit_match_cpu():
    ng.manual_seed(6)
    cpu = ng.nn.LSTM(2, 3)
    dev = ng.nn.LSTM(2, 3).to("cuda")
    dev.load_state_dict(cpu.state_dict())
    x = np.random.default_rng(6).standard_normal((3, 2, 2)).astype(np.float32)
    want = cpu(ng.tensor(x))[0]
    ng.sum(want * want).backward()
    for f in (dev, ng.jit(dev)):
        dev.zero_grad()
        got = f(ng.tensor(x, device="cuda"))[0]
        assert got.device.type == "cuda"
        ng.sum(got * got).backward()
        np.testing.assert_allclose(got.cpu().detach().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(dev.weight_hh_l0.grad.cpu().numpy(),
                                   cpu.weight_hh_l0.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_lstm_state_of_another_dtype_is_refused():
    # The layer's kernel would compute in the input's dtype; PyTorch refuses the mix.
    m = ng.nn.LSTM(2, 3)
    h = ng.zeros(1, 1, 3, dtype=ng.float64)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        m(ng.randn(4, 1, 2), (h, h))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("t_len", [1, 4])
def test_layer_gradients_of_the_inputs_that_ask(t_len, reverse):
    # The BPTT kernel's edges: one step (no previous h in y), c's gradient at one step only,
    # and a node that asks for some inputs' gradients (an initial h without grad).
    arrays = _inputs([(t_len, B, 4 * H), (B, H), (B, H), (4 * H, H)], 7)
    need = (True, False, True, True)
    cot_out, cot_c = _inputs([(t_len, B, H), (B, H)], 8)
    grads = []
    for lib, fn in ((torch, _torch_lstm_sequence), (ng, _ng_lstm_sequence)):
        xs = [lib.tensor(a, requires_grad=r) for a, r in zip(arrays, need)]
        out, _, c_n = fn(*xs, reverse)
        ((out * lib.tensor(cot_out)).sum() + (c_n * lib.tensor(cot_c)).sum()).backward()
        grads.append([None if x.grad is None else x.grad.numpy() for x in xs])
    for k, (want, got) in enumerate(zip(*grads)):
        assert (got is None) == (want is None), k
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"input {k}")


def test_saturated_gates_float32():
    # The kernel's sigmoid is (1 + tanh(x / 2)) / 2: at pre-activations of +-60 it must give
    # torch's 0 and 1 (and finite gradients), as exp-based sigmoid does.
    rng = np.random.default_rng(9)
    arrays = [(rng.standard_normal(s) * k).astype(np.float32)
              for s, k in (((5, 2, 4 * H), 60.0), ((2, H), 1.0), ((2, H), 1.0), ((4 * H, H), 1.0))]
    results = []
    for lib, fn in ((torch, _torch_lstm_sequence), (ng, _ng_lstm_sequence)):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out, h_n, c_n = fn(*xs, False)
        (out.sum() + c_n.sum()).backward()
        results.append([out.detach().numpy()] + [x.grad.numpy() for x in xs])
    for k, (want, got) in enumerate(zip(*results)):
        assert np.isfinite(got).all(), k
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"result {k}")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_steps_match_numpy_steps(dtype, reverse, monkeypatch):
    # The layer kernels' two step forms: one compiled loop a step (the compiler fills
    # step_kernels) and the NumPy calls they replace (the slot empty). Outside gradients at
    # every h, at one c only, and none at the gate slots, as the rules send them.
    t_len = 4
    gi, h0, c0, w = [a.astype(dtype) for a in
                     _inputs([(t_len, B, 4 * H), (B, H), (B, H), (4 * H, H)], 10)]
    g = np.zeros((6, t_len, B, H), dtype)
    g[0], g[1, 0 if reverse else -1] = _inputs([(t_len, B, H), (B, H)], 11)
    assert R._compiled_steps(gi, h0, c0, w) is not None
    results = []
    for slot in (R.step_kernels, None):
        monkeypatch.setattr(R, "step_kernels", slot)
        y = R._np_lstm_layer(gi, h0, c0, w, reverse)
        results.append((y, R._np_lstm_layer_grad(g, y, h0, c0, w, reverse)))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got, want in zip(*results):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_compiled_steps_take_a_broadcast_initial_cell_state():
    # c0 arrives as a strided or broadcast array (an expanded zero state): the compiled
    # loop reads a contiguous (B, H) copy, and the NumPy step broadcasts.
    gi, h0, w = _inputs([(T, B, 4 * H), (B, H), (4 * H, H)], 12)
    c0 = np.broadcast_to(_inputs([(H,)], 13)[0], (B, H))
    want = _torch_lstm_sequence(*[torch.tensor(np.array(a)) for a in (gi, h0, c0, w)], False)
    got = R._np_lstm_layer(gi, h0, c0, w, False)
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1, -1], want[2].numpy(), rtol=1e-10, atol=1e-12)


def test_eager_numgrad_gets_the_compiled_steps_without_loading_numba_early():
    # The package root fills the slot; Numba and the compiler load at the first layer run.
    import subprocess
    import sys
    code = ("import sys, numpy as np, numgrad\n"
            "from numgrad.ops import recurrent as R\n"
            "before = 'numba' in sys.modules\n"
            "a = np.zeros((2, 3), np.float32)\n"
            "print(before, R._compiled_steps(a) is not None, 'numba' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]

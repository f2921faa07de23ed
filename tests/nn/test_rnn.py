"""nn.RNN / LSTM / GRU and their cells against PyTorch with the same weights (torch's
state_dict loaded into numgrad's module): outputs, final states, input and parameter
gradients, parameter names and init, error texts; the compiled form against eager, and double
backward against finite differences.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad import nn
from numgrad.devices import cuda_is_available


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _pair(name, *args, **kw):
    """A torch float64 module and numgrad's with torch's weights."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kw).double()
    m = getattr(nn, name)(*args, **kw, dtype=ng.float64)
    m.load_state_dict({k: ng.tensor(_np(v)) for k, v in tm.state_dict().items()})
    return tm, m


def _flat(out):
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(tm, m, *inputs, call=lambda mod, *a: mod(*a)):
    """Forward values, then gradients of a weighted sum of every output, input and parameter;
    ``call(module, *inputs)`` runs a module."""
    t_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    n_in = [ng.tensor(a, requires_grad=True) for a in inputs]
    t_out, n_out = _flat(call(tm, *t_in)), _flat(call(m, *n_in))
    assert len(t_out) == len(n_out)
    rng = np.random.default_rng(1)
    t_loss, n_loss = 0, 0
    for a, b in zip(t_out, n_out):
        assert tuple(a.shape) == b.shape
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-10, atol=1e-12)
        w = rng.standard_normal(a.shape)
        t_loss = t_loss + (a * torch.tensor(w)).sum()
        n_loss = n_loss + (b * ng.tensor(w)).sum()
    t_loss.backward()
    n_loss.backward()
    for a, b in zip(t_in, n_in):
        np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=1e-9, atol=1e-12)
    for (name, p), q in zip(tm.named_parameters(), m.parameters()):
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-9, atol=1e-12, err_msg=name)


R = np.random.default_rng(0)


@pytest.mark.parametrize("name,kw", [
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(batch_first=True, bias=False)),
    ("GRU", dict(num_layers=2, batch_first=True)),
    ("GRU", dict(bidirectional=True)),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(bidirectional=True, bias=False)),
])
def test_layers_match_torch_with_zero_initial_state(name, kw):
    tm, m = _pair(name, 3, 4, **kw)
    _compare(tm, m, R.standard_normal((5, 2, 3)))


def _with_states(name):
    """Run a module with the trailing inputs as its states (leaves, so their gradients are
    compared too)."""
    def call(mod, x, h, c=None):
        return mod(x, (h, c) if name.startswith("LSTM") else h)
    return call


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layers_match_torch_with_given_initial_state_and_unbatched(name):
    tm, m = _pair(name, 3, 4, num_layers=2, bidirectional=True)
    h = [R.standard_normal((4, 2, 4)) for _ in range(2 if name == "LSTM" else 1)]
    _compare(tm, m, R.standard_normal((5, 2, 3)), *h, call=_with_states(name))
    # unbatched (L, H_in) with (layers * directions, H) states
    _compare(tm, m, R.standard_normal((5, 3)), *[a[:, 0] for a in h], call=_with_states(name))


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(name):
    tm, m = _pair(name, 3, 4)
    _compare(tm, m, R.standard_normal((2, 3)))
    _compare(tm, m, R.standard_normal(3))
    h = [R.standard_normal((2, 4)) for _ in range(2 if name == "LSTMCell" else 1)]
    _compare(tm, m, R.standard_normal((2, 3)), *h, call=_with_states(name))
    _compare(tm, m, R.standard_normal(3), *[a[0] for a in h], call=_with_states(name))


def test_parameter_names_shapes_and_init_follow_torch():
    t = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True, bias=True)
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    assert [(n, tuple(p.shape)) for n, p in t.named_parameters()] == \
        [(n, p.shape) for n, p in m.named_parameters()]
    for name, kw in [("GRU", {}), ("RNN", dict(bias=False)), ("GRUCell", {}), ("LSTMCell", {})]:
        t, m = getattr(torch.nn, name)(3, 5, **kw), getattr(nn, name)(3, 5, **kw)
        assert [(n, tuple(p.shape)) for n, p in t.named_parameters()] == \
            [(n, p.shape) for n, p in m.named_parameters()]
        assert repr(m) == repr(t)
    t, m = torch.nn.GRU(3, 5, num_layers=2, bias=False), nn.GRU(3, 5, num_layers=2, bias=False)
    m.flatten_parameters()
    assert [[tuple(p.shape) for p in ps] for ps in t.all_weights] == \
        [[p.shape for p in ps] for ps in m.all_weights]
    bound = 1 / math.sqrt(5)
    ng.manual_seed(0)
    w = np.concatenate([_np(p).ravel() for p in nn.GRU(3, 5, num_layers=2).parameters()])
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    for kw in [dict(num_layers=2, batch_first=True, bidirectional=True),
               dict(bias=False, dropout=0.25, num_layers=3)]:
        assert repr(nn.LSTM(3, 4, **kw)) == repr(torch.nn.LSTM(3, 4, **kw))
    for name in ("RNN", "RNNCell"):
        kw = dict(nonlinearity="relu", bias=False)
        assert repr(getattr(nn, name)(3, 4, **kw)) == repr(getattr(torch.nn, name)(3, 4, **kw))


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class and text are what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.LSTM(3, 5, 2)(lib.zeros(2, 2, 2, 3)),
    lambda lib: lib.nn.LSTM(3, 5, 2)(lib.zeros(2, 2, 4)),
    lambda lib: lib.nn.LSTM(3, 5, 2)(lib.zeros(2, 2, 3), (lib.zeros(1, 2, 5), lib.zeros(2, 2, 5))),
    lambda lib: lib.nn.LSTM(3, 5, 2)(lib.zeros(2, 2, 3), (lib.zeros(2, 2, 5), lib.zeros(1, 2, 5))),
    lambda lib: lib.nn.LSTM(3, 5, 2)(lib.zeros(2, 3), (lib.zeros(2, 2, 5), lib.zeros(2, 2, 5))),
    lambda lib: lib.nn.GRU(3, 5)(lib.zeros(2, 2, 3), lib.zeros(1, 3, 5)),
    lambda lib: lib.nn.RNN(3, 5, nonlinearity="foo"),
    lambda lib: lib.nn.LSTM(3, 5, dropout=2),
    lambda lib: lib.nn.LSTM(3, 0),
    lambda lib: lib.nn.LSTM(3, 5, num_layers=0),
    lambda lib: lib.nn.LSTMCell(3, 5)(lib.zeros(2, 2, 3)),
    lambda lib: lib.nn.LSTMCell(3, 5)(lib.zeros(2, 4)),
    lambda lib: lib.nn.LSTMCell(3, 5)(lib.zeros(2, 3), (lib.zeros(3, 5), lib.zeros(3, 5))),
    lambda lib: lib.nn.RNNCell(3, 5)(lib.zeros(2, 3), lib.zeros(2, 5, 1)),
    lambda lib: lib.nn.RNNCell(3, 5, nonlinearity="x")(lib.zeros(2, 3)),
    lambda lib: lib.nn.LSTM(3, 5)(lib.zeros(0, 2, 3)),
])
def test_errors_match_torch(call):
    want = _error(lambda: call(torch))
    assert want is not None
    assert _error(lambda: call(ng)) == want


def test_dropout_warning_and_between_layer_dropout():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        nn.LSTM(3, 5, dropout=0.5)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        torch.nn.LSTM(3, 5, dropout=0.5)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    ng.manual_seed(0)
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = ng.randn(6, 2, 3)
    trained = [_np(m(x)[0]) for _ in range(2)]
    assert not np.allclose(trained[0], trained[1])  # fresh masks each call
    m.eval()
    evaluated = _np(m(x)[0])
    m.dropout = 0.0
    np.testing.assert_array_equal(_np(m(x)[0]), evaluated)  # eval: dropout is the identity
    m.train()
    np.testing.assert_array_equal(_np(m(x)[0]), evaluated)


def test_double_backward_matches_finite_differences():
    ng.manual_seed(0)
    m = nn.LSTM(2, 3, dtype=ng.float64)
    x0 = np.random.default_rng(2).standard_normal((3, 1, 2))

    def grad_norm(a):
        x = ng.tensor(a, requires_grad=True)
        (g,) = ng.autograd.grad(ng.sum(m(x)[0] ** 2), x, create_graph=True)
        return ng.sum(g * g), x

    out, x = grad_norm(x0)
    (gg,) = ng.autograd.grad(out, x)
    eps, fd = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        fd[i] = (float(grad_norm(x0 + d)[0]) - float(grad_norm(x0 - d)[0])) / (2 * eps)
    np.testing.assert_allclose(_np(gg), fd, rtol=1e-5, atol=1e-7)


ng.manual_seed(3)
_JIT_LSTM = nn.LSTM(3, 4, num_layers=2, batch_first=True, dtype=ng.float64)
_JIT_GRU = nn.GRUCell(3, 4, dtype=ng.float64)


@ng.jit
def _jit_loss(x):
    out, (h, c) = _JIT_LSTM(x)
    return ng.sum(out * out) + ng.sum(h * c) + ng.sum(_JIT_GRU(x[:, 0]))


def test_jit_matches_eager_values_and_gradients():
    x = ng.tensor(np.random.default_rng(4).standard_normal((2, 3, 3)))
    params = list(_JIT_LSTM.parameters()) + list(_JIT_GRU.parameters())

    def eager(x):
        out, (h, c) = _JIT_LSTM(x)
        return ng.sum(out * out) + ng.sum(h * c) + ng.sum(_JIT_GRU(x[:, 0]))

    results = []
    for f in (eager, _jit_loss):
        for p in params:
            p.grad = None
        loss = f(x)
        loss.backward()
        results.append((float(loss), [_np(p.grad).copy() for p in params]))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-13)


@pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")
def test_gru_cell_on_cuda_eager_and_jit_match_cpu():
    ng.manual_seed(5)
    cpu = nn.GRUCell(2, 3)
    dev = nn.GRUCell(2, 3).to("cuda")
    dev.load_state_dict(cpu.state_dict())
    x = np.random.default_rng(5).standard_normal((2, 2)).astype(np.float32)
    want = cpu(ng.tensor(x))
    ng.sum(want).backward()
    for f in (dev, ng.jit(dev)):
        dev.zero_grad()
        got = f(ng.tensor(x, device="cuda"))
        assert got.device.type == "cuda"
        ng.sum(got).backward()
        np.testing.assert_allclose(_np(got.cpu()), _np(want), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(dev.weight_hh.grad.cpu()), _np(cpu.weight_hh.grad),
                                   rtol=1e-5, atol=1e-6)

"""``ng.value_and_grad`` / ``ng.grad``: eagerly and under ``ng.jit``, against torch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import X_DATA, assert_close, to_numpy  # noqa: E402

W3 = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], dtype=np.float32)  # (3, 2)
B2 = np.array([0.1, -0.2], dtype=np.float32)
TARGET = [1, 0]


def _lib(t):
    return torch if isinstance(t, torch.Tensor) else ng


def _loss(w, x, b):
    m = _lib(w)
    return m.nn.functional.cross_entropy(x @ w + b, m.tensor(TARGET))


def _loss_aux(w, x, b):
    logits = x @ w + b
    return ((logits.tanh() ** 2).mean(), logits.softmax(dim=1))


def _torch_grads(fn, args, argnums):
    ts = [torch.tensor(a, requires_grad=i in argnums) for i, a in enumerate(args)]
    out = fn(*ts)
    value = out[0] if isinstance(out, tuple) else out
    gs = torch.autograd.grad(value, [ts[i] for i in argnums])
    return out, gs


ARGS = (W3, X_DATA, B2)
MODES = ["eager", "numpy", "cpu"]
LIGHT = ["eager", "numpy"]  # the cpu backend only for a few representative cases (compile time)


def _maybe_jit(fn, mode):
    if mode == "eager":
        return fn
    return ng.jit(fn, backend=None if mode == "cpu" else mode)


VG0 = {m: _maybe_jit(ng.value_and_grad(_loss), m) for m in MODES}
VG02 = {m: _maybe_jit(ng.value_and_grad(_loss, argnums=(0, 2)), m) for m in MODES}
G1 = {m: _maybe_jit(ng.grad(_loss, argnums=1), m) for m in MODES}
G012 = {m: _maybe_jit(ng.grad(_loss, argnums=(0, 1, 2)), m) for m in MODES}
VG_AUX = {m: _maybe_jit(ng.value_and_grad(_loss_aux, argnums=(0, 2), has_aux=True), m)
          for m in MODES}
G_AUX = {m: _maybe_jit(ng.grad(_loss_aux, argnums=0, has_aux=True), m) for m in MODES}


def _inputs(requires_grad=False):
    return [ng.tensor(a.copy(), requires_grad=requires_grad) for a in ARGS]


@pytest.mark.parametrize("mode", LIGHT)
def test_value_and_grad_int_argnums(mode):
    value, g = VG0[mode](*_inputs())
    tvalue, (tg,) = _torch_grads(_loss, ARGS, (0,))
    assert isinstance(g, ng.Tensor)
    assert_close(value, tvalue.detach())
    assert_close(g, tg)
    assert value.requires_grad is False and g.requires_grad is False


@pytest.mark.parametrize("mode", MODES)
def test_value_and_grad_tuple_argnums(mode):
    value, grads = VG02[mode](*_inputs())
    tvalue, tgrads = _torch_grads(_loss, ARGS, (0, 2))
    assert isinstance(grads, tuple) and len(grads) == 2
    assert_close(value, tvalue.detach())
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)


@pytest.mark.parametrize("mode", LIGHT)
def test_grad_int_and_tuple_argnums(mode):
    g = G1[mode](*_inputs())
    _, (tg,) = _torch_grads(_loss, ARGS, (1,))
    assert_close(g, tg)
    grads = G012[mode](*_inputs())
    _, tgrads = _torch_grads(_loss, ARGS, (0, 1, 2))
    assert len(grads) == 3
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)


@pytest.mark.parametrize("mode", MODES)
def test_has_aux(mode):
    (value, aux), grads = VG_AUX[mode](*_inputs())
    (tvalue, taux), tgrads = _torch_grads(_loss_aux, ARGS, (0, 2))
    assert_close(value, tvalue.detach())
    assert_close(aux, taux.detach())
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)
    g, aux2 = G_AUX[mode](*_inputs())
    assert_close(g, tgrads[0])
    assert_close(aux2, taux.detach())


@pytest.mark.parametrize("mode", LIGHT)
def test_inputs_requiring_grad_are_left_alone(mode):
    ins = _inputs(requires_grad=True)
    value, grads = VG02[mode](*ins)
    tvalue, tgrads = _torch_grads(_loss, ARGS, (0, 2))
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)
    for t, a in zip(ins, ARGS):
        assert t.requires_grad is True and t.grad is None and t.is_leaf
        np.testing.assert_array_equal(to_numpy(t), a)
    # As torch.func.grad_and_value: inputs that require grad make the results part of the
    # caller's graph; under no_grad they are plain values.
    assert value.requires_grad is True and all(g.requires_grad for g in grads)
    with ng.no_grad():
        value, grads = VG02[mode](*ins)
    assert value.requires_grad is False and not any(g.requires_grad for g in grads)


@pytest.mark.parametrize("mode", ["numpy", "cpu"])
def test_compiled_transform_reuses_one_plan(mode):
    cf = VG02[mode]
    cf(*_inputs())
    traces = cf.stats.traces
    hits = cf.stats.cache_hits
    x2 = [a * 2 for a in ARGS]
    value, grads = cf(*[ng.tensor(a) for a in x2])
    tvalue, tgrads = _torch_grads(_loss, x2, (0, 2))
    assert cf.stats.traces == traces and cf.stats.cache_hits == hits + 1
    assert_close(value, tvalue.detach())
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)


def test_value_and_grad_is_one_program_without_a_backward_node():
    ins = _inputs()
    value, g = VG0["numpy"](*ins)
    assert value.grad_fn is None and g.grad_fn is None
    text = str(VG0["numpy"].trace(*ins))
    assert "log_softmax" in text or "exp" in text  # forward and backward in one listing


def test_value_and_grad_float64():
    args = [a.astype(np.float64) for a in ARGS]
    value, grads = VG02["numpy"](*[ng.tensor(a) for a in args])
    tvalue, tgrads = _torch_grads(_loss, args, (0, 2))
    assert value.dtype == ng.float64
    assert_close(value, tvalue.detach())
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)


@pytest.mark.parametrize("mode", ["eager", "numpy"])
def test_non_scalar_value_raises(mode):
    f = _maybe_jit(ng.value_and_grad(lambda x: x * 2), mode)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        f(ng.tensor(X_DATA))


@pytest.mark.parametrize("mode", ["eager", "numpy"])
def test_bad_argnum_inputs(mode):
    f = _maybe_jit(ng.value_and_grad(lambda x, y: (x * y).sum(), argnums=1), mode)
    with pytest.raises(RuntimeError, match="floating point"):
        f(ng.tensor(X_DATA), ng.tensor([[1, 2, 3], [4, 5, 6]]))
    with pytest.raises(TypeError):
        f(ng.tensor(X_DATA), 2)  # a Python float is taken (JAX does); an int is not

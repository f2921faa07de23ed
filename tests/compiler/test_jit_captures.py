"""Captured tensors and guards: what a jitted function reads besides its arguments.

Each test runs the same code eagerly (the reference), through @ng.jit and, where it
says something about gradients, through PyTorch. Most use the fused CPU backend; the
guard tests that only count traces use ``backend="numpy"`` (the same tracer, guards and
runtime, without a Numba compile per function).
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, to_numpy

import numgrad as ng

W_DATA = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
X_DATA = [1.0, -2.0, 0.5]


class Model:
    """A model as PyTorch users write one: parameters on self, a jitted method."""

    def __init__(self, lib):
        self.W = lib.tensor(W_DATA, requires_grad=True)
        self.b = lib.tensor([0.1, -0.2], requires_grad=True)
        self.scale = 2.0

    def loss(self, x):
        return ((self.W @ x + self.b).tanh() * self.scale).sum()


class JitModel(Model):
    loss = ng.jit(Model.loss)   # ng.jit as a decorator of a method, in the class body


def _grads_of(model_cls, lib):
    m = model_cls(lib)
    x = lib.tensor(X_DATA)
    m.loss(x).backward()
    return m, to_numpy(m.W.grad), to_numpy(m.b.grad)


def test_parameters_on_self_get_gradients_like_eager_and_torch():
    import torch
    _, ew, eb = _grads_of(Model, ng)
    _, jw, jb = _grads_of(JitModel, ng)
    _, tw, tb = _grads_of(Model, torch)
    assert_close(jw, ew)
    assert_close(jb, eb)
    assert_close(jw, tw)
    assert_close(jb, tb)


def test_jit_of_a_bound_method_captures_self():
    m = Model(ng)
    loss = ng.jit(m.loss)
    x = ng.tensor(X_DATA)
    loss(x).backward()
    ref = Model(ng)
    ref.loss(x).backward()
    assert_close(m.W.grad, ref.W.grad)
    assert_close(m.b.grad, ref.b.grad)


def test_optimizer_step_between_calls_is_seen_and_attribute_change_retraces():
    eager, jitted = Model(ng), JitModel(ng)
    x = ng.tensor(X_DATA)
    for step in range(3):
        for m in (eager, jitted):
            m.W.grad = m.b.grad = None
            loss = m.loss(x)
            loss.backward()
            with ng.no_grad():          # SGD, in place, outside the jitted function
                m.W.sub_(m.W.grad * 0.1)
                m.b.sub_(m.b.grad * 0.1)
        assert_close(jitted.W, eager.W.detach())
        if step == 1:
            eager.scale = jitted.scale = 3.0    # a scalar attribute the trace read
    assert_close(jitted.loss(x), eager.loss(x))
    assert JitModel.loss.stats.traces >= 2      # the scale change retraced


def test_closure_and_global_captures_get_gradients():
    w = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)

    @ng.jit
    def f(x):
        return (x * w).sin().sum()

    x = ng.tensor(X_DATA, requires_grad=True)
    f(x).backward()
    we = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    xe = ng.tensor(X_DATA, requires_grad=True)
    (xe * we).sin().sum().backward()
    assert_close(w.grad, we.grad)
    assert_close(x.grad, xe.grad)


def test_capture_alone_requires_grad():
    # No argument requires grad: before captures were lifted, backward() failed here.
    w = ng.tensor([1.0, 2.0], requires_grad=True)
    f = ng.jit(lambda x: (x * w * w).sum())
    f(ng.tensor([3.0, 4.0])).backward()
    assert_close(w.grad, np.array([6.0, 16.0], np.float32))


def test_hooks_on_captured_tensor_fire_every_call():
    w = ng.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(to_numpy(g)))
    f = ng.jit(lambda x: (x * w).sum())
    for _ in range(2):
        f(ng.tensor([3.0, 4.0])).backward()
    assert len(seen) == 2
    np.testing.assert_allclose(seen[1], [3.0, 4.0])


def _hook_inside(w):
    def f(x):
        w.register_hook(lambda g: g * 10)   # eager registers one more hook per call
        return (x * w).sum()
    return f


def test_hook_registered_on_capture_inside_the_function():
    grads = []
    for wrap in (lambda f: f, ng.jit):
        w = ng.tensor([1.0, 2.0], requires_grad=True)
        f = wrap(_hook_inside(w))
        for _ in range(2):
            f(ng.tensor([3.0, 4.0])).backward()
        grads.append(to_numpy(w.grad))
    assert_close(grads[1], grads[0])
    assert_close(grads[0], np.array([330.0, 440.0], np.float32))


def test_inplace_update_after_call_raises_version_error_as_eager():
    w = ng.tensor([1.0, 2.0], requires_grad=True)
    f = ng.jit(lambda x: (x * w).sum())
    x = ng.tensor([3.0, 4.0], requires_grad=True)
    out = f(x)
    with ng.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_buffer_updated_in_place_inside_the_function_is_written_back():
    running = ng.zeros(3)

    def step(x):
        running.mul_(0.5).add_(x * 0.5)
        return x * 2

    jstep = ng.jit(step)
    ref = np.zeros(3, np.float32)
    for k in range(3):
        x = ng.tensor([1.0 + k, 2.0, 3.0])
        jstep(x)
        ref = ref * 0.5 + to_numpy(x) * 0.5
        assert_close(running, ref)


def test_returning_a_captured_tensor_returns_that_tensor():
    w = ng.tensor([1.0, 2.0], requires_grad=True)
    f = ng.jit(lambda x: (x + 1, w))
    _, out = f(ng.ones(2))
    assert out is w


def test_reading_a_captured_value_raises():
    s = ng.tensor(2.0)

    def f(x):
        return x * float(s)

    with pytest.raises(ng.TracingError, match="captured from outside"):
        ng.jit(f, backend="numpy")(ng.ones(2))


def test_grad_read_inside_the_function_follows_the_new_grad():
    w = ng.tensor([1.0, 2.0], requires_grad=True)

    @ng.jit
    def sgd(lr):
        with ng.no_grad():
            w.sub_(w.grad * lr)
        return w.detach()

    for g in ([1.0, 1.0], [2.0, -2.0]):
        w.grad = ng.tensor(g)
        sgd(0.5)
    assert_close(w, np.array([1.0 - 0.5 - 1.0, 2.0 - 0.5 + 1.0], np.float32))


def test_double_backward_through_captured_parameter():
    w = ng.tensor([0.5, -1.5], requires_grad=True)
    f = ng.jit(lambda x: (x * w).tanh().sum())
    x = ng.tensor([1.0, 2.0])
    (g,) = ng.autograd.grad(f(x), [w], create_graph=True)
    g.sum().backward()
    we = ng.tensor([0.5, -1.5], requires_grad=True)
    (ge,) = ng.autograd.grad((x * we).tanh().sum(), [we], create_graph=True)
    ge.sum().backward()
    assert_close(g, ge)
    assert_close(w.grad, we.grad)


# ------------------------------------------------------------------- guards
LR = 2.0
FLAG = True
CFG = {"act": "tanh", "k": 3}
PARAM = ng.tensor([1.0, 2.0, 3.0])


def _uses_globals(x):
    y = x * LR
    y = y.tanh() if CFG["act"] == "tanh" else y.relu()
    if FLAG:
        y = y + PARAM
    return y * CFG["k"]


def _eager_globals(x):
    return _uses_globals(x)


def test_global_scalar_flag_dict_entry_and_tensor_rebinding_retrace():
    global LR, FLAG, PARAM
    f = ng.jit(_uses_globals, backend="numpy")
    x = ng.tensor(X_DATA)
    saved = (LR, FLAG, PARAM, dict(CFG))
    try:
        changes = [lambda: None,
                   lambda: globals().__setitem__("LR", -0.5),
                   lambda: CFG.__setitem__("act", "relu"),
                   lambda: globals().__setitem__("FLAG", False),
                   lambda: CFG.__setitem__("k", 4),
                   lambda: globals().__setitem__("FLAG", True),
                   lambda: globals().__setitem__("PARAM", ng.tensor([3.0, 2.0, 1.0]))]
        for n, change in enumerate(changes):
            change()
            assert_close(f(x), _eager_globals(x))
            assert f.stats.traces == n + 1
        assert_close(f(x), _eager_globals(x))      # unchanged: the plan is reused
        assert f.stats.traces == len(changes)
    finally:
        LR, FLAG, PARAM = saved[:3]
        CFG.clear()
        CFG.update(saved[3])


def test_captured_tensor_mutated_in_place_between_calls_is_read_not_retraced():
    scale = ng.tensor([1.0, 2.0, 3.0])
    f = ng.jit(lambda x: x * scale, backend="numpy")
    x = ng.tensor(X_DATA)
    f(x)
    scale.mul_(2)
    assert_close(f(x), to_numpy(x) * np.array([2.0, 4.0, 6.0], np.float32))
    assert f.stats.traces == 1


def test_closure_cell_rebinding_and_code_edit_retrace():
    k = 2.0

    def f(x):
        return x * k

    jf = ng.jit(f, backend="numpy")
    x = ng.tensor(X_DATA)
    assert_close(jf(x), to_numpy(x) * 2)
    k = 3.0
    assert_close(jf(x), to_numpy(x) * 3)
    f.__code__ = (lambda x: x - k).__code__
    assert_close(jf(x), to_numpy(x) - 3)
    f.__defaults__ = (1,)
    jf(x)
    assert jf.stats.traces == 4


def test_helper_function_redefined_retraces():
    ns = {"ng": ng}
    exec("def helper(x):\n    return x * 2\n"
         "def f(x):\n    return helper(x) + 1\n", ns)
    jf = ng.jit(ns["f"], backend="numpy")
    x = ng.tensor(X_DATA)
    assert_close(jf(x), to_numpy(x) * 2 + 1)
    exec("def helper(x):\n    return x * 5\n", ns)   # a Jupyter user edits one cell
    assert_close(jf(x), to_numpy(x) * 5 + 1)


def test_state_a_hook_appends_to_does_not_retrace():
    log = []

    def f(x):
        y = x * 2
        y.register_hook(lambda g: log.append(1))
        return y.sum()

    jf = ng.jit(f, backend="numpy")
    for _ in range(3):
        x = ng.tensor(X_DATA, requires_grad=True)
        jf(x).backward()
    assert len(log) == 3
    assert jf.stats.traces == 1


def test_scalar_arguments_are_keyed_by_bits():
    # Static floats are always constants, keyed by their bits.
    f = ng.jit(lambda x, s: x / s, backend="numpy", static_argnames="s")
    x = ng.tensor([1.0])
    assert to_numpy(f(x, 0.0))[0] == np.inf
    assert to_numpy(f(x, -0.0))[0] == -np.inf
    assert f.stats.traces == 2
    for _ in range(3):
        assert np.isnan(to_numpy(f(x, float("nan")))[0])
    assert f.stats.traces == 3          # NaN finds its plan again


def test_a_float_argument_varies_from_its_first_bits():
    f = ng.jit(lambda x, s: x / s, backend="numpy")
    x = ng.tensor([1.0])
    for _ in range(2):
        assert np.isnan(to_numpy(f(x, float("nan")))[0])
    assert f.stats.traces == 1          # NaN is the same value again: a constant still
    assert to_numpy(f(x, 0.0))[0] == np.inf   # other bits: traced as a value from now on
    assert to_numpy(f(x, -0.0))[0] == -np.inf
    assert np.isnan(to_numpy(f(x, float("nan")))[0])
    assert f.stats.traces == 2


@pytest.mark.parametrize("draw", ["np.random.rand(3)", "ng.randn(3).numpy()",
                                  "[random.random() for _ in range(3)]"])
def test_global_random_draw_is_refused_naming_the_line(draw):
    ns = {"ng": ng, "np": np, "random": __import__("random")}
    exec(f"def f(x):\n    noise = ng.tensor({draw}, dtype=ng.float32)\n    return x + noise\n",
         ns)
    with pytest.raises(ng.TracingError, match="random") as info:
        ng.jit(ns["f"], backend="numpy")(ng.ones(3))
    assert ":2" in str(info.value)     # the line that drew


def test_nested_jit_closing_over_an_outer_traced_value_is_inlined():
    @ng.jit
    def outer(x):
        y = x * 2

        @ng.jit
        def inner(z):
            return z + y

        return inner(ng.ones(2))

    assert_close(outer(ng.tensor([1.0, 2.0])), np.array([3.0, 5.0], np.float32))


def test_numpy_on_traced_tensor_says_what_to_write():
    arr = np.ones(2, np.float32)
    for fn in (lambda x: np.arctan(x), lambda x: np.linalg.norm(x)):
        with pytest.raises(ng.TracingError, match=r"ng\.tanh\(x\).*ng\.tensor\(arr\)"):
            ng.jit(fn, backend="numpy")(ng.ones(2))
    # A ufunc numgrad has an op for, and an array operand (a constant), are fine.
    for fn in (lambda x: np.tanh(x), lambda x: x * arr, lambda x: arr * x):
        x = ng.tensor([0.5, -1.0])
        assert_close(ng.jit(fn, backend="numpy")(x), fn(x))


def test_second_backward_through_a_plan_that_saves_nothing():
    f = ng.jit(lambda b: b + 1)
    b = ng.tensor([1.0, 2.0], requires_grad=True)
    y = f(b)
    g = ng.ones(2)
    y.backward(g)
    y.backward(g)          # as eager and PyTorch: AddBackward saves nothing
    assert_close(b.grad, np.array([2.0, 2.0], np.float32))
    h = ng.jit(lambda b: b * b)
    y = h(b)
    y.backward(g)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(g)


def test_backward_inside_the_function_is_refused_clearly():
    def step(x):
        loss = (x * x).sum()
        loss.backward()     # eager fills x.grad; a plan would not replay that side effect
        return loss

    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ng.TracingError, match=r"\.backward\(\) inside an @ng.jit"):
        ng.jit(step, backend="numpy")(x)
    assert x.grad is None   # and nothing the caller passed in was touched

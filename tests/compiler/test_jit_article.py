"""The seed article's five gradient tools, run through ``ng.jit``.

Each case is one small function of the computation (as in ``numgrad/demo.py``); it runs
eagerly, through ``ng.jit`` on the fused Numba backend ("cpu") and through the reference
interpreter ("numpy"), and every value and error is compared with torch and with eager
numgrad.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close, first_line, to_numpy  # noqa: E402

INPLACE_MSG = ("one of the variables needed for gradient computation has been modified by an "
               "inplace operation")
NO_GRAD_FN_MSG = "element 0 of tensors does not require grad and does not have a grad_fn"
SCALAR_MSG = "grad can be implicitly created only for scalar outputs"
SECOND_MSG = "Trying to backward through the graph a second time"
HOOK_MSG = "cannot register a hook on a tensor that doesn't require gradient"

MODES = ["eager", "cpu", "numpy"]
COMPILED = ["cpu", "numpy"]


def wrap(fn):
    """``{mode: callable}``: the plain function and its two compiled versions."""
    return {"eager": fn, "cpu": ng.jit(fn), "numpy": ng.jit(fn, backend="numpy")}


# ----------------------------------------------------------------------------- functions
def _r(x):
    return (x ** 2 + x ** 3).sum()


def _r_detached(x):
    return (x ** 2 + x.detach() ** 3).sum()


def _sigmoid(a):
    return a.sigmoid()


def _r_clone(x):
    xc = x.clone()
    return (xc ** 2 + xc ** 3).sum(), xc


def _square(x):
    return x ** 2


def _cube_sum(t):
    return (t ** 3).sum()


def _tanh_mul(x, w):
    return (x.tanh() * w).sum()


R = wrap(_r)
R_DETACHED = wrap(_r_detached)
SIGMOID = wrap(_sigmoid)
R_CLONE = wrap(_r_clone)
SQUARE = wrap(_square)
CUBE_SUM = wrap(_cube_sum)
TANH_MUL = wrap(_tanh_mul)


def _is_compiled_output(mode, t):
    return mode == "eager" or t.grad_fn.name() == "CompiledFunctionBackward"


# ----------------------------------------------------------------------------- 1. detach
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("detached,value", [(False, 5.0), (True, 2.0)])
def test_detach_changes_gradient(mode, detached, value):
    fn = (R_DETACHED if detached else R)[mode]
    x = ng.ones(10, requires_grad=True)
    r = fn(x)
    assert _is_compiled_output(mode, r)
    r.backward()
    tx = torch.ones(10, requires_grad=True)
    (_r_detached if detached else _r)(tx).backward()
    assert_close(r, (_r_detached if detached else _r)(torch.ones(10)))
    assert_close(x.grad, tx.grad)
    np.testing.assert_array_equal(to_numpy(tx.grad), np.full(10, value, np.float32))


@pytest.mark.parametrize("mode", COMPILED)
def test_inplace_on_detached_alias_of_compiled_output(mode):
    a = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = SIGMOID[mode](a)
    assert b.grad_fn.name() == "CompiledFunctionBackward"
    c = b.detach()
    assert c.requires_grad is False and c.grad_fn is None
    c.zero_()
    # storage and version counter are shared with the compiled output
    np.testing.assert_array_equal(to_numpy(b.detach()), [0.0, 0.0, 0.0])
    assert b._version == c._version == 1
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_MSG)) as got:
        b.sum().backward()
    assert a.grad is None

    ea = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    eb = SIGMOID["eager"](ea)
    eb.detach().zero_()
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_MSG)) as eager:
        eb.sum().backward()
    ta = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tb = ta.sigmoid()
    tb.detach().zero_()
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_MSG)):
        tb.sum().backward()
    assert first_line(got.value) == first_line(eager.value)
    assert "output 0 of Sigmoid" in str(got.value)
    assert "is at version 1; expected version 0 instead" in str(got.value)


@pytest.mark.parametrize("mode", MODES)
def test_clone_detach_is_a_safe_copy(mode):
    a = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = SIGMOID[mode](a)
    d = b.clone().detach()
    d.zero_()
    assert b._version == 0
    b.sum().backward()
    ta = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tb = ta.sigmoid()
    tb.clone().detach().zero_()
    tb.sum().backward()
    assert_close(b, tb.detach())
    assert_close(a.grad, ta.grad)


# ----------------------------------------------------------------------------- 2. no_grad
@pytest.mark.parametrize("mode", MODES)
def test_no_grad_call(mode):
    x = ng.ones(10, requires_grad=True)
    with ng.no_grad():
        r = R[mode](x)
    assert r.requires_grad is False and r.grad_fn is None
    assert_close(r, _r(torch.ones(10)))
    tx = torch.ones(10, requires_grad=True)
    with torch.no_grad():
        tr = _r(tx)
    with pytest.raises(RuntimeError) as want:
        tr.backward()
    with pytest.raises(RuntimeError) as got:
        r.backward()
    assert str(got.value) == str(want.value) == NO_GRAD_FN_MSG
    assert x.grad is None


@pytest.mark.parametrize("mode", COMPILED)
def test_no_grad_as_decorator_around_compiled_call(mode):
    @ng.no_grad()
    def infer(x):
        return R[mode](x)

    r = infer(ng.ones(10, requires_grad=True))
    assert r.requires_grad is False
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        r.backward()


# ----------------------------------------------------------------------------- 3. clone
@pytest.mark.parametrize("mode", MODES)
def test_clone_stays_in_graph_and_is_not_a_leaf(mode):
    x = ng.ones(10, requires_grad=True)
    r, xc = R_CLONE[mode](x)
    assert xc.requires_grad is True and xc.is_leaf is False
    assert_close(xc, torch.ones(10))
    r.backward()
    tx = torch.ones(10, requires_grad=True)
    tr, txc = _r_clone(tx)
    tr.backward()
    assert_close(x.grad, tx.grad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = xc.grad
    assert g is None
    assert any(issubclass(m.category, UserWarning) and "retain_grad()" in str(m.message)
               for m in w), [str(m.message) for m in w]


@pytest.mark.parametrize("mode", COMPILED)
def test_clone_output_retain_grad(mode):
    x = ng.ones(10, requires_grad=True)
    r, xc = R_CLONE[mode](x)
    xc.retain_grad()
    r.backward()
    tx = torch.ones(10, requires_grad=True)
    tr, txc = _r_clone(tx)
    txc.retain_grad()
    tr.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(xc.grad, txc.grad)
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("mode", COMPILED)
def test_hook_on_output_also_used_inside_sees_total_gradient(mode):
    seen, tseen = [], []
    x = ng.ones(10, requires_grad=True)
    r, xc = R_CLONE[mode](x)
    xc.register_hook(lambda g: seen.append(to_numpy(g)))
    (r + xc.sum()).backward()
    tx = torch.ones(10, requires_grad=True)
    tr, txc = _r_clone(tx)
    txc.register_hook(lambda g: tseen.append(to_numpy(g)))
    (tr + txc.sum()).backward()
    assert_close(x.grad, tx.grad)
    assert len(seen) == len(tseen) == 1
    np.testing.assert_allclose(seen[0], tseen[0])


# ----------------------------------------------------------------------------- 4. backward
@pytest.mark.parametrize("mode", MODES)
def test_non_scalar_backward_needs_gradient(mode):
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = SQUARE[mode](x)
    ty = torch.tensor([1.0, 2.0, 3.0], requires_grad=True) ** 2
    with pytest.raises(RuntimeError) as want:
        ty.backward()
    with pytest.raises(RuntimeError) as got:
        y.backward()
    assert str(got.value) == str(want.value) == SCALAR_MSG
    assert x.grad is None


@pytest.mark.parametrize("mode", MODES)
def test_second_backward_needs_retain_graph(mode):
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = SQUARE[mode](x)
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ty = tx ** 2
    g = [1.0, 0.5, 2.0]
    y.backward(ng.tensor(g), retain_graph=True)
    ty.backward(torch.tensor(g), retain_graph=True)
    assert_close(x.grad, tx.grad)
    y.backward(ng.tensor(g))  # accumulates
    ty.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad)
    with pytest.raises(RuntimeError) as want:
        ty.backward(torch.tensor(g))
    with pytest.raises(RuntimeError) as got:
        y.backward(ng.tensor(g))
    assert str(got.value).startswith(SECOND_MSG)
    assert str(got.value).split(" (or")[0] == str(want.value).split(" (or")[0]
    assert_close(x.grad, tx.grad)  # the failed backward accumulated nothing


@pytest.mark.parametrize("mode", COMPILED)
def test_second_backward_without_retain_graph_on_fresh_call(mode):
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    r = CUBE_SUM[mode](x)
    r.backward()
    with pytest.raises(RuntimeError, match=re.escape(SECOND_MSG)):
        r.backward()


@pytest.mark.parametrize("mode", MODES)
def test_create_graph_second_derivative(mode):
    data = [1.0, 2.0, 3.0]
    x = ng.tensor(data, requires_grad=True)
    (g,) = ng.autograd.grad(CUBE_SUM[mode](x), x, create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    tx = torch.tensor(data, requires_grad=True)
    (tg,) = torch.autograd.grad(_cube_sum(tx), tx, create_graph=True)
    tg.sum().backward()
    assert_close(g, tg.detach())
    assert_close(x.grad, tx.grad)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("mode", MODES)
def test_create_graph_backward_two_inputs_float64(mode):
    xd = np.array([[0.3, -1.2, 0.7], [1.1, 0.2, -0.4]])
    wd = np.array([[1.5, -0.5, 2.0], [0.1, 0.9, -1.3]])
    x, w = ng.tensor(xd, requires_grad=True), ng.tensor(wd, requires_grad=True)
    tx, tw = torch.tensor(xd, requires_grad=True), torch.tensor(wd, requires_grad=True)
    out = TANH_MUL[mode](x, w)
    out.backward(create_graph=True)
    _tanh_mul(tx, tw).backward(create_graph=True)
    assert_close(x.grad, tx.grad.detach())
    assert_close(w.grad, tw.grad.detach())
    gx, gw = x.grad, w.grad
    assert gx.requires_grad and gw.requires_grad
    x.grad = None
    w.grad = None
    tgx = tx.grad
    tx.grad = None
    tw.grad = None
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


# ----------------------------------------------------------------------------- 5. hooks
HOOK_CALLS: list = []


def _record_and_triple(g):
    HOOK_CALLS.append(to_numpy(g))
    return g * 3


def _hooked_intermediate(x):
    y = x * 2
    y.register_hook(_record_and_triple)
    return (y * y).sum()


def _double(g):
    return g * 2


def _hook_on_input(v):
    v.register_hook(_double)
    return v * 1


def _observe(g):
    HOOK_CALLS.append(to_numpy(g))


def _observing_hook(x):
    y = x.sin()
    y.register_hook(_observe)  # returns None: the gradient is kept
    return (y * x).sum()


HOOKED = wrap(_hooked_intermediate)
HOOK_ON_INPUT = wrap(_hook_on_input)
OBSERVING = wrap(_observing_hook)


def _torch_hooked_grads(data, n):
    """x.grad and the hook's gradients of ``n`` calls+backwards of the hooked fn in torch."""
    seen = []

    def hook(g):
        seen.append(to_numpy(g))
        return g * 3

    grads = []
    for _ in range(n):
        tx = torch.tensor(data, requires_grad=True)
        y = tx * 2
        y.register_hook(hook)
        (y * y).sum().backward()
        grads.append(tx.grad)
    return grads, seen


@pytest.mark.parametrize("mode", MODES)
def test_hook_inside_fn_runs_at_every_backward(mode):
    data = [[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]]
    HOOK_CALLS.clear()
    fn = HOOKED[mode]
    grads = []
    for _ in range(3):
        x = ng.tensor(data, requires_grad=True)
        out = fn(x)
        assert len(HOOK_CALLS) == len(grads), "hook ran before backward"
        out.backward()
        grads.append(x.grad)
    assert len(HOOK_CALLS) == 3
    tgrads, tseen = _torch_hooked_grads(data, 3)
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg)  # the hook's return value replaced the gradient
    for a, b in zip(HOOK_CALLS, tseen):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    if mode != "eager":
        assert fn.stats.traces == 1  # later calls reused the plan, and still ran the hook


@pytest.mark.parametrize("mode", MODES)
def test_hook_inside_fn_runs_at_each_retained_backward(mode):
    data = [[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]]
    HOOK_CALLS.clear()
    x = ng.tensor(data, requires_grad=True)
    out = HOOKED[mode](x)
    out.backward(retain_graph=True)
    out.backward()
    assert len(HOOK_CALLS) == 2
    tx = torch.tensor(data, requires_grad=True)
    y = tx * 2
    y.register_hook(lambda g: g * 3)
    tout = (y * y).sum()
    tout.backward(retain_graph=True)
    tout.backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("mode", MODES)
def test_hook_returning_none_keeps_gradient(mode):
    data = [[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]]
    HOOK_CALLS.clear()
    x = ng.tensor(data, requires_grad=True)
    OBSERVING[mode](x).backward()
    tx = torch.tensor(data, requires_grad=True)
    ty = tx.sin()
    seen = []
    ty.register_hook(lambda g: seen.append(to_numpy(g)))
    (ty * tx).sum().backward()
    assert len(HOOK_CALLS) == 1
    np.testing.assert_allclose(HOOK_CALLS[0], seen[0], rtol=1e-6)
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("mode", MODES)
def test_hook_on_input_registered_inside_fn(mode):
    fn = HOOK_ON_INPUT[mode]
    v = ng.tensor([0.0, 0.0, 0.0], requires_grad=True)
    out = fn(v)
    out.backward(ng.tensor([1.0, 2.0, 3.0]))
    tv = torch.tensor([0.0, 0.0, 0.0], requires_grad=True)
    tout = _hook_on_input(tv)
    tout.backward(torch.tensor([1.0, 2.0, 3.0]))
    assert_close(v.grad, tv.grad)
    np.testing.assert_array_equal(to_numpy(v.grad), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("mode", MODES)
def test_hook_on_input_registers_once_per_call(mode):
    fn = HOOK_ON_INPUT[mode]
    v = ng.tensor([1.0, 1.0, 1.0], requires_grad=True)
    fn(v)
    out = fn(v)  # second call: two hooks on v now, as in eager mode
    out.backward(ng.tensor([1.0, 2.0, 3.0]))
    tv = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
    _hook_on_input(tv)
    _hook_on_input(tv).backward(torch.tensor([1.0, 2.0, 3.0]))
    assert_close(v.grad, tv.grad)
    np.testing.assert_array_equal(to_numpy(tv.grad), [4.0, 8.0, 12.0])


def _hook_on_no_grad_input(x):
    x.register_hook(_double)
    return x * 2


HOOK_NO_GRAD = wrap(_hook_on_no_grad_input)


def test_register_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError) as want:
        torch.tensor([1.0, 2.0, 3.0]).register_hook(lambda g: g)
    with pytest.raises(RuntimeError) as got:
        ng.tensor([1.0, 2.0, 3.0]).register_hook(lambda g: g)
    assert str(got.value) == str(want.value) == HOOK_MSG


@pytest.mark.parametrize("mode", MODES)
def test_register_hook_inside_fn_on_tensor_without_grad_raises(mode):
    x = ng.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        HOOK_NO_GRAD[mode](x)

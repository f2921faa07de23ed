"""Errors raised through ``ng.jit``: tracing errors name the user's line, bad inputs raise
what eager mode raises, and a failed call changes nothing."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import W_DATA, X_DATA, assert_close, pair, to_numpy  # noqa: E402

HERE = os.path.basename(__file__)


def line_of(marker: str) -> int:
    """The line number in this file of the line that carries ``# <marker>``."""
    with open(__file__, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# <{marker}>"):
                return i
    raise AssertionError(marker)


# ----------------------------------------------------------------------------- conversions
CONVERSIONS = {
    "int()": lambda x: x * int(x.sum()),
    ".tolist()": lambda x: ng.tensor(x.tolist()),
    ".numpy()": lambda x: ng.tensor(np.tanh(x.detach().numpy())),
    "ng.tensor()": lambda x: ng.tensor(x) * 2,
    "formatted as a number": lambda x: print(f"{x.sum():.3f}") or x,
    "used as a Python index": lambda x: x[[0, 1, 2][x.sum().long()]],
}


@pytest.mark.parametrize("call", list(CONVERSIONS))
def test_each_conversion_of_a_traced_tensor_names_itself_and_the_ways_out(call):
    x = ng.zeros(3)
    CONVERSIONS[call](x)  # fine eagerly
    with pytest.raises(ng.TracingError) as err:
        ng.jit(CONVERSIONS[call], backend="numpy")(x)
    msg = str(err.value)
    assert call in msg and HERE in msg, msg
    assert "control flow" not in msg and "ng.where" not in msg
    assert "Ways out" in msg


# ----------------------------------------------------------------------------- control flow
def _branch(x):
    y = x * 2
    if y.sum() > 0:  # <branch>
        return y
    return -y


def _to_float(x):
    s = float(x.sum())  # <float>
    return x * s


def _item(x):
    return x * x.mean().item()  # <item>


def _while(x):
    while (x * x).sum() < 100.0:  # <while>
        x = x * 2
    return x


CONTROL_FLOW = {"branch": _branch, "float": _to_float, "item": _item, "while": _while}


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
@pytest.mark.parametrize("case", list(CONTROL_FLOW))
def test_tensor_dependent_control_flow_raises_tracing_error(case, backend):
    fn = CONTROL_FLOW[case]
    cf = ng.jit(fn, backend=backend)
    x, tx = pair(X_DATA)
    fn(x)  # fine eagerly
    with pytest.raises(ng.TracingError) as err:
        cf(x)
    assert isinstance(err.value, RuntimeError)
    msg = str(err.value)
    assert f"{HERE}:{line_of(case)}" in msg, msg
    # an `if` or `while` is control flow (ng.where is the fix); float() and .item() are
    # conversions, named as such with their own ways out
    if case in ("branch", "while"):
        assert "control flow" in msg and "ng.where" in msg
    else:
        assert msg.startswith(f"{'float()' if case == 'float' else '.item()'} of a traced tensor")
        assert "ng.where" not in msg and "control flow" not in msg
        assert "static_argnums" in msg and "return the tensor" in msg
    assert x.grad is None
    np.testing.assert_array_equal(to_numpy(x), X_DATA)
    assert ng.is_grad_enabled()
    # nothing was cached for the failing signature: it fails again, the same way
    with pytest.raises(ng.TracingError, match=re.escape(f"{HERE}:{line_of(case)}")):
        cf(x)


def _where_version(x):
    y = x * 2
    return ng.where(y.sum() > 0, y, -y)


def test_where_is_the_traceable_spelling():
    cf = ng.jit(_where_version, backend="numpy")
    for data in (X_DATA, -X_DATA):
        x, tx = pair(data)
        out = cf(x)
        tout = _branch(tx)
        assert_close(out, tout.detach())
        out.backward(ng.ones(2, 3))
        tout.backward(torch.ones(2, 3))
        assert_close(x.grad, tx.grad)
    assert cf.stats.traces == 1


def test_tracing_error_inside_no_grad_region_restores_grad_mode():
    def f(x):
        with ng.no_grad():
            return x * float(x.sum())  # <nograd-float>

    with pytest.raises(ng.TracingError, match=re.escape(f"{HERE}:{line_of('nograd-float')}")):
        ng.jit(f, backend="numpy")(ng.ones(2, 3, requires_grad=True))
    assert ng.is_grad_enabled()


def test_boolean_mask_indexing_is_a_clear_error():
    def f(x):
        return x[x > 0].sum()  # <mask>

    x, tx = pair(X_DATA)
    f(x).backward()  # fine eagerly
    with pytest.raises(RuntimeError) as err:  # the call itself runs eagerly (a graph break)
        ng.jit(f, backend="numpy").trace(ng.tensor(X_DATA, requires_grad=True))
    msg = str(err.value)
    assert isinstance(err.value, ng.TracingError)
    assert f"{HERE}:{line_of('mask')}" in msg and "ng.where" in msg


def test_returning_a_non_tensor_is_a_clear_error():
    def f(x):
        return x.sum(), 3

    with pytest.raises(ng.TracingError, match="must return tensors"):
        ng.jit(f, backend="numpy")(ng.ones(2, 3))


LEAKED = []


def test_leaked_traced_tensor_is_a_clear_error():
    def leak(x):
        y = x * 2
        LEAKED.append(y)
        return y

    def use(x):
        return x + LEAKED[0]  # <leak>

    LEAKED.clear()
    ng.jit(leak, backend="numpy")(ng.ones(2, 3))
    with pytest.raises(ng.TracingError) as err:
        ng.jit(use, backend="numpy")(ng.ones(2, 3))
    assert f"{HERE}:{line_of('leak')}" in str(err.value)


def test_jit_of_a_non_callable_is_a_type_error():
    with pytest.raises(TypeError):
        ng.jit(3)


# ----------------------------------------------------------------------------- bad inputs
def _f(x, w):
    return (x.sigmoid() * w).sum()


def _add(x, y):
    return (x + y).sum()


def _mm(x, y):
    return (x @ y).sum()


F = {"numpy": ng.jit(_f, backend="numpy"), "cpu": ng.jit(_f)}
ADD = {"numpy": ng.jit(_add, backend="numpy"), "cpu": ng.jit(_add)}
MM = {"numpy": ng.jit(_mm, backend="numpy"), "cpu": ng.jit(_mm)}


def _same_error(eager_fn, compiled_fn, *args):
    with pytest.raises(Exception) as eager:
        eager_fn(*args)
    with pytest.raises(Exception) as got:
        compiled_fn(*args)
    assert type(got.value) is type(eager.value)
    assert str(got.value) == str(eager.value)
    return got.value


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
@pytest.mark.parametrize("bad", [None, [1.0, 2.0], "abc"], ids=["None", "list", "str"])
def test_non_tensor_argument_raises_like_eager(backend, bad):
    w, _ = pair(W_DATA)
    _same_error(_f, F[backend], bad, w)
    assert w.grad is None


def test_non_tensor_to_an_op_raises_like_eager():
    def f(x, y):
        return ng.exp(y) * x

    x, _ = pair(X_DATA)
    err = _same_error(f, ng.jit(f, backend="numpy"), x, [1.0, 2.0, 3.0])
    assert isinstance(err, TypeError)


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_broadcast_mismatch_inside_jit(backend):
    x, tx = pair(X_DATA)
    y, ty = pair(np.ones((2, 4), np.float32))
    with pytest.raises(RuntimeError) as want:
        _add(tx, ty)
    err = _same_error(_add, ADD[backend], x, y)
    assert isinstance(err, RuntimeError)
    assert str(err) == str(want.value) == (
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
        "dimension 1")
    assert x.grad is None and y.grad is None


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_matmul_shape_mismatch_inside_jit(backend):
    x, tx = pair(X_DATA)
    y, ty = pair(W_DATA)
    with pytest.raises(RuntimeError) as want:
        _mm(tx, ty)
    err = _same_error(_mm, MM[backend], x, y)
    assert isinstance(err, RuntimeError)
    assert str(err) == str(want.value) == "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"


def _mutate_then_fail(x, y):
    x.mul_(10.0)
    return (x + y).sum()


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_failed_call_leaves_inputs_and_grads_untouched(backend):
    cf = ng.jit(_mutate_then_fail, backend=backend)
    x, _ = pair(X_DATA, requires_grad=False)
    w, _ = pair(W_DATA)
    (w * 2).sum().backward()
    grad_before = to_numpy(w.grad)
    y = ng.ones(2, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="must match the size"):
        cf(x, y)
    np.testing.assert_array_equal(to_numpy(x), X_DATA)
    assert x._version == 0
    assert y.grad is None
    np.testing.assert_array_equal(to_numpy(w.grad), grad_before)
    # the function still works for a good signature afterwards
    good = ng.ones(2, 3)
    out = cf(x, good)
    np.testing.assert_allclose(to_numpy(x), X_DATA * 10)
    np.testing.assert_allclose(to_numpy(out), (X_DATA * 10 + 1).sum(), rtol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_backward_gradient_shape_mismatch(backend):
    def sq(x):
        return x * x

    x, tx = pair(X_DATA)
    y = ng.jit(sq, backend=backend)(x)
    with pytest.raises(RuntimeError, match=re.escape("Mismatch in shape")):
        sq(tx).backward(torch.ones(3))
    with pytest.raises(RuntimeError) as eager:
        sq(ng.tensor(X_DATA, requires_grad=True)).backward(ng.ones(3))
    with pytest.raises(RuntimeError) as got:
        y.backward(ng.ones(3))
    # torch spells shapes torch.Size([...]); the contract spells them as tuples
    assert str(got.value) == str(eager.value) == (
        "Mismatch in shape: grad_output[0] has a shape of (3,) and output[0] has a shape of "
        "(2, 3).")
    assert x.grad is None
    y.backward(ng.ones(2, 3))  # the graph is intact after the rejected gradient
    sq(tx).backward(torch.ones(2, 3))
    assert_close(x.grad, tx.grad)


def test_int_tensor_input_cannot_require_grad_and_flows_as_data():
    def f(x, idx):
        return (x * idx).sum()

    cf = ng.jit(f, backend="numpy")
    x, tx = pair(X_DATA)
    idx = ng.tensor([[1, 2, 3], [4, 5, 6]])
    out = cf(x, idx)
    tout = f(tx, torch.tensor([[1, 2, 3], [4, 5, 6]]))
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)


def test_the_quoted_line_leaves_out_its_trailing_comment():
    with pytest.raises(ng.TracingError) as err:
        ng.jit(_branch, backend="numpy")(ng.ones(2))
    assert "`if y.sum() > 0:`" in str(err.value)  # the line ends with a `# <branch>` marker

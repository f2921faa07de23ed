"""The cases of the seed article "5 gradient/derivative related PyTorch functions".

detach(), no_grad(), clone(), backward(), register_hook(): each case runs in numgrad and in
torch, and values and error messages are compared with torch's.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close, to_numpy  # noqa: E402

INPLACE_MSG = ("one of the variables needed for gradient computation has been modified by an "
               "inplace operation")
NO_GRAD_FN_MSG = "element 0 of tensors does not require grad and does not have a grad_fn"
SCALAR_MSG = "grad can be implicitly created only for scalar outputs"
HOOK_MSG = "cannot register a hook on a tensor that doesn't require gradient"


# ----------------------------------------------------------------------------- 1. detach
def _detach_case(m, use_detach):
    x = m.ones(10, requires_grad=True)
    y = x ** 2
    z = (x.detach() if use_detach else x) ** 3
    r = (y + z).sum()
    r.backward()
    return x, z


@pytest.mark.parametrize("use_detach,expected", [(False, 5.0), (True, 2.0)])
def test_detach_changes_gradient(use_detach, expected):
    x, z = _detach_case(ng, use_detach)
    tx, tz = _detach_case(torch, use_detach)
    assert_close(x.grad, tx.grad)
    np.testing.assert_array_equal(to_numpy(x.grad), np.full(10, expected, dtype=np.float32))
    assert z.requires_grad is (not use_detach)
    assert (z.grad_fn is None) is use_detach


def test_detach_shares_storage_and_leaves_graph():
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    d[0] = 10.0
    assert x[0].item() == 10.0


def _sigmoid_detach_zero(m):
    a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.sigmoid()
    c = b.detach()
    c.zero_()
    return a, b, c


def test_inplace_on_detached_alias_is_detected():
    a, b, c = _sigmoid_detach_zero(ng)
    ta, tb, tc = _sigmoid_detach_zero(torch)
    # the alias shares storage and the version counter
    assert_close(b.detach(), tb.detach())
    np.testing.assert_array_equal(to_numpy(b.detach()), [0.0, 0.0, 0.0])
    assert b._version == tb._version == 1
    assert c._version == tc._version == 1
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_MSG)) as ng_err:
        b.sum().backward()
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_MSG)):
        tb.sum().backward()
    text = str(ng_err.value)
    assert "output 0 of Sigmoid" in text
    assert "is at version 1; expected version 0 instead" in text
    assert a.grad is None


def test_inplace_on_clone_detach_is_safe():
    def run(m):
        a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a.sigmoid()
        c = b.clone().detach()
        c.zero_()
        b.sum().backward()
        return a, b, c

    a, b, c = run(ng)
    ta, tb, tc = run(torch)
    assert b._version == 0
    assert_close(a.grad, ta.grad)
    s = 1 / (1 + np.exp(-np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(to_numpy(a.grad), s * (1 - s), rtol=1e-6)
    assert_close(c, tc)


def test_inplace_on_detached_alias_not_saved_is_fine():
    """The forum version of the case: pow saves its input, not its output, so no error."""
    def run(m):
        a = m.arange(5.0, requires_grad=True)
        b = a ** 2
        c = b.detach()
        c.zero_()
        b.sum().backward()
        return a

    a, ta = run(ng), run(torch)
    assert_close(a.grad, ta.grad)
    np.testing.assert_array_equal(to_numpy(a.grad), 2 * np.arange(5.0, dtype=np.float32))


# ----------------------------------------------------------------------------- 2. no_grad
def test_no_grad_result_has_no_grad_and_backward_raises():
    x = ng.ones(10, requires_grad=True)
    tx = torch.ones(10, requires_grad=True)
    with ng.no_grad():
        y = x ** 2
        z = x ** 3
        r = (y + z).sum()
    with torch.no_grad():
        tr = ((tx ** 2) + (tx ** 3)).sum()
    assert r.requires_grad is tr.requires_grad is False
    assert r.grad_fn is None
    assert_close(r, tr)
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        r.backward()
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        tr.backward()
    assert x.grad is None


# ----------------------------------------------------------------------------- 3. clone
def _clone_case(m):
    x = m.ones(10, requires_grad=True)
    x_clone = x.clone()
    y = x_clone ** 2
    z = x_clone ** 3
    r = (y + z).sum()
    r.backward()
    return x, x_clone


def test_clone_gradients_flow_to_original():
    x, xc = _clone_case(ng)
    tx, txc = _clone_case(torch)
    assert_close(x.grad, tx.grad)
    np.testing.assert_array_equal(to_numpy(x.grad), np.full(10, 5.0, dtype=np.float32))
    assert xc.grad_fn.name() == type(txc.grad_fn).__name__ == "CloneBackward0"
    assert xc.is_leaf is False and xc.requires_grad is True


def test_clone_grad_is_none_with_warning():
    x, xc = _clone_case(ng)
    with pytest.warns(UserWarning, match=re.escape("retain_grad()")):
        g = xc.grad
    assert g is None


def test_clone_copies_data():
    x = ng.tensor([1.0, 2.0, 3.0])
    c = x.clone()
    c.add_(1.0)
    np.testing.assert_array_equal(to_numpy(x), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(to_numpy(c), [2.0, 3.0, 4.0])
    assert x._version == 0


def test_clone_detach_is_independent_leaf():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone().detach()
    assert c.requires_grad is False and c.is_leaf and c.grad_fn is None
    c.mul_(5.0)
    np.testing.assert_array_equal(to_numpy(x.detach()), [1.0, 2.0])
    assert x._version == 0


# ----------------------------------------------------------------------------- 4. backward
def test_backward_computes_leaf_gradient():
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        r = (x ** 2 + x ** 3).sum()
        r.backward()
        return x

    x, tx = run(ng), run(torch)
    assert_close(x.grad, tx.grad)


def test_backward_on_non_scalar_without_gradient_raises():
    x = ng.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=re.escape(SCALAR_MSG)):
        y.backward()
    with pytest.raises(RuntimeError, match=re.escape(SCALAR_MSG)):
        (torch.ones(3, requires_grad=True) * 2).backward()
    assert x.grad is None


def test_backward_on_non_scalar_with_gradient():
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x ** 2
        y.backward(m.tensor([1.0, 0.5, -1.0]))
        return x

    assert_close(run(ng).grad, run(torch).grad)


def test_backward_when_leaf_does_not_require_grad_raises():
    x = ng.ones(10)
    r = (x ** 2 + x ** 3).sum()
    assert r.requires_grad is False
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        r.backward()
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        (torch.ones(10) ** 2).sum().backward()
    assert x.grad is None


def test_backward_accumulates():
    def run(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        (x ** 2).sum().backward()
        (x ** 3).sum().backward()
        return x

    assert_close(run(ng).grad, run(torch).grad)


# ----------------------------------------------------------------------------- 5. register_hook
def test_register_hook_doubles_gradient_then_remove():
    def run(m):
        v = m.tensor([0.0, 0.0, 0.0], requires_grad=True)
        h = v.register_hook(lambda grad: grad * 2)
        v.backward(m.tensor([1.0, 2.0, 3.0]))
        first = v.grad.clone()
        h.remove()
        v.grad = None
        v.backward(m.tensor([1.0, 2.0, 3.0]))
        return first, v.grad

    first, second = run(ng)
    tfirst, tsecond = run(torch)
    assert_close(first, tfirst)
    np.testing.assert_array_equal(to_numpy(first), [2.0, 4.0, 6.0])
    assert_close(second, tsecond)
    np.testing.assert_array_equal(to_numpy(second), [1.0, 2.0, 3.0])


def test_register_hook_on_tensor_without_grad_raises():
    v = ng.tensor([0.0, 0.0, 0.0])
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        v.register_hook(lambda grad: grad * 2)
    with pytest.raises(RuntimeError, match=re.escape(HOOK_MSG)):
        torch.tensor([0.0]).register_hook(lambda grad: grad)


def test_no_warning_reading_leaf_grad():
    x, _ = _clone_case(ng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None

"""Clear errors with PyTorch's messages, and failed calls that leave their inputs untouched."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import to_numpy  # noqa: E402


def _raises_like_torch(fn, exc, prefix):
    """fn(lib) raises ``exc`` with ``prefix`` in numgrad and in torch."""
    with pytest.raises(exc, match=re.escape(prefix)):
        fn(torch)
    with pytest.raises(exc, match=re.escape(prefix)):
        fn(ng)


# ----------------------------------------------------------------------------- broadcasting
BROADCAST_OPS = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "where": lambda m, a, b: m.where(a > 0, a, b),
    "lt": lambda m, a, b: a < b,
}


@pytest.mark.parametrize("op", list(BROADCAST_OPS))
def test_shapes_that_do_not_broadcast(op):
    f = BROADCAST_OPS[op]
    msg = ("The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
           "dimension 1")
    _raises_like_torch(lambda m: f(m, m.ones(2, 3), m.ones(2, 4)), RuntimeError, msg)


def test_broadcast_error_names_dimension_0():
    msg = ("The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
           "dimension 0")
    _raises_like_torch(lambda m: m.ones(2) + m.ones(3), RuntimeError, msg)


def test_broadcast_error_with_different_ranks():
    msg = ("The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
           "dimension 2")
    _raises_like_torch(lambda m: m.ones(4, 1, 3) * m.ones(2), RuntimeError, msg)


# ----------------------------------------------------------------------------- matmul
def test_matmul_mismatch():
    _raises_like_torch(lambda m: m.ones(2, 3) @ m.ones(2, 3), RuntimeError,
                       "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)")


def test_matmul_mismatch_function_form():
    _raises_like_torch(lambda m: m.matmul(m.ones(4, 5), m.ones(4, 2)), RuntimeError,
                       "mat1 and mat2 shapes cannot be multiplied (4x5 and 4x2)")


def test_matmul_mismatch_other_ranks_is_runtime_error():
    for a, b in [((3,), (4,)), ((2, 3), (4,)), ((2, 2, 3), (2, 4, 2))]:
        with pytest.raises(RuntimeError):
            torch.ones(*a) @ torch.ones(*b)
        with pytest.raises(RuntimeError):
            ng.ones(*a) @ ng.ones(*b)


def test_linear_mismatch():
    _raises_like_torch(lambda m: m.nn.functional.linear(m.ones(2, 3), m.ones(4, 2)),
                       RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x4)")


# ----------------------------------------------------------------------------- type errors
@pytest.mark.parametrize("case", ["exp_list", "sum_list", "cat_int", "matmul_list", "where_list"])
def test_non_tensor_argument_is_type_error_naming_type(case):
    fn, typename = {
        "exp_list": (lambda m: m.exp([1.0, 2.0]), "list"),
        "sum_list": (lambda m: m.sum([1.0, 2.0]), "list"),
        "cat_int": (lambda m: m.cat([m.ones(2), 1]), "int"),
        "matmul_list": (lambda m: m.matmul(m.ones(2), [1.0, 2.0]), "list"),
        "where_list": (lambda m: m.where([True, False], m.ones(2), m.ones(2)), "list"),
    }[case]
    with pytest.raises(TypeError, match=typename):
        fn(torch)
    with pytest.raises(TypeError, match=typename):
        fn(ng)


def test_unsupported_operand_type_error():
    with pytest.raises(TypeError, match="str"):
        ng.ones(2) + "a"
    with pytest.raises(TypeError, match="str"):
        torch.ones(2) + "a"


def test_cat_of_non_sequence_is_type_error():
    with pytest.raises(TypeError):
        torch.cat(torch.ones(2), 0)
    with pytest.raises(TypeError):
        ng.cat(ng.ones(2), 0)


# ----------------------------------------------------------------------------- requires_grad
def test_requires_grad_on_int_tensor():
    msg = "only Tensors of floating point dtype can require gradients"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ng.tensor([1, 2, 3], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ng.zeros(2, dtype=ng.int64, requires_grad=True)
    t = ng.tensor([1, 2])
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        t.requires_grad_(True)
    assert t.requires_grad is False


# ----------------------------------------------------------------------------- other shapes
def test_view_of_bad_size():
    _raises_like_torch(lambda m: m.ones(2, 3).view(4), RuntimeError,
                       "shape '[4]' is invalid for input of size 6")
    _raises_like_torch(lambda m: m.ones(2, 3).reshape(5, -1), RuntimeError,
                       "shape '[5, -1]' is invalid for input of size 6")


def test_cat_shape_mismatch_is_runtime_error():
    with pytest.raises(RuntimeError):
        torch.cat([torch.ones(2, 3), torch.ones(2, 4)], dim=0)
    with pytest.raises(RuntimeError):
        ng.cat([ng.ones(2, 3), ng.ones(2, 4)], dim=0)


def test_stack_shape_mismatch_is_runtime_error():
    _raises_like_torch(lambda m: m.stack([m.ones(2), m.ones(3)]), RuntimeError,
                       "stack expects each tensor to be equal size")


def test_index_out_of_range():
    _raises_like_torch(lambda m: m.ones(3)[5], IndexError,
                       "index 5 is out of bounds for dimension 0 with size 3")


def test_bad_dim():
    _raises_like_torch(lambda m: m.ones(2, 3).sum(dim=2), IndexError,
                       "Dimension out of range (expected to be in range of [-2, 1], but got 2)")


def test_expand_bad_size():
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).expand(4, 3)
    with pytest.raises(RuntimeError):
        ng.ones(2, 3).expand(4, 3)


# ----------------------------------------------------------------------------- failed ops
def _snapshot(t):
    return to_numpy(t), t._version, (None if t.grad is None else to_numpy(t.grad))


def _assert_same(t, snap):
    data, version, grad = snap
    np.testing.assert_array_equal(to_numpy(t), data)
    assert t._version == version
    if grad is None:
        assert t.grad is None
    else:
        np.testing.assert_array_equal(to_numpy(t.grad), grad)


def test_failed_out_of_place_op_leaves_inputs_untouched():
    a = ng.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    (a * 2).sum().backward()  # give it a .grad
    b = ng.ones(2, 4, requires_grad=True)
    sa, sb = _snapshot(a), _snapshot(b)
    with pytest.raises(RuntimeError):
        a + b
    with pytest.raises(RuntimeError):
        a @ a
    with pytest.raises(RuntimeError):
        ng.cat([a, b], dim=0)
    _assert_same(a, sa)
    _assert_same(b, sb)


def test_failed_inplace_broadcast_leaves_input_untouched():
    a = ng.tensor([1.0, 2.0, 3.0])
    sa = _snapshot(a)
    with pytest.raises(RuntimeError, match=re.escape(
            "output with shape [3] doesn't match the broadcast shape [2, 3]")):
        a.add_(ng.ones(2, 3))
    _assert_same(a, sa)
    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
            "dimension 0")):
        a.mul_(ng.ones(4))
    _assert_same(a, sa)


def test_failed_inplace_on_leaf_leaves_input_untouched():
    a = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    sa = _snapshot(a)
    for f in (lambda t: t.add_(1.0), lambda t: t.zero_(), lambda t: t.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match=re.escape(
                "a leaf Variable that requires grad is being used in an in-place operation.")):
            f(a)
        _assert_same(a, sa)


def test_failed_backward_leaves_grads_untouched():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    (a * 3).sum().backward()
    sa = _snapshot(a)
    y = a * a
    with pytest.raises(RuntimeError,
                       match=re.escape("grad can be implicitly created only for scalar outputs")):
        y.backward()
    _assert_same(a, sa)
    with pytest.raises(RuntimeError, match=re.escape("Mismatch in shape")):
        y.backward(ng.ones(3))
    _assert_same(a, sa)


def test_failed_version_check_leaves_grads_untouched():
    a = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.sigmoid()
    b.detach().zero_()
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation")):
        b.sum().backward()
    assert a.grad is None


def test_inplace_float_into_int_tensor_raises():
    _raises_like_torch(lambda m: m.tensor([1, 2]).add_(0.5), RuntimeError,
                       "result type Float can't be cast to the desired output type Long")


def test_inplace_result_dtype_keeps_self_dtype():
    a = ng.tensor([1.0, 2.0])
    a.add_(ng.tensor([1.0, 1.0], dtype=ng.float64))  # float64 into float32: allowed, stays f32
    assert a.dtype == ng.float32
    b = ng.tensor([1.0, 2.0], dtype=ng.float64)
    b.mul_(ng.tensor([2, 3]))
    assert b.dtype == ng.float64
    np.testing.assert_array_equal(to_numpy(b), [2.0, 6.0])


def test_view_of_non_contiguous_raises():
    """view() never copies: where no view exists torch refuses and points at reshape()."""
    _raises_like_torch(lambda m: m.arange(6.0).reshape(2, 3).T.view(-1), RuntimeError,
                       "view size is not compatible with input tensor's size and stride")
    # reshape() is the copying alternative and works
    got = ng.arange(6.0).reshape(2, 3).T.reshape(-1)
    np.testing.assert_array_equal(to_numpy(got), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0])


def test_int_to_negative_int_power_raises():
    _raises_like_torch(lambda m: m.tensor([2, 3]) ** -1, RuntimeError,
                       "Integers to negative integer powers are not allowed.")

"""Integer and bool operands, where NumPy's rules differ from PyTorch's; eager and
@ng.jit must agree with torch (dtype, values, errors). Found by a dtype fuzz of the
elementwise ops against torch.

- exp, log, sqrt, sin, cos, tanh, sigmoid of int64/bool compute in float32 (NumPy:
  float64, or float16 for bool);
- clamp of ints with float bounds is float32; x ** integer tensors; integer powers
  with negative exponents (NumPy refuses them);
- -bool and bool subtraction raise torch's RuntimeError."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

OPS = ["exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid"]
DATA = {"int64": [0, 1, 2, 7], "bool": [True, False, True, True]}
_JIT = {op: ng.jit(lambda x, op=op: getattr(ng, op)(x)) for op in OPS}


@pytest.mark.parametrize("kind", sorted(DATA))
@pytest.mark.parametrize("op", OPS)
def test_float_op_of_integer_tensor_matches_torch(op, kind):
    want = getattr(torch, op)(torch.tensor(DATA[kind]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) = -inf, as torch gives
        for got in (getattr(ng, op)(ng.tensor(DATA[kind])), _JIT[op](ng.tensor(DATA[kind]))):
            assert got.dtype == ng.float32
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_clamp_of_ints_with_float_bounds_is_float_as_in_torch():
    want = torch.clamp(torch.tensor([1, 2, 3]), 0.5, 2.5)
    for got in (ng.clamp(ng.tensor([1, 2, 3]), 0.5, 2.5),
                ng.jit(lambda x: ng.clamp(x, 0.5, 2.5))(ng.tensor([1, 2, 3]))):
        assert got.dtype == ng.float32
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    kept = ng.tensor([1, 2, 3]).clamp(0, 2)  # integer bounds keep the integer dtype
    assert kept.dtype == ng.int64 and kept.tolist() == [1, 2, 2]


def test_negating_a_bool_tensor_raises_torchs_error_eager_and_compiled():
    with pytest.raises(RuntimeError) as want:
        -torch.tensor([True, False])
    for call in (lambda x: -x, ng.jit(lambda x: -x)):
        with pytest.raises(RuntimeError) as got:
            call(ng.tensor([True, False]))
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("base,exp", [("float32", "bool"), ("float64", "bool"),
                                      ("float64", "int64"), ("float32", "int64")])
def test_float_to_the_power_of_an_integer_tensor_compiles_and_matches_torch(base, exp):
    """x ** (bool or int tensor): the cast exponent once made LLVM emit a powi libcall
    that Numba's JIT cannot resolve, and the compiled call segfaulted."""
    xs = np.array([0.5, -1.5, 2.0, 3.0], dtype=base)
    es = np.array([True, False, True, False]) if exp == "bool" else np.array([2, 3, -1, 0])
    want = torch.tensor(xs) ** torch.tensor(es)
    for got in (ng.tensor(xs) ** ng.tensor(es),
                ng.jit(lambda x, e: x ** e)(ng.tensor(xs), ng.tensor(es))):
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


SUB_CASES = [("f32", "b"), ("b", "i64"), ("b", "b"), ("i64", True), (True, "f32")]
_VAL = {"f32": ([0.5, -1.0, 2.0], "float32"), "i64": ([1, -2, 3], "int64"),
        "b": ([True, False, True], "bool")}


def _operand(lib, key):
    if not isinstance(key, str):
        return key
    data, dt = _VAL[key]
    return lib.tensor(data, dtype=getattr(lib, dt)) if lib is torch else \
        ng.tensor(np.array(data, dtype=dt))


@pytest.mark.parametrize("a,b", SUB_CASES)
def test_subtraction_with_a_bool_operand_raises_torchs_error(a, b):
    with pytest.raises(RuntimeError) as want:
        _operand(torch, a) - _operand(torch, b)
    with pytest.raises(RuntimeError) as got:
        _operand(ng, a) - _operand(ng, b)
    assert str(got.value) == str(want.value)
    if isinstance(a, str) and isinstance(b, str):
        with pytest.raises(RuntimeError) as got:
            ng.jit(lambda x, y: x - y)(_operand(ng, a), _operand(ng, b))
        assert str(got.value) == str(want.value)


def test_integer_powers_with_negative_exponents_follow_torch():
    xs = np.array([1, -1, -1, 2, 0, -3, 5, 7])
    es = np.array([-3, -2, -3, -1, -2, 2, 0, 1])
    want = (torch.tensor(xs) ** torch.tensor(es)).numpy()
    for got in (ng.tensor(xs) ** ng.tensor(es),
                ng.jit(lambda x, e: x ** e)(ng.tensor(xs), ng.tensor(es))):
        assert got.dtype == ng.int64
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("op", ["abs", "relu"])
def test_abs_and_relu_refuse_bool_as_torch_does(op):
    with pytest.raises((RuntimeError, NotImplementedError)) as want:
        getattr(torch, op)(torch.tensor([True, False]))
    for call in (getattr(ng, op), ng.jit(lambda x: getattr(ng, op)(x))):
        with pytest.raises(type(want.value)) as got:
            call(ng.tensor([True, False]))
        assert str(got.value) == str(want.value)


def test_sign_of_bool_is_the_bool_itself():
    want = torch.sign(torch.tensor([True, False]))
    for got in (ng.sign(ng.tensor([True, False])),
                ng.jit(lambda x: ng.sign(x))(ng.tensor([True, False]))):
        assert got.dtype == ng.bool and got.tolist() == want.tolist()

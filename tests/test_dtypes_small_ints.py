"""int8, int16 and uint8 end to end, against torch: names and legacy type strings, torch's
promotion table, creation and its checked conversions, integer ops with torch's wraparound,
printing, save/load, NumPy and DLPack interop, uint8 masks, ``@ng.jit`` (CPU kernels and the
CUDA simulator) agreeing with eager; and ``floor_divide`` / the in-place inverse
hyperbolics' errors."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import numgrad as ng

SMALL = ["uint8", "int8", "int16"]
ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]
# Values that overflow every small dtype once multiplied, with both signs and the extremes.
A = np.array([[1, -2, 3], [-128, 127, 77]], np.int64)
B = np.array([[2, 3, -1], [5, -7, 9]], np.int64)


def _name(d):
    return str(d).split(".")[-1]


def _pair(dt, data=A):
    """(numgrad, torch) tensors of ``data`` cast (wrapping) to ``dt``."""
    return ng.tensor(data).to(getattr(ng, dt)), torch.tensor(data).to(getattr(torch, dt))


def _same(got, want):
    assert isinstance(got, ng.Tensor), got
    assert _name(got.dtype) == _name(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ------------------------------------------------------------------------------ names
def test_names_aliases_and_legacy_type_strings():
    assert (ng.short, ng.int8, ng.uint8) == (ng.int16, ng.int8, ng.uint8)
    names = {"uint8": "torch.ByteTensor", "int8": "torch.CharTensor",
             "int16": "torch.ShortTensor"}
    for dt, legacy in names.items():
        x, tx = _pair(dt)
        assert x.type() == tx.type() == legacy
        _same(ng.tensor(A).type(legacy), torch.tensor(A).type(legacy))
        assert x.element_size() == tx.element_size() if hasattr(x, "element_size") else True
        assert not x.is_floating_point() and not x.dtype.is_floating_point
    for method in ("byte", "char", "short"):
        _same(getattr(ng.tensor(A), method)(), getattr(torch.tensor(A), method)())


@pytest.mark.parametrize("t1", ALL)
def test_promote_types_is_torchs_table(t1):
    for t2 in ALL:
        got = ng.promote_types(getattr(ng, t1), getattr(ng, t2))
        assert _name(got) == _name(torch.promote_types(getattr(torch, t1), getattr(torch, t2)))


RESULT_TYPE = [
    (("int8", 1), 1000), (("uint8", 1), -1), (("uint8", 1), 2.5), (("int16", 1), True),
    (("uint8", 1), ("int8", 0)), (("int8", 1), ("int64", 0)), (("uint8", 0), ("int8", 0)),
    (("bool", 1), ("uint8", 0)), (("int8", 1), ("float64", 0)), (("uint8", 1), ("int8", 1)),
]


@pytest.mark.parametrize("a, b", RESULT_TYPE)
def test_result_type_with_numbers_and_0d_tensors(a, b):
    def make(lib, spec):
        if not isinstance(spec, tuple):
            return spec
        dt, ndim = spec
        return lib.ones((2,) * ndim, dtype=getattr(lib, dt))
    want = torch.result_type(make(torch, a), make(torch, b))
    assert _name(ng.result_type(make(ng, a), make(ng, b))) == _name(want)
    _same(make(ng, a) + make(ng, b), make(torch, a) + make(torch, b))


# ------------------------------------------------------------------------------ creation
CREATE = {
    "zeros": lambda lib, d: lib.zeros(2, 3, dtype=d),
    "ones": lambda lib, d: lib.ones(2, dtype=d),
    "full": lambda lib, d: lib.full((2,), 7, dtype=d),
    "full -1": lambda lib, d: lib.full((2,), -1, dtype=d),
    "arange": lambda lib, d: lib.arange(5, dtype=d),
    "tensor": lambda lib, d: lib.tensor([[1, -1], [2, 100]], dtype=d),
    "tensor floats": lambda lib, d: lib.tensor([1.7, 0.2], dtype=d),
    "zeros_like": lambda lib, d: lib.zeros_like(lib.ones(3), dtype=d),
    "full_like": lambda lib, d: lib.full_like(lib.ones(3, dtype=d), 5),
    "new_ones": lambda lib, d: lib.ones(1, dtype=d).new_ones(2),
    "new_zeros": lambda lib, d: lib.ones(1).new_zeros(2, dtype=d),
    "randint": lambda lib, d: lib.randint(0, 1, (3,), dtype=d),
    "fill_": lambda lib, d: lib.zeros(2, dtype=d).fill_(-1),
}


@pytest.mark.parametrize("dt", SMALL)
@pytest.mark.parametrize("case", list(CREATE))
def test_creation_gives_the_dtype(case, dt):
    _same(CREATE[case](ng, getattr(ng, dt)), CREATE[case](torch, getattr(torch, dt)))


OVERFLOWS = {
    "tensor": lambda lib, d, v: lib.tensor([v], dtype=d),
    "full": lambda lib, d, v: lib.full((1,), v, dtype=d),
    "fill_": lambda lib, d, v: lib.zeros(1, dtype=d).fill_(v),
    "clamp": lambda lib, d, v: lib.zeros(1, dtype=d).clamp(v),
}


@pytest.mark.parametrize("case", list(OVERFLOWS))
@pytest.mark.parametrize("dt, value", [("int8", 128), ("int8", -129), ("uint8", 256),
                                       ("uint8", -256), ("int16", 40000), ("uint8", -255),
                                       ("uint8", -1.0), ("int8", -128.5), ("uint8", 255.5),
                                       ("int32", 2 ** 31)])
def test_checked_conversions_raise_torchs_error(case, dt, value):
    try:
        want = OVERFLOWS[case](torch, getattr(torch, dt), value)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            OVERFLOWS[case](ng, getattr(ng, dt), value)
    else:
        _same(OVERFLOWS[case](ng, getattr(ng, dt), value), want)


@pytest.mark.parametrize("dt", SMALL)
def test_integer_tensors_cannot_require_grad(dt):
    msg = "only Tensors of floating point dtype can require gradients"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ng.ones(2, dtype=getattr(ng, dt)).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        ng.tensor([1, 2], dtype=getattr(ng, dt), requires_grad=True)


# ------------------------------------------------------------------------------ ops
OPS = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "add 1000 (wraps)": lambda m, a, b: a + 1000, "rsub": lambda m, a, b: 5 - a,
    "mul float": lambda m, a, b: a * 2.5, "div": lambda m, a, b: a / b,
    "floor_divide": lambda m, a, b: a // b, "rfloordiv": lambda m, a, b: 7 // b,
    "remainder": lambda m, a, b: a % b, "and": lambda m, a, b: a & b,
    "or": lambda m, a, b: a | b, "xor": lambda m, a, b: a ^ b, "not": lambda m, a, b: ~a,
    "lshift": lambda m, a, b: a << b, "rshift": lambda m, a, b: a >> b,
    "lshift 3": lambda m, a, b: a << 3, "rlshift": lambda m, a, b: 1 << b,
    "right_shift": lambda m, a, b: m.bitwise_right_shift(a, 9),
    "shifts by -1": lambda m, a, b: m.stack([a >> -1, a << -1]),
    "lt": lambda m, a, b: a < b, "eq -1": lambda m, a, b: a == -1, "ge": lambda m, a, b: a >= 2,
    "sum": lambda m, a, b: a.sum(), "sum dim": lambda m, a, b: a.sum(0),
    "prod": lambda m, a, b: b.prod(1), "cumsum": lambda m, a, b: a.cumsum(1),
    "sum dtype": lambda m, a, b: m.sum(a * 3, dtype=a.dtype),
    "max": lambda m, a, b: a.max(), "min dim": lambda m, a, b: a.min(1)[0],
    "argmax": lambda m, a, b: a.argmax(), "abs": lambda m, a, b: a.abs(),
    "neg": lambda m, a, b: -a, "clamp": lambda m, a, b: a.clamp(-1, 2),
    "where": lambda m, a, b: m.where(a > 0, a, b), "maximum": lambda m, a, b: m.maximum(a, b),
    "pow": lambda m, a, b: a ** 2, "sign": lambda m, a, b: m.sign(a),
    "float": lambda m, a, b: a.float(), "long": lambda m, a, b: a.long(),
    "sin": lambda m, a, b: (m.sin(a) * 1000).long(),
    "sort": lambda m, a, b: m.sort(a, 1)[0], "cat": lambda m, a, b: m.cat([a, b]),
    "getitem": lambda m, a, b: a[1, 1:], "matmul": lambda m, a, b: a @ b.T,
    "masked_fill": lambda m, a, b: a.masked_fill(a > 0, 9), "add_": lambda m, a, b: a.add_(b),
    "setitem": lambda m, a, b: a.__setitem__(0, 5) or a, "with uint8": lambda m, a, b:
    a + m.tensor([1, 2, 200], dtype=m.uint8), "with bool": lambda m, a, b: a + (b > 0),
}


@pytest.mark.parametrize("dt", SMALL)
@pytest.mark.parametrize("op", list(OPS))
def test_op_matches_torch(op, dt):
    (a, ta), (b, tb) = _pair(dt, A), _pair(dt, B)
    _same(OPS[op](ng, a, b), OPS[op](torch, ta, tb))


ERRORS = {
    "mean": lambda m, a: a.mean(), "floor_divide by 0": lambda m, a: a // 0,
    "bitwise of floats": lambda m, a: a.float() & a, "shift of floats": lambda m, a: a << 1.5,
    "shift of bools": lambda m, a: (a > 0) >> (a > 0), "setitem uint8 mask": lambda m, a:
    a.__setitem__(m.tensor([1, 0, 1], dtype=m.uint8), 0),
}


@pytest.mark.parametrize("dt", SMALL)
@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case, dt):
    a, ta = _pair(dt, A[0])
    with pytest.raises(Exception) as want:
        ERRORS[case](torch, ta)
    with pytest.raises(want.type, match=re.escape(str(want.value).split(" (Triggered")[0])):
        ERRORS[case](ng, a)


def test_uint8_index_is_a_deprecated_mask():
    x, tx = ng.arange(4.0), torch.arange(4.0)
    m = [1, 0, 1, 0]
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        got = x[ng.tensor(m, dtype=ng.uint8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(got, tx[torch.tensor(m, dtype=torch.uint8)])
    _same(x[ng.tensor(3, dtype=ng.int8)], tx[torch.tensor(3, dtype=torch.int8)])
    for dt in ("int8", "int16"):  # torch takes no int8/int16 index tensors
        with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte"):
            x[ng.tensor([3, 0], dtype=getattr(ng, dt))]


@pytest.mark.parametrize("dt", SMALL)
def test_repr_has_torchs_dtype_suffix(dt):
    for data in (A, A[0, 0], A[:0]):
        x, tx = _pair(dt, data)
        assert repr(x) == repr(tx).replace("torch.", "numgrad.")


# ------------------------------------------------------------------------------ interop
def test_save_load_numpy_and_dlpack_keep_the_dtype(tmp_path):
    state = {dt: _pair(dt)[0] for dt in SMALL}
    ng.save(state, tmp_path / "s.ng")
    back = ng.load(tmp_path / "s.ng")
    for dt in SMALL:
        x, tx = _pair(dt)
        _same(back[dt], tx)
        arr = x.numpy()
        assert arr.dtype == np.dtype(dt)
        shared = ng.from_numpy(arr)
        shared.add_(1)  # shares memory, as torch.from_numpy does
        assert shared.dtype is getattr(ng, dt) and arr[0, 0] == x[0, 0].item()
        _same(ng.from_dlpack(tx), tx)
        np.testing.assert_array_equal(torch.from_dlpack(x).numpy(), x.numpy())


# ------------------------------------------------------------------------------ jit
def _wrapping(a, b):
    c = a * 100 + b  # wraps in every small dtype: the next ops must read the wrapped value
    return c, (c * 3).sum(), -a, (a & b) ^ 5, a < b, ng.where(a > 0, a, b), a.abs(), c // 3, \
        c.max(), ~a, a + 1000, a.clamp(-1, 50), (a << b) >> 1, a >> b


_wrapping_jit = ng.jit(_wrapping)


@pytest.mark.parametrize("dt", SMALL + ["int32"])  # (int32 values wrap in kernels too)
def test_jit_agrees_with_eager_including_wraparound(dt):
    big = 1 << 30 if dt == "int32" else 1  # past int32's range once multiplied by 100
    (a, ta), (b, tb) = _pair(dt, A.reshape(-1) * big), _pair(dt, B.reshape(-1))
    eager, jitted = _wrapping(a, b), _wrapping_jit(a, b)
    _same(eager[0], ta * 100 + tb)  # eager is torch's ...
    _same(eager[1], ((ta * 100 + tb) * 3).sum())
    for e, j in zip(eager, jitted):  # ... and the kernel eager's
        assert j.dtype is e.dtype
        np.testing.assert_array_equal(j.numpy(), e.numpy())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's NumPy scalars overflow
def test_cuda_simulator_kernels_wrap_as_eager():
    if not ng.cuda.is_available():
        pytest.skip("no CUDA device (nor simulator)")
    f = ng.jit(lambda a, b: ((a * 100 + b) * 3, (a * 100 + b).max(), a // b))
    for dt in ("uint8", "int8"):
        a, b = _pair(dt, A[1])[0], _pair(dt, B[1])[0]
        for e, j in zip((( a * 100 + b) * 3, (a * 100 + b).max(), a // b),
                        f(a.cuda(), b.cuda())):
            assert j.dtype is e.dtype
            np.testing.assert_array_equal(j.cpu().numpy(), e.numpy())


# ------------------------------------------------------------------------------ floor_divide
def test_floor_divide_of_floats_matches_torch_and_has_no_derivative():
    data = [[7.5, -7.5, 0.5, -0.5, 1.0, 0.0]]
    x, tx = ng.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    for d in (2.0, -2.0, 0.0):
        _same((x // d).detach(), (tx // d).detach())
    _same(ng.floor_divide(x, 0.25).detach(), torch.floor_divide(tx, 0.25).detach())
    y, ty = x // 2, tx // 2
    assert repr(y) == repr(ty).replace("torch", "numgrad")  # grad_fn=<NotImplemented>
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        _floor_sum(x).backward()
    z = ng.tensor([5.0, -7.0])
    z //= 2
    _same(z, torch.tensor([2.0, -4.0]))
    with pytest.raises(NotImplementedError, match="\"div_floor_cpu\" not implemented for 'Bool'"):
        ng.tensor([True]) // True


_floor_sum = ng.jit(lambda x: (x // 2).sum())


# ---------------------------------------------------------------- in-place inverse hyperbolics
@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh", "arcsinh"])
def test_inplace_inverse_hyperbolic_backward_raises_torchs_error(name):
    data = [0.25, 0.5] if name != "acosh" else [1.5, 2.0]
    x, tx = ng.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ty = x * 1, tx * 1
    getattr(y, name + "_")()
    getattr(ty, name + "_")()
    assert y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError) as want:
        ty.sum().backward()
    with pytest.raises(NotImplementedError, match=re.escape(str(want.value))):
        y.sum().backward()
    # A tensor outside the graph is written in place; the graph built on it differentiates.
    w, tw = ng.tensor(data), torch.tensor(data)
    getattr(w, name + "_")()
    getattr(tw, name + "_")()
    (w * x).sum().backward()
    (tw * tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def _atanh_inplace(x):
    y = x * 2
    y.atanh_()
    return y.sum()


_atanh_inplace_jit = ng.jit(_atanh_inplace)


def test_inplace_atanh_under_jit():
    x = ng.tensor([0.1, 0.2])
    np.testing.assert_allclose(_atanh_inplace_jit(x).item(), _atanh_inplace(x).item(),
                               rtol=1e-6)
    # The call works; its backward raises when it runs, as eager mode's.
    loss = _atanh_inplace_jit(x.requires_grad_())
    with pytest.raises(NotImplementedError,
                       match=re.escape("the derivative for 'inplace version of atanh' is not "
                                       "implemented.")):
        loss.backward()


def test_the_cuda_runtimes_dtype_list_is_numgrads():
    from numgrad.cuda import array as cuda_array
    import numgrad.dtypes as dtypes
    assert cuda_array.NAMES_TEXT == dtypes.NAMES_TEXT
    assert cuda_array._KINDS == {d.name for d in dtypes.ALL}


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int64"])
@pytest.mark.parametrize("op", ["remainder", "fmod", "floor_divide"])
def test_integer_division_by_zero_raises_as_torch(op, dtype):
    def run(lib):
        x = lib.tensor([5, 7], dtype=getattr(lib, dtype))
        y = lib.tensor([2, 0], dtype=getattr(lib, dtype))
        with pytest.raises(RuntimeError) as info:
            getattr(lib, op)(x, y)
        return str(info.value)
    assert run(ng) == run(torch)
    # a nonzero divisor still divides, with torch's values
    x, y = np.array([5, 7]), np.array([2, 3])
    got = getattr(ng, op)(ng.tensor(x, dtype=getattr(ng, dtype)),
                          ng.tensor(y, dtype=getattr(ng, dtype)))
    want = getattr(torch, op)(torch.tensor(x, dtype=getattr(torch, dtype)),
                              torch.tensor(y, dtype=getattr(torch, dtype)))
    assert got.tolist() == want.tolist()

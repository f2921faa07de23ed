"""PyTorch's top-level in-place functions (``torch.sin_(x)``) and the composites' in-place
methods (``x.floor_()``), against torch: the same values, written into the argument, which
is returned, with its version bumped; gradients through a non-leaf written in place; the
in-place shape methods (``x.unsqueeze_(0)``); factories writing into ``out=`` (a tutorial
shows ``torch.rand(2, 2, out=c)``)."""
import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.ops.inplace_functions import COMPOSITES, TORCH_NAMES

ARGS = {"clamp_": (-0.5, 0.5), "clip_": (-0.5, 0.5), "fill_": (3.0,)}
DATA = [0.25, 0.5, 0.75, 1.5]  # inside every domain (acosh: +1 below)


@pytest.mark.parametrize("name", [n for n in TORCH_NAMES if hasattr(ng.Tensor, n)])
def test_top_level_function_writes_its_argument_as_torch(name):
    data = np.array(DATA) + (1.0 if "acosh" in name or "arccosh" in name else 0.0)
    args = ARGS.get(name, ())
    x, tx = ng.tensor(data), torch.tensor(data)
    v = x._version
    out, tout = getattr(ng, name)(x, *args), getattr(torch, name)(tx, *args)
    assert out is x and (tout is tx)
    assert x._version > v or name == "detach_"
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", COMPOSITES)
def test_composite_inplace_method_values_and_gradient_as_torch(name):
    data = [1.5, -2.25, 4.0, 0.75] if name not in ("rsqrt",) else [1.5, 2.25, 4.0, 0.75]

    def run(lib):
        a = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        b = a * 2
        out = getattr(b, name + "_")()
        assert out is b
        (b * b).sum().backward()
        return b.detach().numpy(), a.grad.numpy()

    for got, want in zip(run(ng), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(ng.tensor([1.0], requires_grad=True), name + "_")()


@pytest.mark.parametrize("name,args", [("unsqueeze_", (0,)), ("squeeze_", ()), ("t_", ()),
                                       ("transpose_", (0, 1)), ("squeeze_", (0,))])
def test_shape_methods_change_the_tensor_itself_as_torch(name, args):
    def run(lib):
        a = lib.tensor([[1.0, 2.0, 3.0]], dtype=lib.float64, requires_grad=True)
        b = a * 1
        v = b._version
        assert getattr(b, name)(*args) is b
        assert b._version == v + 1
        w = lib.arange(b.numel(), dtype=lib.float64).reshape(tuple(b.shape))
        (b * w).sum().backward()
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            getattr(a, name)(*args)
        return tuple(b.shape), a.grad.numpy()

    (shape, grad), (tshape, tgrad) = run(ng), run(torch)
    assert shape == tshape
    np.testing.assert_array_equal(grad, tgrad)


def test_shape_method_under_jit_says_what_to_write():
    @ng.jit
    def f(x):
        x.unsqueeze_(0)
        return x.sum()

    with pytest.raises(ng.TracingError, match=r"x = x.unsqueeze\(...\)"):
        f(ng.ones(2))


@pytest.mark.parametrize("call", [
    lambda lib, out: lib.zeros(2, 2, out=out), lambda lib, out: lib.ones(4, out=out),
    lambda lib, out: lib.full((2, 2), 3, out=out), lambda lib, out: lib.arange(4, out=out),
    lambda lib, out: lib.eye(2, out=out)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_factories_fill_out_in_its_dtype_as_torch(call, dtype):
    def run(lib):
        out = lib.empty(0, dtype=getattr(lib, dtype))
        got = call(lib, out)
        assert got is out
        return out.dtype, out.numpy()

    (dt, got), (tdt, want) = run(ng), run(torch)
    assert str(dt).split(".")[-1] == str(tdt).split(".")[-1]
    np.testing.assert_array_equal(got, want)

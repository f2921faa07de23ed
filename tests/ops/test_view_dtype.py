"""Tensor.view(dtype), element_size, itemsize and nbytes, against torch."""
import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.errors import TracingError

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]


def _pair(make):
    """The same tensor built in numgrad and torch by ``make(module)``."""
    return make(ng), make(torch)


def _outcome(fn):
    try:
        r = fn()
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)
    return str(r.dtype).split(".")[-1], tuple(r.shape), r.requires_grad, \
        np.asarray(r.detach().numpy() if isinstance(r, torch.Tensor) else r.numpy()).tobytes()


LAYOUTS = {
    "contiguous": lambda m: m.arange(24, dtype=m.float32).reshape(2, 12),
    "transposed": lambda m: m.arange(24, dtype=m.float32).reshape(4, 6).t(),
    "offset 1": lambda m: m.arange(24, dtype=m.float32).reshape(2, 12)[:, 1:5],
    "offset 2": lambda m: m.arange(24, dtype=m.float32).reshape(2, 12)[:, 2:6],
    "step 2": lambda m: m.arange(24, dtype=m.float32).reshape(2, 12)[:, ::2],
    "odd last": lambda m: m.arange(6, dtype=m.float32).reshape(2, 3),
    "size-1 last": lambda m: m.arange(8, dtype=m.int8).reshape(8, 1),
    "odd rows": lambda m: m.arange(30, dtype=m.int8).reshape(3, 10)[:, :4],
    "scalar": lambda m: m.tensor(1.5),
    "empty": lambda m: m.zeros(0, 4, dtype=m.int16),
    "empty last": lambda m: m.zeros(2, 0, dtype=m.int16),
    "rows of 2": lambda m: m.zeros(3, 2, dtype=m.int8),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_view_dtype_matches_torch(layout, dtype):
    x, t = _pair(LAYOUTS[layout])
    assert _outcome(lambda: x.view(getattr(ng, dtype))) == \
        _outcome(lambda: t.view(getattr(torch, dtype)))


def test_view_dtype_aliases_storage_and_version():
    x, t = ng.ones(3), torch.ones(3)
    v, tv = x.view(ng.int32), t.view(torch.int32)
    v[0] = 0
    tv[0] = 0
    assert x.tolist() == t.tolist() and x._version == t._version == v._version == 1
    x.add_(1.0)
    t.add_(1.0)
    assert v.tolist() == tv.tolist()


def test_view_dtype_is_outside_autograd():
    x, t = ng.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    for d in ("float32", "int32", "float64"):
        assert x.view(getattr(ng, d)).requires_grad is t.view(getattr(torch, d)).requires_grad \
            is False
    assert x.view(dtype=ng.float32).grad_fn is None


@pytest.mark.parametrize("args", [("float32",), (ng.float32, 3)])
def test_view_bad_arguments_raise_type_error(args):
    with pytest.raises(TypeError, match="view"):
        ng.ones(2, 3).view(*args)
    targs = tuple(torch.float32 if a is ng.float32 else a for a in args)
    with pytest.raises(TypeError, match="view"):
        torch.ones(2, 3).view(*targs)


def test_view_shape_still_works():
    assert ng.ones(2, 3).view(3, 2).shape == torch.ones(2, 3).view(3, 2).shape
    assert ng.ones(2, 3, requires_grad=True).view(-1).grad_fn.name() == "ViewBackward0"


@pytest.mark.parametrize("dtype", DTYPES)
def test_element_size_itemsize_nbytes(dtype):
    x, t = ng.ones(2, 3, dtype=getattr(ng, dtype)), torch.ones(2, 3, dtype=getattr(torch, dtype))
    for a, b in [(x, t), (x[:, 1], t[:, 1]), (x.expand(4, 2, 3), t.expand(4, 2, 3))]:
        assert (a.element_size(), a.itemsize, a.nbytes) == (b.element_size(), b.itemsize,
                                                            b.nbytes)


def test_view_dtype_under_jit_is_refused_clearly():
    f = ng.jit(lambda x: x.view(ng.int32))
    with pytest.raises(TracingError, match="view\\(dtype\\)"):
        f(ng.ones(2))

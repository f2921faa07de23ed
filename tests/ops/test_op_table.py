"""One op table drives the op tests.

Each row (OpInfo) names an op, gives the numgrad callable and the matching torch callable
(written once as ``fn(lib, *tensors, **kwargs)`` where ``lib`` is ``numgrad`` or ``torch``
whenever the spelling is the same), sample inputs (broadcasting, 0-d, zero-size), the input
domain and the dtypes. From it:

* test_forward           value, shape and dtype vs torch (float32, float64, int64 rows)
* test_vjp_vs_torch      ``out.backward(g)`` with a random ``g``: every input's .grad vs torch
* test_vjp_vs_numeric    ``ng.autograd.grad`` vs central finite differences in float64
* test_second_order      grad of a grad (create_graph=True) vs torch, float64
* test_no_grad_outputs   comparisons give bool tensors that never require grad
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import (  # noqa: E402
    as_tuple,
    assert_close,
    check_numeric_grad,
    rng_for,
    sample_array,
    second_order,
)


# ----------------------------------------------------------------------------- table format
@dataclass(frozen=True)
class T:
    """A tensor argument of the given shape (dtype from the test, domain from the row)."""

    shape: tuple
    domain: str | None = None


@dataclass
class Sample:
    args: tuple
    kwargs: dict
    desc: str


def S(*args, desc: str | None = None, **kwargs) -> Sample:
    if desc is None:
        shapes = ",".join("x".join(map(str, a.shape)) or "0d" for a in args)
        kw = ",".join(f"{k}={v!r}" for k, v in kwargs.items())
        desc = shapes + (f"|{kw}" if kw else "")
    return Sample(args, kwargs, desc.replace(" ", ""))


@dataclass
class OpInfo:
    name: str
    fn: Callable[..., Any]  # fn(lib, *tensors, **kwargs), lib in (numgrad, torch)
    samples: list
    domain: str = "real"
    dtypes: tuple = ("float32", "float64")
    int_forward: bool = False  # also check the forward pass on int64 inputs
    differentiable: bool = True
    gradgrad: bool = True
    torch_fn: Callable[..., Any] | None = None  # only where torch spells it differently
    extra: dict = field(default_factory=dict)

    @property
    def ng_fn(self):
        return functools.partial(self.fn, ng)

    @property
    def th_fn(self):
        if self.torch_fn is not None:
            return self.torch_fn
        return functools.partial(self.fn, torch)


# ----------------------------------------------------------------------------- samples
BINARY = [
    S(T((2, 3)), T((2, 3))),
    S(T((2, 3)), T((3,))),
    S(T((2, 1)), T((1, 3))),
    S(T(()), T((2, 3))),
    S(T((2, 3)), T(())),
    S(T(()), T(())),
    S(T((4, 1, 3)), T((2, 1))),
    S(T((0, 3)), T((3,))),
]
UNARY = [S(T((2, 3))), S(T(())), S(T((4,))), S(T((0, 2)))]
UNARY_SMALL = [S(T((2, 3))), S(T(()))]
R3 = (2, 3, 4)
REDUCE = [
    S(T(R3)),
    S(T(R3), dim=None),
    S(T(R3), dim=0),
    S(T(R3), dim=-1),
    S(T(R3), dim=1, keepdim=True),
    S(T(R3), dim=(0, 2)),
    S(T(R3), dim=(0, -1), keepdim=True),
    S(T(())),
    S(T((4,)), dim=0),
]
REDUCE_WITH_EMPTY = REDUCE + [S(T((0, 3))), S(T((0, 3)), dim=0), S(T((0, 3)), dim=1)]
MAX_DIM = [
    S(T((3, 4)), dim=1),
    S(T((3, 4)), dim=0),
    S(T((3, 4)), dim=-1, keepdim=True),
    S(T(R3), dim=1),
    S(T((5,)), dim=0),
]
MATMUL = [
    S(T((3,)), T((3,))),  # 1-D . 1-D -> 0-d
    S(T((2, 3)), T((3,))),  # matrix-vector
    S(T((3,)), T((3, 2))),  # vector-matrix
    S(T((2, 3)), T((3, 4))),
    S(T((2, 2, 3)), T((3, 4))),  # batched @ matrix
    S(T((2, 3)), T((2, 3, 2))),  # matrix @ batched
    S(T((2, 1, 2, 3)), T((3, 3, 2))),  # batch broadcasting
    S(T((3,)), T((2, 3, 4))),  # vector @ batched
    S(T((2, 2, 3)), T((3,))),  # batched @ vector
    S(T((2, 0)), T((0, 3))),  # zero-size inner dim -> zeros
]
WHERE = [
    S(T((2, 3)), T((2, 3)), cond=[[True, False, True], [False, False, True]]),
    S(T((2, 3)), T((3,)), cond=[[True, False, True], [False, True, False]]),
    S(T(()), T((2, 3)), cond=[True, False, False]),
    S(T((2, 1)), T((1, 3)), cond=[[True], [False]]),
]
INDEX_SHAPE = (4, 3)
IDX3 = (3, 4, 2)
MASK = [[True, False, True], [False, False, True], [True, True, False], [False, True, True]]

F_ = lambda m: m.nn.functional  # noqa: E731


def _idx(m, x, key):
    """Build the index in lib ``m``: ("t", data) becomes m.tensor(data), tuples recurse."""
    def conv(k):
        if isinstance(k, tuple) and len(k) == 2 and k[0] == "t":
            return m.tensor(k[1])
        return k

    if isinstance(key, tuple) and not (len(key) == 2 and key[0] == "t"):
        return x[tuple(conv(k) for k in key)]
    return x[conv(key)]


def unary_rows(name, domain="real", method=True, function=True, F=False, int_forward=False):
    rows = []
    if method:
        rows.append(OpInfo(name, lambda m, x, _n=name: getattr(x, _n)(), UNARY, domain,
                           int_forward=int_forward))
    if function:
        rows.append(OpInfo(f"ng.{name}", lambda m, x, _n=name: getattr(m, _n)(x), UNARY_SMALL,
                           domain))
    if F:
        rows.append(OpInfo(f"F.{name}", lambda m, x, _n=name: getattr(F_(m), _n)(x),
                           UNARY_SMALL, domain))
    return rows


_TRIG = [("asin", "unit"), ("acos", "unit"), ("atan", "real"), ("sinh", "real"),
         ("cosh", "real"), ("asinh", "real"), ("acosh", (1.2, 3.0)), ("atanh", "unit"),
         ("log2", "pos"), ("log10", "pos"), ("exp2", "real"), ("deg2rad", "real"),
         ("rad2deg", "real")]


# ----------------------------------------------------------------------------- the table
OPS: list[OpInfo] = [
    # arithmetic, with broadcasting
    OpInfo("add", lambda m, x, y: x + y, BINARY, int_forward=True),
    OpInfo("sub", lambda m, x, y: x - y, BINARY, int_forward=True),
    OpInfo("mul", lambda m, x, y: x * y, BINARY, int_forward=True),
    OpInfo("div", lambda m, x, y: x / y, BINARY, ["real", "nonzero"], int_forward=True),
    OpInfo("neg", lambda m, x: -x, UNARY, int_forward=True),
    OpInfo("add_scalar", lambda m, x: x + 2.5, UNARY, int_forward=True),
    OpInfo("radd_scalar", lambda m, x: 2.5 + x, UNARY_SMALL),
    OpInfo("add_int_scalar", lambda m, x: x + 2, UNARY_SMALL, int_forward=True),
    OpInfo("sub_scalar", lambda m, x: x - 1.5, UNARY_SMALL),
    OpInfo("rsub_scalar", lambda m, x: 1.5 - x, UNARY_SMALL, int_forward=True),
    OpInfo("mul_scalar", lambda m, x: x * -2.0, UNARY, int_forward=True),
    OpInfo("rmul_scalar", lambda m, x: 3 * x, UNARY_SMALL, int_forward=True),
    OpInfo("div_scalar", lambda m, x: x / 4.0, UNARY_SMALL, int_forward=True),
    OpInfo("rdiv_scalar", lambda m, x: 2.0 / x, UNARY_SMALL, "nonzero"),
    # powers
    OpInfo("pow_2", lambda m, x: x ** 2, UNARY, int_forward=True),
    OpInfo("pow_3.0", lambda m, x: x ** 3.0, UNARY_SMALL),
    OpInfo("pow_0.5", lambda m, x: x ** 0.5, UNARY, "pos"),
    OpInfo("pow_-1.5", lambda m, x: x ** -1.5, UNARY_SMALL, "pos"),
    OpInfo("pow_method", lambda m, x: x.pow(2), UNARY_SMALL),
    OpInfo("ng.pow_scalar", lambda m, x: m.pow(x, 3), UNARY_SMALL),
    OpInfo("rpow", lambda m, x: 2.0 ** x, UNARY),
    OpInfo("ng.pow_rscalar", lambda m, x: m.pow(2.0, x), UNARY_SMALL),
    OpInfo("pow_tensor", lambda m, x, y: x ** y, BINARY, ["pos", "real"]),
    OpInfo("ng.pow_tensor", lambda m, x, y: m.pow(x, y), BINARY[:3], ["pos", "real"]),
    # matmul
    OpInfo("matmul", lambda m, x, y: x @ y, MATMUL),
    OpInfo("ng.matmul", lambda m, x, y: m.matmul(x, y), MATMUL[:4]),
    OpInfo("matmul_method", lambda m, x, y: x.matmul(y), MATMUL[3:5]),
    # elementwise unary (method and function forms)
    *unary_rows("abs", "nonzero", int_forward=True),
    *unary_rows("exp"),
    *unary_rows("log", "pos"),
    *unary_rows("sqrt", "pos"),
    *unary_rows("sin"),
    *unary_rows("cos"),
    *unary_rows("tanh", F=True),
    *unary_rows("sigmoid", F=True),
    *unary_rows("relu", "nonzero", F=True, int_forward=True),
    # clamp
    OpInfo("clamp", lambda m, x, **kw: x.clamp(**kw),
           [S(T((2, 3)), min=-0.5, max=0.5), S(T((2, 3)), min=0.0), S(T((2, 3)), max=0.3),
            S(T(()), min=-1.0, max=1.0), S(T((0, 2)), min=-1.0, max=1.0)]),
    OpInfo("clamp_positional", lambda m, x: x.clamp(-0.5, 0.5), UNARY_SMALL),
    OpInfo("ng.clamp", lambda m, x: m.clamp(x, min=-0.7, max=0.2), UNARY_SMALL),
    OpInfo("clamp_int", lambda m, x: x.clamp(min=-2, max=3), UNARY_SMALL, int_forward=True),
    # binary elementwise functions
    OpInfo("ng.maximum", lambda m, x, y: m.maximum(x, y), BINARY, int_forward=True),
    OpInfo("ng.minimum", lambda m, x, y: m.minimum(x, y), BINARY, int_forward=True),
    OpInfo("ng.where", lambda m, x, y, cond: m.where(m.tensor(cond), x, y), WHERE,
           int_forward=True),
    OpInfo("ng.where_cmp", lambda m, x, y: m.where(x > 0, x, y), BINARY[:4]),
    # reductions
    OpInfo("sum", lambda m, x, **kw: x.sum(**kw), REDUCE_WITH_EMPTY, int_forward=True),
    OpInfo("sum_positional", lambda m, x: x.sum(1), [S(T((2, 3)))]),
    OpInfo("ng.sum", lambda m, x, **kw: m.sum(x, **kw), REDUCE[:4]),
    OpInfo("mean", lambda m, x, **kw: x.mean(**kw), REDUCE + [S(T((0, 3)), dim=1)]),
    OpInfo("ng.mean", lambda m, x, **kw: m.mean(x, **kw), REDUCE[:4]),
    OpInfo("amax", lambda m, x, **kw: x.amax(**kw), [s for s in REDUCE if s.kwargs],
           int_forward=True),
    OpInfo("amax_all", lambda m, x: x.amax(), [S(T((2, 3))), S(T(()))]),
    OpInfo("amin", lambda m, x, **kw: x.amin(**kw), [s for s in REDUCE if s.kwargs],
           int_forward=True),
    OpInfo("ng.amax", lambda m, x: m.amax(x, dim=1), [S(T((2, 3)))]),
    OpInfo("max_all", lambda m, x: x.max(), [S(T((2, 3))), S(T(()))], int_forward=True),
    OpInfo("min_all", lambda m, x: x.min(), [S(T((2, 3))), S(T(()))], int_forward=True),
    OpInfo("max_dim", lambda m, x, **kw: x.max(**kw), MAX_DIM, int_forward=True),
    OpInfo("min_dim", lambda m, x, **kw: x.min(**kw), MAX_DIM, int_forward=True),
    OpInfo("max_dim_positional", lambda m, x: x.max(1), [S(T((3, 4)))]),
    OpInfo("ng.max_dim", lambda m, x: m.max(x, dim=0), [S(T((3, 4)))]),
    OpInfo("ng.min_dim", lambda m, x: m.min(x, 1, keepdim=True), [S(T((3, 4)))]),
    # layout
    OpInfo("reshape", lambda m, x, shape: x.reshape(*shape),
           [S(T((2, 3)), shape=(3, 2)), S(T((2, 3)), shape=(6,)), S(T((2, 3)), shape=(-1, 2)),
            S(T(()), shape=(1,)), S(T((4,)), shape=(2, 1, 2)), S(T((0, 3)), shape=(3, 0))]),
    OpInfo("reshape_tuple", lambda m, x: x.reshape((3, 2)), [S(T((2, 3)))]),
    OpInfo("ng.reshape", lambda m, x: m.reshape(x, (3, 2)), [S(T((2, 3)))]),
    OpInfo("view", lambda m, x, shape: x.view(*shape),
           [S(T((2, 3)), shape=(3, 2)), S(T((2, 3)), shape=(-1,)), S(T((2, 3, 4)), shape=(6, 4))],
           int_forward=True),
    OpInfo("flatten", lambda m, x, **kw: x.flatten(**kw),
           [S(T((2, 3, 4))), S(T((2, 3, 4)), start_dim=1), S(T((2, 3, 4)), start_dim=0, end_dim=1),
            S(T(()))], int_forward=True),
    OpInfo("squeeze", lambda m, x, **kw: x.squeeze(**kw),
           [S(T((1, 3, 1))), S(T((1, 3, 1)), dim=0), S(T((1, 3, 1)), dim=-1),
            S(T((1, 3, 1)), dim=1), S(T((1,)))], int_forward=True),
    OpInfo("unsqueeze", lambda m, x, dim: x.unsqueeze(dim),
           [S(T((2, 3)), dim=0), S(T((2, 3)), dim=1), S(T((2, 3)), dim=-1), S(T(()), dim=0)],
           int_forward=True),
    OpInfo("expand", lambda m, x, shape: x.expand(*shape),
           [S(T((1, 3)), shape=(2, 3)), S(T((1, 3)), shape=(4, -1)), S(T((3,)), shape=(2, 3)),
            S(T(()), shape=(2, 2)), S(T((2, 1)), shape=(2, 4)), S(T((2, 1)), shape=(3, 2, 2))],
           int_forward=True),
    OpInfo("transpose", lambda m, x, d0, d1: x.transpose(d0, d1),
           [S(T((2, 3)), d0=0, d1=1), S(T(R3), d0=0, d1=2), S(T(R3), d0=-1, d1=-2)],
           int_forward=True),
    OpInfo("ng.transpose", lambda m, x: m.transpose(x, 0, 1), [S(T((2, 3)))]),
    OpInfo("permute", lambda m, x, dims: x.permute(*dims),
           [S(T(R3), dims=(2, 0, 1)), S(T(R3), dims=(0, 1, 2)), S(T((2, 3)), dims=(1, 0))],
           int_forward=True),
    OpInfo("permute_tuple", lambda m, x: x.permute((1, 2, 0)), [S(T(R3))]),
    OpInfo("ng.permute", lambda m, x: m.permute(x, (2, 1, 0)), [S(T(R3))]),
    OpInfo(".T", lambda m, x: x.T, [S(T((2, 3))), S(T((1, 4)))], int_forward=True),
    # indexing
    OpInfo("getitem", lambda m, x, key: _idx(m, x, key), [
        S(T(INDEX_SHAPE), key=0, desc="int"),
        S(T(INDEX_SHAPE), key=-1, desc="negative_int"),
        S(T(INDEX_SHAPE), key=(0, 1), desc="two_ints_0d"),
        S(T(INDEX_SHAPE), key=slice(1, 3), desc="slice"),
        S(T(INDEX_SHAPE), key=slice(None, None, 2), desc="slice_step"),
        S(T(INDEX_SHAPE), key=(slice(1, None), slice(None, None, 2)), desc="two_slices"),
        S(T(INDEX_SHAPE), key=(slice(None), 1), desc="column"),
        S(T(INDEX_SHAPE), key=(slice(-3, -1),), desc="negative_slice"),
        S(T(IDX3), key=(Ellipsis, 0), desc="ellipsis_int"),
        S(T(IDX3), key=(0, Ellipsis, 1), desc="int_ellipsis_int"),
        S(T(INDEX_SHAPE), key=None, desc="None"),
        S(T(INDEX_SHAPE), key=(slice(None), None), desc="slice_None"),
        S(T(INDEX_SHAPE), key=(None, Ellipsis, None), desc="None_ellipsis_None"),
        S(T(INDEX_SHAPE), key=[0, 2, 0], desc="list_repeated"),
        S(T(INDEX_SHAPE), key=("t", [0, 2, 0, 0]), desc="tensor_repeated"),
        S(T(INDEX_SHAPE), key=("t", [[0, 1], [1, 1]]), desc="tensor_2d_index"),
        S(T(INDEX_SHAPE), key=([0, 1, 0], [1, 2, 1]), desc="pairs_repeated"),
        S(T(INDEX_SHAPE), key=(slice(None), [2, 0, 2]), desc="slice_list"),
        S(T(INDEX_SHAPE), key=("t", [-1, 0, -1]), desc="tensor_negative"),
        S(T(INDEX_SHAPE), key=("t", MASK), desc="bool_mask_full"),
        S(T(INDEX_SHAPE), key=("t", [True, False, True, True]), desc="bool_mask_rows"),
        S(T(IDX3), key=(1, ("t", [2, 2, 0])), desc="int_and_tensor"),
    ], int_forward=True),
    OpInfo("getitem_mask_from_cmp", lambda m, x: x[x > 0], [S(T((3, 4)))]),
    # joining
    OpInfo("ng.cat", lambda m, *xs, **kw: m.cat(list(xs), **kw), [
        S(T((2, 3)), T((1, 3))),
        S(T((2, 3)), T((1, 3)), dim=0),
        S(T((2, 3)), T((2, 2)), dim=1),
        S(T((2, 3)), T((2, 1)), dim=-1),
        S(T((2, 3)), T((1, 3)), T((3, 3))),
        S(T((2, 3)), T((0, 3))),
        S(T((2,)), T((3,))),
    ], int_forward=True),
    OpInfo("ng.cat_tuple", lambda m, x, y: m.cat((x, y), dim=1), [S(T((2, 3)), T((2, 1)))]),
    OpInfo("ng.stack", lambda m, *xs, **kw: m.stack(list(xs), **kw), [
        S(T((2, 3)), T((2, 3))),
        S(T((2, 3)), T((2, 3)), dim=1),
        S(T((2, 3)), T((2, 3)), dim=-1),
        S(T((2,)), T((2,)), T((2,))),
        S(T(()), T(())),
    ], int_forward=True),
    # softmax family
    OpInfo("softmax", lambda m, x, dim: x.softmax(dim=dim),
           [S(T((2, 3)), dim=1), S(T((2, 3)), dim=0), S(T((2, 3)), dim=-1), S(T(IDX3), dim=1),
            S(T((4,)), dim=0)]),
    OpInfo("ng.softmax", lambda m, x: m.softmax(x, dim=1), [S(T((2, 3)))]),
    OpInfo("F.softmax", lambda m, x, dim: F_(m).softmax(x, dim=dim),
           [S(T((2, 3)), dim=1), S(T(IDX3), dim=-1)]),
    OpInfo("log_softmax", lambda m, x, dim: x.log_softmax(dim=dim),
           [S(T((2, 3)), dim=1), S(T((2, 3)), dim=0), S(T(IDX3), dim=1), S(T((4,)), dim=0)]),
    OpInfo("ng.log_softmax", lambda m, x: m.log_softmax(x, dim=-1), [S(T((2, 3)))]),
    OpInfo("F.log_softmax", lambda m, x, dim: F_(m).log_softmax(x, dim=dim),
           [S(T((2, 3)), dim=1), S(T(IDX3), dim=0)]),
    # nn.functional
    OpInfo("F.mse_loss", lambda m, x, y, **kw: F_(m).mse_loss(x, y, **kw), [
        S(T((2, 3)), T((2, 3))),
        S(T((2, 3)), T((2, 3)), reduction="sum"),
        S(T((2, 3)), T((2, 3)), reduction="none"),
        S(T((4,)), T((4,)), reduction="mean"),
    ]),
    OpInfo("F.cross_entropy",
           lambda m, x, target, **kw: F_(m).cross_entropy(x, m.tensor(target), **kw), [
               S(T((3, 4)), target=[1, 0, 3]),
               S(T((3, 4)), target=[2, 2, 0], reduction="sum"),
               S(T((3, 4)), target=[3, 1, 1], reduction="none"),
               S(T((1, 2)), target=[1]),
           ]),
    OpInfo("F.nll_loss",
           lambda m, x, target, **kw: F_(m).nll_loss(x, m.tensor(target), **kw), [
               S(T((3, 4)), target=[1, 0, 3]),
               S(T((3, 4)), target=[2, 2, 0], reduction="sum"),
               S(T((3, 4)), target=[3, 1, 1], reduction="none"),
           ]),
    OpInfo("F.linear", lambda m, *a: F_(m).linear(*a), [
        S(T((2, 3)), T((4, 3)), T((4,))),
        S(T((2, 3)), T((4, 3))),
        S(T((3,)), T((4, 3)), T((4,))),
        S(T((2, 2, 3)), T((4, 3)), T((4,))),
    ]),
    # ---- more ops a PyTorch user reaches for
    OpInfo("remainder", lambda m, x, y: x % y, BINARY[:3], ["real", "nonzero"],
           int_forward=True),
    OpInfo("remainder_scalar", lambda m, x: x % 0.7, UNARY_SMALL, int_forward=True),
    OpInfo("ng.fmod", lambda m, x, y: m.fmod(x, y), BINARY[:3], ["real", "nonzero"],
           int_forward=True),
    OpInfo("ng.remainder", lambda m, x, y: m.remainder(x, y), BINARY[:1], ["real", "nonzero"]),
    *unary_rows("log1p", "pos"),
    *unary_rows("expm1"),
    *unary_rows("erf"),
    *[OpInfo(f"{n}_", lambda m, x, _n=n: getattr(x * 1, _n + "_")(), UNARY_SMALL, d)
      for n, d in [("exp", "real"), ("log", "pos"), ("sqrt", "pos"), ("sin", "real"),
                   ("cos", "real"), ("tanh", "real"), ("sigmoid", "real"), ("abs", "nonzero"),
                   ("neg", "real"), ("log1p", "pos"), ("expm1", "real"), ("erf", "real")]],
    OpInfo("F.softplus", lambda m, x, **kw: F_(m).softplus(x, **kw),
           [S(T((2, 3))), S(T((2, 3)), beta=2.0, threshold=1.5)], (-3.0, 3.0)),
    OpInfo("F.gelu", lambda m, x, **kw: F_(m).gelu(x, **kw),
           [S(T((2, 3))), S(T((2, 3)), approximate="tanh")]),
    OpInfo("F.leaky_relu", lambda m, x, **kw: F_(m).leaky_relu(x, **kw),
           [S(T((2, 3))), S(T((2, 3)), negative_slope=0.2)], "nonzero"),
    OpInfo("F.elu", lambda m, x, **kw: F_(m).elu(x, **kw),
           [S(T((2, 3))), S(T((2, 3)), alpha=0.5)], "nonzero"),
    OpInfo("F.silu", lambda m, x: F_(m).silu(x), UNARY_SMALL),
    OpInfo("prod", lambda m, x, **kw: x.prod(**kw),
           [S(T(R3)), S(T(R3), dim=1), S(T(R3), dim=-1, keepdim=True), S(T(()))], "nonzero",
           int_forward=True),
    OpInfo("ng.prod", lambda m, x: m.prod(x, 0), [S(T((2, 3)))], "nonzero"),
    OpInfo("var", lambda m, x, **kw: x.var(**kw),
           [S(T(R3)), S(T(R3), dim=1), S(T(R3), dim=(0, 2), keepdim=True),
            S(T(R3), dim=1, correction=0), S(T(R3), dim=-1, unbiased=False)]),
    OpInfo("std", lambda m, x, **kw: x.std(**kw),
           [S(T(R3)), S(T(R3), dim=1), S(T(R3), dim=0, correction=2, keepdim=True)]),
    OpInfo("ng.std", lambda m, x: m.std(x, 1), [S(T((2, 3)))]),
    OpInfo("norm", lambda m, x, **kw: x.norm(**kw),
           [S(T(R3)), S(T(R3), p=1), S(T(R3), p=3, dim=1), S(T(R3), p=float("inf"), dim=0),
            S(T(R3), dim=(1, 2), keepdim=True), S(T((4,)), p=0.5)], "nonzero"),
    OpInfo("cumsum", lambda m, x, dim: x.cumsum(dim),
           [S(T((2, 3)), dim=1), S(T(R3), dim=0), S(T(R3), dim=-1), S(T(()), dim=0)],
           int_forward=True),
    OpInfo("ng.cumsum", lambda m, x: m.cumsum(x, dim=0), [S(T((3, 2)))]),
    OpInfo("gather", lambda m, x, dim, index: x.gather(dim, m.tensor(index)),
           [S(T((3, 4)), dim=0, index=[[0, 2, 2, 1], [1, 1, 0, 2]]),
            S(T((3, 4)), dim=1, index=[[3, 3], [0, 1], [2, 2]]),
            S(T(R3), dim=-1, index=[[[1, 0]] * 3] * 2)], int_forward=True),
    OpInfo("ng.gather", lambda m, x: m.gather(x, 1, m.tensor([[1], [0]])), [S(T((2, 3)))]),
    OpInfo("scatter_add", lambda m, x, src, dim, index: x.scatter_add(dim, m.tensor(index), src),
           [S(T((3, 4)), T((2, 4)), dim=0, index=[[0, 2, 2, 1], [0, 0, 0, 2]]),
            S(T((3, 4)), T((3, 2)), dim=1, index=[[3, 3], [0, 1], [2, 2]])], int_forward=True),
    OpInfo("masked_fill", lambda m, x, mask: x.masked_fill(m.tensor(mask), 0.5),
           [S(T((4, 3)), mask=MASK), S(T((4, 3)), mask=[True, False, True])], int_forward=True),
    OpInfo("index_select", lambda m, x, dim, index: x.index_select(dim, m.tensor(index)),
           [S(T((3, 4)), dim=0, index=[2, 0, 2]), S(T((3, 4)), dim=1, index=[3])],
           int_forward=True),
    OpInfo("flip", lambda m, x, dims: x.flip(dims),
           [S(T(R3), dims=(0,)), S(T(R3), dims=(0, 2)), S(T((2, 3)), dims=(-1,))],
           int_forward=True),
    OpInfo("roll", lambda m, x, **kw: x.roll(**kw),
           [S(T(R3), shifts=1, dims=0), S(T(R3), shifts=(2, -1), dims=(2, 1)),
            S(T((2, 3)), shifts=4)], int_forward=True),
    OpInfo("chunk", lambda m, x, n, dim: m.cat([p * (i + 1) for i, p in
                                                enumerate(x.chunk(n, dim))], dim),
           [S(T((5, 2)), n=2, dim=0), S(T((2, 6)), n=3, dim=1)]),
    OpInfo("split", lambda m, x, size, dim: m.cat([p * (i + 1) for i, p in
                                                   enumerate(x.split(size, dim))], dim),
           [S(T((5, 2)), size=2, dim=0), S(T((2, 6)), size=[1, 3, 2], dim=1)]),
    OpInfo("unbind", lambda m, x, dim: m.stack([p * (i + 1) for i, p in
                                                enumerate(x.unbind(dim))], dim),
           [S(T((3, 2)), dim=0), S(T(R3), dim=2)]),
    OpInfo("narrow", lambda m, x, dim, start, length: x.narrow(dim, start, length),
           [S(T((4, 3)), dim=0, start=1, length=2), S(T((4, 3)), dim=1, start=-2, length=2)],
           int_forward=True),
    OpInfo("repeat", lambda m, x, sizes: x.repeat(*sizes),
           [S(T((2, 3)), sizes=(2, 1)), S(T((2, 3)), sizes=(2, 1, 3)), S(T(()), sizes=(3,))],
           int_forward=True),
    OpInfo("tile", lambda m, x, dims: x.tile(dims),
           [S(T((2, 3)), dims=(2,)), S(T((3,)), dims=(2, 2))], int_forward=True),
    OpInfo("tril", lambda m, x, **kw: x.tril(**kw),
           [S(T((3, 4))), S(T((2, 3, 3)), diagonal=-1), S(T((3, 2)), diagonal=1)],
           int_forward=True),
    OpInfo("triu", lambda m, x, **kw: x.triu(**kw),
           [S(T((3, 4))), S(T((2, 3, 3)), diagonal=1)], int_forward=True),
    OpInfo("ng.tril", lambda m, x: m.tril(x), [S(T((3, 3)))]),
    OpInfo("isclose", lambda m, x, y: m.isclose(x, y * 1e-6 + x), BINARY[:2],
           differentiable=False),
    OpInfo("F.binary_cross_entropy", lambda m, x, t, **kw: F_(m).binary_cross_entropy(x, t, **kw),
           [S(T((2, 3)), T((2, 3))), S(T((4,)), T((4,)), reduction="sum"),
            S(T((2, 3)), T((2, 3)), reduction="none")], [(0.05, 0.95), (0.0, 1.0)]),
    OpInfo("F.binary_cross_entropy_with_logits",
           lambda m, x, t, **kw: F_(m).binary_cross_entropy_with_logits(x, t, **kw),
           [S(T((2, 3)), T((2, 3))), S(T((4,)), T((4,)), reduction="sum")],
           ["nonzero", (0.0, 1.0)]),
    OpInfo("F.bce_with_logits_pos_weight",  # torch: pos_weight is not differentiable
           lambda m, x, t, w: F_(m).binary_cross_entropy_with_logits(x, t, pos_weight=m.tensor(w)),
           [S(T((2, 3)), T((2, 3)), w=[0.5, 2.0, 1.5])], ["nonzero", (0.0, 1.0)]),
    OpInfo("F.l1_loss", lambda m, x, y, **kw: F_(m).l1_loss(x, y, **kw),
           [S(T((2, 3)), T((2, 3))), S(T((4,)), T((4,)), reduction="none")]),
    OpInfo("F.smooth_l1_loss", lambda m, x, y, **kw: F_(m).smooth_l1_loss(x, y, **kw),
           [S(T((2, 3)), T((2, 3))), S(T((2, 3)), T((2, 3)), beta=0.5, reduction="sum"),
            S(T((4,)), T((4,)), beta=0.0)]),
    OpInfo("F.dropout_eval", lambda m, x, **kw: F_(m).dropout(x, **kw) * 2,
           [S(T((2, 3)), p=0.3, training=False), S(T((2, 3)), p=0.0)]),
    # ---- the ops a training script reaches for (sorting, einsum, bmm, all/any)
    OpInfo("sort", lambda m, x, **kw: x.sort(**kw),
           [S(T((3, 4))), S(T((3, 4)), dim=0), S(T(R3), dim=1, descending=True), S(T(())),
            S(T((5,)), descending=True, stable=True), S(T((0, 3)), dim=1)], int_forward=True),
    OpInfo("ng.sort", lambda m, x: m.sort(x, 0, True), [S(T((4, 2)))], int_forward=True),
    # argsort's int64 indices reach the table through the values they gather
    OpInfo("argsort", lambda m, x, dim, **kw: x.gather(dim, x.argsort(dim=dim, **kw)),
           [S(T((3, 4)), dim=1), S(T(R3), dim=0, descending=True)], int_forward=True),
    OpInfo("ng.argsort_values", lambda m, x: x[m.argsort(x)], [S(T((5,)))]),
    OpInfo("topk", lambda m, x, k, **kw: x.topk(k, **kw),
           [S(T((3, 5)), k=2), S(T((3, 5)), k=3, dim=0), S(T(R3), k=1, dim=1, largest=False),
            S(T((4,)), k=0), S(T((4,)), k=4), S(T(()), k=1)]),
    OpInfo("ng.topk", lambda m, x: m.topk(x, 2, largest=False), [S(T((2, 4)))]),
    OpInfo("einsum", lambda m, *xs, eq: m.einsum(eq, *xs), [
        S(T((2, 3)), T((3, 4)), eq="ij,jk->ik", desc="matmul"),
        S(T((2, 3)), T((3, 4)), eq="ij,jk", desc="implicit_matmul"),
        S(T((2, 2, 3)), T((2, 3, 2)), eq="bij,bjk->bik", desc="bmm"),
        S(T((4,)), T((4,)), eq="i,i->", desc="dot"),
        S(T((3,)), T((2,)), eq="i,j->ij", desc="outer"),
        S(T((2, 3)), T((2, 3)), eq="ij,ij->i", desc="rowwise_dot"),
        S(T((2, 3)), T((1, 3)), eq="ij,ij->ij", desc="hadamard_broadcast"),
        S(T((2, 3)), eq="ij->ji", desc="transpose"),
        S(T((2, 3)), eq="ij->", desc="sum_all"),
        S(T((2, 3)), eq="ij->j", desc="sum_dim"),
        S(T((3, 3)), eq="ii->i", desc="diagonal"),
        S(T((3, 3)), eq="ii", desc="trace"),
        S(T((2, 2, 3)), eq="iij->ji", desc="diagonal_of_batch"),
        S(T((2, 3)), T((3, 4)), T((2, 4)), eq="bi,ij,bj->b", desc="bilinear_three_operands"),
        S(T((2, 2, 3)), T((3, 2)), eq="...ij,...jk->...ik", desc="ellipsis_broadcast"),
        S(T((2, 3, 2)), T((2,)), eq="b...,b->...", desc="ellipsis_output"),
        S(T((2, 3, 2)), T((3, 2, 4)), eq="ijk,jil->kl", desc="two_contracted"),
        S(T((2, 0)), T((3, 2)), eq="ij,kl->", desc="zero_size"),
    ], int_forward=True),
    OpInfo("einsum_list", lambda m, x, y: m.einsum("ab,cb->ac", [x, y]),
           [S(T((2, 3)), T((4, 3)))]),
    OpInfo("einsum_sublist", lambda m, x, y: m.einsum(x, [0, 1], y, [1, 2], [0, 2]),
           [S(T((2, 3)), T((3, 4)))]),
    OpInfo("ng.bmm", lambda m, x, y: m.bmm(x, y),
           [S(T((2, 3, 4)), T((2, 4, 2))), S(T((1, 2, 3)), T((1, 3, 1))),
            S(T((2, 0, 3)), T((2, 3, 2)))], int_forward=True),
    OpInfo("bmm", lambda m, x, y: x.bmm(y), [S(T((3, 2, 2)), T((3, 2, 4)))]),
    *[OpInfo(name, fn, REDUCE_WITH_EMPTY, differentiable=False, int_forward=True)
      for name, fn in [("all", lambda m, x, **kw: x.all(**kw)),
                       ("any", lambda m, x, **kw: x.any(**kw)),
                       ("all_of_cmp", lambda m, x, **kw: (x > -1).all(**kw)),
                       ("any_of_cmp", lambda m, x, **kw: (x > 1.5).any(**kw))]],
    OpInfo("ng.all", lambda m, x: m.all(x > 0, 1), [S(T((3, 4)))], differentiable=False),
    OpInfo("ng.any", lambda m, x: m.any(x > 0, dim=0, keepdim=True), [S(T((3, 4)))],
           differentiable=False),
    # comparisons: bool results, never differentiable
    *[
        OpInfo(f"cmp_{name}", fn, BINARY[:5], differentiable=False, int_forward=True)
        for name, fn in [
            ("lt", lambda m, x, y: x < y),
            ("le", lambda m, x, y: x <= y),
            ("gt", lambda m, x, y: x > y),
            ("ge", lambda m, x, y: x >= y),
            ("eq", lambda m, x, y: x == y),
            ("ne", lambda m, x, y: x != y),
        ]
    ],
    *[
        OpInfo(f"cmp_scalar_{name}", fn, UNARY_SMALL, differentiable=False, int_forward=True)
        for name, fn in [
            ("lt", lambda m, x: x < 0.5),
            ("ge", lambda m, x: x >= 0),
            ("eq", lambda m, x: x == 1),
            ("ne", lambda m, x: x != 1),
        ]
    ],
]



def _setitem(m, x, v):
    y = x * 1
    y[0] = v * 2
    return y


OPS += [  # registry rows no case above reached (test_every_registry_row_has_a_case)
    OpInfo("clone", lambda m, x: x.clone(), UNARY_SMALL),
    OpInfo("contiguous", lambda m, x: x.t().contiguous() * 2, [S(T((2, 3)))]),
    OpInfo("ng.hypot", lambda m, x, y: m.hypot(x, y), BINARY[:3]),
    OpInfo("ng.logical_not", lambda m, x: m.logical_not(x > 0), UNARY_SMALL,
           differentiable=False),
    OpInfo("setitem", _setitem, [S(T((2, 3)), T((3,)))]),
    OpInfo("fill_", lambda m, x: (x * 1).fill_(0.5) + x, UNARY_SMALL),
    OpInfo("copy_", lambda m, x, v: (x * 1).copy_(v * 2) + x, [S(T((2, 3)), T((3,)))]),
    OpInfo("F.conv2d", lambda m, x, w: F_(m).conv2d(x, w, padding=1),
           [S(T((1, 2, 4, 4)), T((3, 2, 3, 3)))]),
    # the composite windows (im2col/col2im), which eager conv2d no longer runs
    OpInfo("F.unfold", lambda m, x: F_(m).unfold(x, 2, padding=1), [S(T((1, 2, 3, 3)))]),
]
OPS += [  # ops.trig: the inverse/hyperbolic family, log2/log10/exp2, atan2, with aliases
    *[row for n, d in _TRIG for row in unary_rows(n, d, int_forward=True)],
    # (torch has no derivative for in-place asinh_, acosh_, atanh_, nor has numgrad: they are
    # tested with their backward's error elsewhere)
    *[OpInfo(f"{n}_", lambda m, x, _n=n: getattr(x * 1, _n + "_")(), UNARY_SMALL, d)
      for n, d in _TRIG if n not in ("asinh", "acosh", "atanh")],
    *[OpInfo(f"ng.{a}", lambda m, x, _a=a: getattr(m, _a)(x), UNARY_SMALL, d)
      for a, d in [("arcsin", "unit"), ("arccos", "unit"), ("arctan", "real"),
                   ("arcsinh", "real"), ("arccosh", (1.2, 3.0)), ("arctanh", "unit")]],
    OpInfo("arcsin_", lambda m, x: (x * 1).arcsin_(), UNARY_SMALL, "unit"),
    OpInfo("ng.atan2", lambda m, x, y: m.atan2(x, y), BINARY, "nonzero", int_forward=True),
    OpInfo("atan2", lambda m, x, y: x.atan2(y), BINARY[:3], "nonzero"),
    OpInfo("ng.arctan2", lambda m, x, y: m.arctan2(x, y), BINARY[:1], "nonzero"),
    OpInfo("atan2_", lambda m, x, y: (x * 1).atan2_(y), BINARY[:2], "nonzero"),
]
OPS += [  # ops.bitwise: integer and bool operands only, no gradients
    *[OpInfo(f"ng.bitwise_{n}", lambda m, x, y, _n=n: getattr(m, "bitwise_" + _n)(x, y), BINARY,
             "nonzero", dtypes=("int64",), differentiable=False) for n in ("and", "or", "xor")],
    *[OpInfo(f"op_{n}", fn, BINARY[:3], "nonzero", dtypes=("int64",), differentiable=False)
      for n, fn in [("and", lambda m, x, y: x & y), ("or", lambda m, x, y: x | y),
                    ("xor", lambda m, x, y: x ^ y), ("rand", lambda m, x, y: 6 & y),
                    ("ror", lambda m, x, y: 6 | x), ("xor_bool", lambda m, x, y: (x > 0) ^ True),
                    ("and_bool", lambda m, x, y: (x > 0) & (y < 0)),
                    ("or_bool_int", lambda m, x, y: (x > 0) | y)]],
    OpInfo("ng.bitwise_not", lambda m, x: m.bitwise_not(x), UNARY, "nonzero", dtypes=("int64",),
           differentiable=False),
    OpInfo("op_invert", lambda m, x: (~x, ~(x > 0)), UNARY_SMALL, "nonzero", dtypes=("int64",),
           differentiable=False),
    OpInfo("bitwise_and_", lambda m, x, y: (x * 1).bitwise_and_(y), BINARY[:2], "nonzero",
           dtypes=("int64",), differentiable=False),
    OpInfo("bitwise_not_", lambda m, x: (x * 1).bitwise_not_(), UNARY_SMALL, "nonzero",
           dtypes=("int64",), differentiable=False),
    *[OpInfo(name, fn, BINARY[:3], "nonzero", dtypes=("int64",), differentiable=False)
      for name, fn in [("ng.bitwise_left_shift", lambda m, x, y: m.bitwise_left_shift(x, y)),
                       ("ng.bitwise_right_shift", lambda m, x, y: m.bitwise_right_shift(x, y)),
                       ("op_lshift", lambda m, x, y: x << 3), ("op_rshift", lambda m, x, y: x >> 1),
                       ("op_floordiv", lambda m, x, y: x // y)]],  # (floats: elsewhere)
]
_names = [op.name for op in OPS]
assert len(_names) == len(set(_names)), "duplicate op names in the table"


# ----------------------------------------------------------------------------- inputs
def make_arrays(op: OpInfo, sample: Sample, dtype: str, key) -> list[np.ndarray]:
    rng = rng_for(op.name, sample.desc, dtype, key)
    out = []
    for i, a in enumerate(sample.args):
        dom = a.domain or (op.domain[i] if isinstance(op.domain, list) else op.domain)
        out.append(sample_array(a.shape, dtype, dom, rng))
    return out


def ng_inputs(arrays, requires_grad):
    return [ng.tensor(a.copy(), requires_grad=requires_grad and a.dtype.kind == "f")
            for a in arrays]


def torch_inputs(arrays, requires_grad):
    return [torch.tensor(a.copy(), requires_grad=requires_grad and a.dtype.kind == "f")
            for a in arrays]


def params(kind: str):
    out = []
    for op in OPS:
        if kind in ("vjp", "numeric", "gradgrad") and not op.differentiable:
            continue
        if kind == "gradgrad" and not op.gradgrad:
            continue
        if kind == "nograd" and op.differentiable:
            continue
        if kind == "forward":
            dtypes = list(op.dtypes) + (["int64"] if op.int_forward else [])
        elif kind in ("numeric", "gradgrad"):
            dtypes = ["float64"]
        else:
            dtypes = list(op.dtypes)
        for s in op.samples:
            for d in dtypes:
                out.append(pytest.param(op, s, d, id=f"{op.name}-{s.desc}-{d}"))
    return out


def _float_outputs(outs):
    return [o for o in outs if o.dtype in (ng.float32, ng.float64)]


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("op,sample,dtype", params("forward"))
def test_forward(op, sample, dtype):
    arrays = make_arrays(op, sample, dtype, "fwd")
    got = as_tuple(op.ng_fn(*ng_inputs(arrays, False), **sample.kwargs))
    want = as_tuple(op.th_fn(*torch_inputs(arrays, False), **sample.kwargs))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert isinstance(g, ng.Tensor), f"output {i} is {type(g).__name__}, not ng.Tensor"
        assert tuple(g.shape) == tuple(w.shape), f"output {i} shape"
        assert g.dtype == {torch.float32: ng.float32, torch.float64: ng.float64,
                           torch.int64: ng.int64, torch.bool: ng.bool}[w.dtype], f"output {i}"
        assert_close(g, w, msg=f"output {i}")
        assert not g.requires_grad and g.grad_fn is None


@pytest.mark.parametrize("op,sample,dtype", params("vjp"))
def test_vjp_vs_torch(op, sample, dtype):
    arrays = make_arrays(op, sample, dtype, "vjp")
    xs = ng_inputs(arrays, True)
    ts = torch_inputs(arrays, True)
    outs = _float_outputs(as_tuple(op.ng_fn(*xs, **sample.kwargs)))
    touts = [o for o in as_tuple(op.th_fn(*ts, **sample.kwargs)) if o.is_floating_point()]
    assert len(outs) == len(touts) == 1
    out, tout = outs[0], touts[0]
    assert out.requires_grad and out.grad_fn is not None and not out.is_leaf
    g = np.asarray(rng_for(op.name, sample.desc, dtype, "g").standard_normal(tuple(tout.shape)),
                   dtype=dtype)
    out.backward(ng.tensor(g.copy()))
    tout.backward(torch.tensor(g.copy()))
    for i, (x, t) in enumerate(zip(xs, ts)):
        assert_close(x.grad, t.grad, msg=f"grad of input {i}")


@pytest.mark.parametrize("op,sample,dtype", params("numeric"))
def test_vjp_vs_numeric(op, sample, dtype):
    arrays = make_arrays(op, sample, dtype, "fd")
    rng = rng_for(op.name, sample.desc, "fd-cotangent")
    check_numeric_grad(lambda *xs: op.ng_fn(*xs, **sample.kwargs), arrays, rng)


@pytest.mark.parametrize("op,sample,dtype", params("gradgrad"))
def test_second_order(op, sample, dtype):
    arrays = make_arrays(op, sample, dtype, "gg")
    rng = rng_for(op.name, sample.desc, "gg-cotangents")
    touts = [o for o in as_tuple(op.th_fn(*torch_inputs(arrays, False), **sample.kwargs))
             if o.is_floating_point()]
    vs = [np.asarray(rng.standard_normal(tuple(o.shape))) for o in touts]
    ws = [np.asarray(rng.standard_normal(a.shape)) for a in arrays]

    def ng_fn(lib, *xs):
        return op.ng_fn(*xs, **sample.kwargs)

    def th_fn(lib, *xs):
        return op.th_fn(*xs, **sample.kwargs)

    got = second_order(ng, ng_fn, arrays, vs, ws)
    want = second_order(torch, th_fn, arrays, vs, ws)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"second-order grad {i} shape"
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9, err_msg=f"second-order grad {i}")


@pytest.mark.parametrize("op,sample,dtype", params("nograd"))
def test_no_grad_outputs(op, sample, dtype):
    arrays = make_arrays(op, sample, dtype, "nograd")
    outs = as_tuple(op.ng_fn(*ng_inputs(arrays, True), **sample.kwargs))
    wants = as_tuple(op.th_fn(*torch_inputs(arrays, False), **sample.kwargs))
    for o, w in zip(outs, wants, strict=True):  # bool (comparisons) or integer (bitwise)
        assert o.dtype.name == str(w.dtype).removeprefix("torch.") and not o.is_floating_point()
        assert o.requires_grad is False
        assert o.grad_fn is None


def test_max_dim_returns_values_and_indices_fields():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], dtype=np.float32)
    got = ng.tensor(x).max(dim=1)
    want = torch.tensor(x).max(dim=1)
    values, indices = got
    assert_close(values, want.values)
    assert_close(indices, want.indices)
    assert_close(got.values, want.values)
    assert_close(got.indices, want.indices)
    got = ng.tensor(x).min(dim=0)
    want = torch.tensor(x).min(dim=0)
    assert_close(got.values, want.values)
    assert_close(got.indices, want.indices)


def test_op_table_covers_required_ops():
    names = set(_names)
    required = {
        "add", "sub", "mul", "div", "neg", "pow_2", "rpow", "pow_tensor", "matmul", "abs",
        "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "clamp", "ng.maximum",
        "ng.minimum", "ng.where", "sum", "mean", "amax", "amin", "max_dim", "min_dim",
        "reshape", "view", "flatten", "squeeze", "unsqueeze", "expand", "transpose", "permute",
        ".T", "getitem", "ng.cat", "ng.stack", "softmax", "log_softmax", "F.relu",
        "F.sigmoid", "F.tanh", "F.softmax", "F.log_softmax", "F.mse_loss", "F.cross_entropy",
        "F.nll_loss", "F.linear", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge", "cmp_eq", "cmp_ne",
        "remainder", "ng.fmod", "log1p", "expm1", "erf", "exp_", "log_", "sqrt_", "sin_",
        "F.softplus", "F.gelu", "F.leaky_relu", "F.elu", "F.silu", "prod", "var", "std", "norm",
        "cumsum", "gather", "scatter_add", "masked_fill", "index_select", "flip", "roll",
        "chunk", "split", "unbind", "narrow", "repeat", "tile", "tril", "triu", "isclose",
        "F.binary_cross_entropy", "F.binary_cross_entropy_with_logits", "F.l1_loss",
        "F.smooth_l1_loss",
        # the ops a training script reaches for
        "sort", "argsort", "topk", "einsum", "ng.bmm", "all", "any",
    }
    assert required <= names, required - names


# ----------------------------------------------------------------------------- kinks and ties
# Random inputs never sit on a kink; these do, and the subgradient picked must be torch's.
KINKS = [
    ("relu_at_0", lambda m, x: x.relu(), [[0.0, -1.0, 2.0]]),
    ("abs_at_0", lambda m, x: x.abs(), [[0.0, -1.0, 2.0]]),
    ("clamp_at_bounds", lambda m, x: x.clamp(-1.0, 1.0), [[-1.0, 1.0, 0.0, 3.0]]),
    ("clamp_min_at_bound", lambda m, x: x.clamp(min=0.0), [[0.0, 2.0]]),
    ("maximum_tie", lambda m, x, y: m.maximum(x, y), [[1.0, 2.0, 3.0], [1.0, 0.0, 3.0]]),
    ("minimum_tie", lambda m, x, y: m.minimum(x, y), [[1.0, 2.0, 3.0], [1.0, 0.0, 3.0]]),
    ("amax_tie", lambda m, x: x.amax(), [[1.0, 3.0, 3.0]]),
    ("amax_dim_tie", lambda m, x: x.amax(dim=1), [[[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]]),
    ("amin_tie", lambda m, x: x.amin(dim=0), [[[1.0, 3.0], [1.0, 0.0]]]),
    ("max_all_tie", lambda m, x: x.max(), [[1.0, 3.0, 3.0]]),
    ("min_all_tie", lambda m, x: x.min(), [[0.0, 0.0, 3.0]]),
    ("max_dim_tie", lambda m, x: x.max(dim=1)[0], [[[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]]),
    ("sqrt_of_square", lambda m, x: (x * x).sqrt(), [[1.0, -2.0]]),
    ("pow_0_exponent", lambda m, x: x ** 0, [[0.0, 2.0]]),
    ("pow_at_0", lambda m, x: x ** 2.0, [[0.0, 1.0]]),
    ("where_same", lambda m, x: m.where(x > 0, x, x * 2), [[0.0, 1.0, -1.0]]),
    ("prod_one_zero", lambda m, x: x.prod(), [[0.0, 2.0, 3.0]]),
    ("prod_two_zeros", lambda m, x: x.prod(dim=1), [[[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]]),
    ("norm_of_zeros", lambda m, x: x.norm(), [[0.0, 0.0]]),
    ("norm_p3_of_zeros", lambda m, x: x.norm(p=3), [[0.0, 0.0]]),
    ("softplus_past_threshold", lambda m, x: m.nn.functional.softplus(x), [[30.0, 100.0, -1.0]]),
    ("elu_large", lambda m, x: m.nn.functional.elu(x), [[100.0, -100.0]]),
]


@pytest.mark.parametrize("fn,data", [(k[1], k[2]) for k in KINKS], ids=[k[0] for k in KINKS])
def test_kinks_and_ties_match_torch(fn, data):
    xs = [ng.tensor(d, requires_grad=True) for d in data]
    ts = [torch.tensor(d, requires_grad=True) for d in data]
    out, tout = fn(ng, *xs), fn(torch, *ts)
    assert_close(out, tout.detach())
    g = np.linspace(1.0, 2.0, num=max(1, tout.numel())).reshape(tuple(tout.shape))
    g = g.astype(np.float32)
    out.backward(ng.tensor(g))
    tout.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        assert_close(x.grad, t.grad)


def test_max_dim_indices_on_ties_match_torch():
    data = [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [5.0, 4.0, 5.0]]
    for dim in (0, 1):
        got = ng.tensor(data).max(dim=dim)
        want = torch.tensor(data).max(dim=dim)
        assert_close(got[1], want[1])
        got = ng.tensor(data).min(dim=dim)
        want = torch.tensor(data).min(dim=dim)
        assert_close(got[1], want[1])


# ----------------------------------------------------------------------------- the registry
# The table is checked against the registry: every row (``ng.ops.REGISTRY``) must run its
# impl under some case above, so a new op without a test case fails here. Rows that only
# make sense outside an op table (device copies, hooks, in-place writes, the conv lowering)
# name the test file that covers them instead; the file must exist and mention the row.
ELSEWHERE = {
    "check_targets": "tests/nn/test_loss_target_checks.py",
    "dropout_mask": "tests/nn/test_nn_module.py",
    "hook": "tests/autograd/test_hooks.py",
    "detach": "tests/autograd/test_engine.py",  # eager detach makes no node: jit only
    "to_device": "tests/compiler/backends/cuda/test_cuda_allocator.py",
    # under @ng.jit only, with traced index tensors
    "gather": "tests/compiler/test_jit_tensor_indexing.py",
    "scatter_add": "tests/compiler/test_jit_tensor_indexing.py",
    "index_put_at": "tests/compiler/test_jit_tensor_indexing.py",
    # fused recurrent primitives and their gradients: checked against torch's layers and cells
    "gru_cell": "tests/ops/test_recurrent.py",
    "gru_cell_grad_gh": "tests/ops/test_recurrent.py",
    "gru_cell_grad_gi": "tests/ops/test_recurrent.py",
    "gru_cell_grad_h": "tests/ops/test_recurrent.py",
    "lstm_cell_c": "tests/ops/test_recurrent.py",
    "lstm_cell_c_grad_c": "tests/ops/test_recurrent.py",
    "lstm_cell_c_grad_gates": "tests/ops/test_recurrent.py",
    "lstm_cell_h": "tests/ops/test_recurrent.py",
    "lstm_cell_h_grad_c": "tests/ops/test_recurrent.py",
    "lstm_cell_h_grad_gates": "tests/ops/test_recurrent.py",
    "lstm_layer": "tests/ops/test_recurrent.py",
    "lstm_layer_grad": "tests/ops/test_recurrent.py",
    # max pooling and its gradient pair, with PyTorch's tie, NaN and overlap rules
    "max_pool": "tests/ops/test_max_pool_primitive.py",
    "max_pool_gather": "tests/ops/test_max_pool_primitive.py",
    "max_pool_scatter": "tests/ops/test_max_pool_primitive.py",
    # the eager convolution, its windows and their gradients, every order against torch
    "conv": "tests/ops/test_convolution.py",
    "conv_cols_grad": "tests/ops/test_convolution.py",
    "conv_weight_grad": "tests/ops/test_convolution.py",
    "conv_windows": "tests/ops/test_convolution.py",
    "conv_windows_add": "tests/ops/test_convolution.py",
    # in-place asinh_, acosh_, atanh_: values and torch's backward error
    "asinh_inplace": "tests/test_dtypes_small_ints.py",
    "acosh_inplace": "tests/test_dtypes_small_ints.py",
    "atanh_inplace": "tests/test_dtypes_small_ints.py",
}


@pytest.fixture(scope="module")
def exercised():
    """The registry rows whose impl ran while every case's samples went forward and
    backward (float64, grads of grads where the case has them)."""
    from numgrad.ops.registry import REGISTRY
    seen, originals = set(), {}
    for prim in REGISTRY.values():
        if callable(prim.impl):
            originals[prim] = prim.impl

            def spy(*a, _impl=prim.impl, _name=prim.name, **k):
                seen.add(_name)
                return _impl(*a, **k)
            object.__setattr__(prim, "impl", spy)
    try:
        for op, s in ((op, s) for op in OPS for s in op.samples):
            arrays = make_arrays(op, s, "float64" if "float64" in op.dtypes else op.dtypes[0],
                                 "fwd")  # (integer-only ops: bitwise)
            xs = ng_inputs(arrays, op.differentiable)
            outs = _float_outputs(as_tuple(op.ng_fn(*xs, **s.kwargs)))
            leaves = [x for x in xs if x.requires_grad]
            if op.differentiable and outs and leaves:
                total = sum((o * o).sum() for o in outs)
                gs = ng.autograd.grad(total, leaves, create_graph=op.gradgrad, allow_unused=True)
                if op.gradgrad:
                    gs = [g for g in gs if g is not None and g.requires_grad]
                    if gs:
                        sum(g.sum() for g in gs).backward()
    finally:
        for prim, impl in originals.items():
            object.__setattr__(prim, "impl", impl)
    return seen


# numgrad.linalg's rows: values, gradients (torch's and gradcheck's, second order) and errors
ELSEWHERE.update({n: "tests/linalg/test_decompositions.py" for n in (
    "linalg_inv", "linalg_det", "linalg_slogdet", "linalg_solve", "linalg_solve_triangular",
    "linalg_cholesky", "linalg_qr", "linalg_eigh", "linalg_svd", "linalg_pinv",
    "linalg_matrix_exp")})
ELSEWHERE.update({n: "tests/linalg/test_matrix_functions.py"
                  for n in ("diagonal", "diagonal_embed")})
ELSEWHERE["linalg_vector_norm0"] = "tests/linalg/test_node_names.py"  # eager and jit vs torch

def _registry_names():
    from numgrad.ops.registry import REGISTRY
    return sorted(REGISTRY)


@pytest.mark.parametrize("name", _registry_names())
def test_every_registry_row_has_a_case(name, exercised):
    if name in ELSEWHERE:
        import pathlib
        path = pathlib.Path(__file__).parents[2] / ELSEWHERE[name]
        assert path.exists(), f"{name}: {ELSEWHERE[name]} is gone"
        return
    assert name in exercised, (f"registry row {name!r} runs under no op-table case: add an "
                               "OpInfo to OPS (or name the test file covering it in ELSEWHERE)")


def test_elsewhere_names_only_registry_rows():
    assert set(ELSEWHERE) <= set(_registry_names())

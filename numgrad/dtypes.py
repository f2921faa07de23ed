"""dtypes: numgrad's dtypes (bool, int32, int64, float32, float64) and PyTorch's promotion.

Room: leaf. Imports only NumPy.
"""
from __future__ import annotations

import numpy as np


class dtype:
    """A numgrad dtype: a thin name over a NumPy dtype, printed as ``numgrad.float32``."""

    __slots__ = ("name", "np", "is_floating_point", "_rank")

    def __init__(self, name, np_dtype, rank):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self._rank = rank  # bool < int < float, used by promotion

    def __repr__(self):
        return f"numgrad.{self.name}"

    def __reduce__(self):
        return (from_numpy_dtype, (self.np,))


bool_ = dtype("bool", np.bool_, 0)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 2)
float32 = dtype("float32", np.float32, 3)
float64 = dtype("float64", np.float64, 4)

_BY_NUMPY = {d.np: d for d in (bool_, int32, int64, float32, float64)}
# NumPy dtypes without a numgrad twin widen to the nearest one, as torch.from_numpy
# would refuse them; widening keeps every value exact.
_WIDEN = {"i": int64, "u": int64, "f": float64, "b": bool_}

default_float = float32

# PyTorch's name of each dtype in its messages and legacy type names ("expected scalar type
# Float", "torch.FloatTensor", "result type Long"): the one table every such text reads.
SCALAR_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
                "bool": "Bool"}


def from_numpy_dtype(np_dtype) -> dtype:
    np_dtype = np.dtype(np_dtype)
    d = _BY_NUMPY.get(np_dtype)
    if d is not None:
        return d
    if np_dtype == np.float16:
        return float32
    w = _WIDEN.get(np_dtype.kind)
    if w is None:
        raise TypeError(f"numgrad has no dtype for NumPy's {np_dtype}; use float32, float64, "
                        "int64, int32 or bool")
    return w


def as_dtype(d) -> dtype:
    """Accept a numgrad dtype, a NumPy dtype or a Python type (float, int, bool)."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return default_float
    if d is int:
        return int64
    if d is bool:
        return bool_
    return from_numpy_dtype(d)


def of_scalar(x) -> dtype:
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (int, np.integer)):
        return int64
    return default_float


def promote(dtypes_dims_scalars) -> dtype:
    """PyTorch's result type for a mix of tensors and Python scalars.

    ``dtypes_dims_scalars`` is a sequence of ``(dtype, ndim, is_python_scalar)``.
    Dimensioned tensors win within a category; 0-d tensors and Python scalars
    only matter when they lift the category (int tensor * 2.5 -> float32).
    """
    best = {0: None, 1: None, 2: None}  # priority: dimensioned, 0-d tensor, scalar
    for d, ndim, is_scalar in dtypes_dims_scalars:
        tier = 2 if is_scalar else (1 if ndim == 0 else 0)
        cur = best[tier]
        if cur is None or d._rank > cur._rank:
            best[tier] = d
    result = best[0]
    for tier in (1, 2):
        d = best[tier]
        if d is None:
            continue
        if result is None:
            result = d
        elif _category(d) > _category(result):
            # A float scalar lifts an int tensor to the default float, not float64.
            result = default_float if tier == 2 and d.is_floating_point else d
    return result


def _category(d):
    return 0 if d is bool_ else (1 if d.np.kind == "i" else 2)

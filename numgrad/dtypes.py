"""dtypes: numgrad's dtypes (bool, uint8, int8, int16, int32, int64, float32, float64) and
PyTorch's promotion.

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
        self._rank = rank  # bool < uint8 < int8 < ... < int64 < float32 < float64

    def __repr__(self):
        return f"numgrad.{self.name}"

    def __reduce__(self):
        return (from_numpy_dtype, (self.np,))


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 2)
int16 = dtype("int16", np.int16, 3)
int32 = dtype("int32", np.int32, 4)
int64 = dtype("int64", np.int64, 5)
float32 = dtype("float32", np.float32, 6)
float64 = dtype("float64", np.float64, 7)

ALL = (bool_, uint8, int8, int16, int32, int64, float32, float64)
_BY_NUMPY = {d.np: d for d in ALL}
# NumPy dtypes without a numgrad twin widen to the nearest one, as torch.from_numpy
# would refuse them; widening keeps every value exact.
_WIDEN = {"i": int64, "u": int64, "f": float64, "b": bool_}

default_float = float32

# PyTorch's name of each dtype in its messages and legacy type names ("expected scalar type
# Float", "torch.FloatTensor", "result type Long"): the one table every such text reads.
SCALAR_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
                "bool": "Bool", "int16": "Short", "int8": "Char", "uint8": "Byte"}
# The dtypes as one phrase, for the errors that list them.
NAMES_TEXT = "float32, float64, int64, int32, int16, int8, uint8 and bool"


def from_numpy_dtype(np_dtype) -> dtype:
    np_dtype = np.dtype(np_dtype)
    d = _BY_NUMPY.get(np_dtype)
    if d is not None:
        return d
    if np_dtype == np.float16:
        return float32
    w = _WIDEN.get(np_dtype.kind)
    if w is None:
        raise TypeError(f"numgrad has no dtype for NumPy's {np_dtype}; use one of "
                        f"{NAMES_TEXT}")
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
        best[tier] = d if cur is None or cur is d else promote_types(cur, d)
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


def promote_types(type1, type2) -> dtype:
    """The smallest dtype both convert to (``torch.promote_types``): the wider of the two,
    except that uint8 and int8 meet at int16 (neither holds the other's range).

    >>> ng.promote_types(ng.uint8, ng.int8)
    numgrad.int16
    """
    a, b = as_dtype(type1), as_dtype(type2)
    if a is b:
        return a
    if {a, b} == _U8_I8:
        return int16
    return a if a._rank > b._rank else b


_U8_I8 = {uint8, int8}


def result_type(tensor1, tensor2) -> dtype:
    """The dtype an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or Python numbers)
    computes in (``torch.result_type``): 0-d tensors and numbers only lift the category.

    >>> ng.result_type(ng.tensor([1], dtype=ng.int8), 1000), ng.result_type(ng.tensor([1]), 2.5)
    (numgrad.int8, numgrad.float32)
    """
    keys = []
    for t in (tensor1, tensor2):
        if hasattr(t, "dtype") and hasattr(t, "ndim"):  # a Tensor (dtypes imports no tensor)
            keys.append((t.dtype, t.ndim, False))
        elif isinstance(t, (bool, int, float, np.bool_, np.integer, np.floating)):
            keys.append((of_scalar(t), 0, True))
        else:
            raise TypeError(f"result_type() received an invalid combination of arguments - got "
                            f"({type(tensor1).__name__}, {type(tensor2).__name__})")
    return promote(keys)


def _category(d):
    return 0 if d is bool_ else (1 if d.np.kind in "iu" else 2)


def wrapped_scalar(x, np_dtype):
    """A Python number as a 0-d array of the integer ``np_dtype``, wrapping out-of-range ints
    as PyTorch's C++ cast does (``int8_tensor + 1000`` adds -24); NumPy would raise. An int
    past int64 still raises, as PyTorch's does."""
    bounds = _NARROW.get(np_dtype)  # (on dispatch's path: a dict lookup, no np.iinfo)
    if bounds is not None and isinstance(x, (int, np.integer)) \
            and not isinstance(x, (bool, np.bool_)):
        low, high = bounds
        if not low <= x <= high:
            x = (int(x) - low) % (high - low + 1) + low
    return np.asarray(x, np_dtype)


# The integer dtypes narrower than int64: their (min, max).
_NARROW = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
           for t in (np.uint8, np.int8, np.int16, np.int32)}


_C_NAMES = {"int8": "int8_t", "int16": "int16_t", "uint8": "uint8_t", "int32": "int"}


def checked_scalar(x, np_dtype):
    """A Python number set into a tensor of an integer ``np_dtype`` narrower than int64
    (``fill_``, ``full``, ``clamp``'s bounds), as PyTorch's checked conversion: a number past
    the dtype's range raises RuntimeError, except that an unsigned dtype takes the ints
    ``-max..-1`` and wraps them (``fill_(-1)`` on uint8 is 255; -1.0 raises). Other numbers
    and dtypes pass through. The message names the C type (``int8_t``), as PyTorch's does."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype not in _NARROW or isinstance(x, (bool, np.bool_)) \
            or not isinstance(x, (int, float, np.integer, np.floating)):
        return x
    check_range(x, x, np_dtype, floats=isinstance(x, (float, np.floating)))
    return int(wrapped_scalar(x, np_dtype)) if isinstance(x, (int, np.integer)) else x


def check_range(lo, hi, np_dtype, c_name=True, floats=False):
    """Raise PyTorch's RuntimeError unless ``lo..hi`` (``floats``: float values) fit
    ``np_dtype`` (see checked_scalar)."""
    info = np.iinfo(np_dtype)
    low = -int(info.max) if np_dtype.kind == "u" and not floats else int(info.min)
    if not (low <= lo and hi <= info.max):
        name = _C_NAMES.get(np_dtype.name, np_dtype.name) if c_name else np_dtype.name
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")

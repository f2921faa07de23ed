"""ops.methods: binds the ops onto ``Tensor`` as methods and operators.

Room: ops. Nothing here computes: each method forwards to the one definition
of its op, so ``x.exp()``, ``ng.exp(x)`` and the tracer all run the same code.
"""
from __future__ import annotations

import numbers

import numpy as np

import numgrad.dtypes as _dt
from numgrad.grad_mode import no_grad
import numgrad.ops.elementwise as E
import numgrad.ops.reduction as R
import numgrad.ops.layout as L
import numgrad.ops.indexing as I
import numgrad.ops.linalg as linalg
import numgrad.ops.inplace as inplace
import numgrad.ops.special as SP
import numgrad.ops.composites as C
import numgrad.ops.api as api
import numgrad.ops.logical as logical
import numgrad.ops.sorting as sorting
import numgrad.ops.keywords as keywords
import numgrad.ops.new_tensors as new_tensors
import numgrad.ops.products as products
import numgrad.ops.exposure as exposure
import numgrad.ops.masked as masked
import numgrad.ops.contiguity as contiguity
import numgrad.ops.small_math as small_math
import numgrad.ops.bitwise as BW
import numgrad.ops.trig as trig
import numgrad.ops.floor_division as floor_div
import numgrad.ops.movedim as MD
from numgrad.ops.registry import REGISTRY
from numgrad.ops.wrapped import pow
from numgrad.ops.device_copy import transfer
from numgrad.ops.inplace import apply_inplace
from numgrad.ops.numpy_interop import array_ufunc, as_constant, operand
from numgrad.tensor import Tensor, device as _device


def _operand(x):
    return isinstance(x, (Tensor, numbers.Number, np.bool_, np.number))


def _binary(prim, reflected=False):
    # NumPy arrays are constants here (see ops.numpy_interop), in both orders.
    if reflected:
        def method(self, other):
            other = operand(other)
            return NotImplemented if other is None else prim(other, self)
    else:
        def method(self, other):
            other = operand(other)
            return NotImplemented if other is None else prim(self, other)
    method.__name__ = prim.name
    op = _OPERATOR.get(prim.name, prim.name)
    method.__doc__ = (f"``{'other ' + op + ' self' if reflected else 'self ' + op + ' other'}``"
                      f" (``torch.Tensor.{prim.name}``); NumPy arrays are constants, other "
                      "types give NotImplemented.")
    return method


_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/", "eq": "==", "ne": "!=", "lt": "<",
             "le": "<=", "gt": ">", "ge": ">=", "logical_and": "&", "logical_or": "|",
             "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
             "remainder": "%", "fmod": "fmod", "floor_divide": "//",
             "bitwise_left_shift": "<<", "bitwise_right_shift": ">>"}


def _rpow(self, other):
    other = operand(other)
    return NotImplemented if other is None else E.pow_(other, self)


def _pow_method(self, other):
    other = operand(other)
    return NotImplemented if other is None else pow(self, other)


def to(self, *args, **kwargs) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other_tensor)``
    (``torch.Tensor.to``); casts to int64/bool leave the graph. Raises TypeError for an
    argument that is none of these."""
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, (_dt.dtype, type)) or isinstance(a, np.dtype):
            dtype = a
        elif isinstance(a, (str, _device)):
            dev = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    out = self
    if dtype is not None and _dt.as_dtype(dtype) is not self.dtype:
        target = _dt.as_dtype(dtype)
        if target.is_floating_point:
            out = E.to_dtype(out, dtype=target.np)
        else:
            # Integers and bools carry no gradient: PyTorch's x.long() has no grad_fn.
            with no_grad():
                out = E.to_dtype(out, dtype=target.np)
    if dev is not None and _device(dev) != out.device:
        out = transfer(out, _device(dev))
    return out


def _missing_dtype(method, torch_dtype, instead):
    def convert(self, memory_format=None):
        raise TypeError(f"Tensor.{method}() converts to {torch_dtype}, which numgrad does not "
                        f"have (its dtypes are {_dt.NAMES_TEXT}); use "
                        f".{instead}() instead")
    convert.__name__ = method
    convert.__doc__ = (f"PyTorch's ``Tensor.{method}()`` ({torch_dtype}); numgrad has no such "
                       f"dtype, so this raises TypeError and names ``.{instead}()``.")
    return convert


def _matmul(self, other):
    other = operand(other)
    return linalg.matmul(self, other) if isinstance(other, Tensor) else NotImplemented


def _rmatmul(self, other):
    other = operand(other)
    return linalg.matmul(other, self) if isinstance(other, Tensor) else NotImplemented


def _setitem(self, index, value) -> None:
    """``x[index] = value`` in place (``torch.Tensor.__setitem__``); the graph records the
    write. Raises TypeError for a value that is not a tensor or number, IndexError for an
    out-of-range index, RuntimeError on a leaf that requires grad.
    """
    if isinstance(index, Tensor) and index.dtype is _dt.uint8 and (
            not isinstance(value, Tensor) or value.ndim == 0):  # PyTorch's masked_fill_ path
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    if isinstance(value, Tensor) or _operand(value):
        apply_inplace(self, I.index_put, index, value)
    else:
        raise TypeError(f"can't assign a {type(value).__name__} to a Tensor")


def _expand_as(self, other) -> Tensor:
    """This tensor expanded to ``other``'s shape (``torch.Tensor.expand_as``)."""
    return L.expand(self, other.shape)


def _softmax(self, dim) -> Tensor:
    """``ng.softmax(self, dim)`` (``torch.Tensor.softmax``)."""
    return C.softmax(self, dim)


def _log_softmax(self, dim) -> Tensor:
    """``ng.log_softmax(self, dim)`` (``torch.Tensor.log_softmax``)."""
    return C.log_softmax(self, dim)


def _inplace_binary(prim):
    def method(self, other):
        if isinstance(other, np.ndarray):
            other = as_constant(other)
        return apply_inplace(self, prim, other)
    method.__doc__ = (f"In-place ``{prim.name}`` (``torch.Tensor.{prim.name}_``): writes the "
                      "result into this tensor and bumps its version; NumPy arrays are "
                      "constants. Raises RuntimeError on a leaf that requires grad (under grad "
                      "mode), or when the result cannot be cast back to this tensor's dtype.")
    method.__name__ = prim.name + "_"
    return method


def _inplace(fn, name):
    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = (f"In-place ``{name[:-1]}`` (``torch.Tensor.{name}``): writes the result "
                      "into this tensor and bumps its version. Raises RuntimeError on a leaf that "
                      "requires grad (under grad mode), or when the result cannot be cast back "
                      "to this tensor's dtype.")
    return method


def _neg(self):
    """``-x`` (``torch.Tensor.__neg__``). Raises RuntimeError for bool."""
    return E.neg(self)


def _pos(self):
    """``+x``: the tensor itself."""
    return self


def _abs(self):
    """``abs(x)`` (``torch.Tensor.__abs__``)."""
    return E.abs_(self)


def _getitem(self, index):
    """``x[index]``: basic indexing gives a view, advanced (int or bool tensors, lists)
    a gather (``torch.Tensor.__getitem__``). Raises IndexError for an out-of-range index."""
    return I.getitem(self, index)


def _mT(self):
    """The last two dims swapped (``torch.Tensor.mT``)."""
    return L.transpose(self, -1, -2)


def _T(self):
    """All dims reversed (``torch.Tensor.T``)."""
    return L.T(self)


def _float(self):
    """A float32 copy (``torch.Tensor.float``); stays in the graph."""
    return to(self, _dt.float32)


def _double(self):
    """A float64 copy (``torch.Tensor.double``); stays in the graph."""
    return to(self, _dt.float64)


def _long(self):
    """An int64 copy (``torch.Tensor.long``); integers carry no gradient."""
    return to(self, _dt.int64)


def _int(self):
    """An int32 copy (``torch.Tensor.int``); integers carry no gradient."""
    return to(self, _dt.int32)


def _cast_method(method, d):
    def convert(self, memory_format=None):
        return to(self, d)
    convert.__name__ = convert.__qualname__ = method
    convert.__doc__ = (f"This tensor as {d.name} (``torch.Tensor.{method}``); integers carry no "
                       f"gradient.\n\n    >>> ng.tensor([1, 300]).{method}().dtype\n    "
                       f"numgrad.{d.name}\n    ")
    return convert


def _bool(self):
    """A bool copy (``torch.Tensor.bool``); bools carry no gradient."""
    return to(self, _dt.bool_)


def _type_as(self, other):
    """This tensor in ``other``'s dtype (``torch.Tensor.type_as``)."""
    return to(self, other.dtype)


def _cpu(self):
    """This tensor on the CPU (``torch.Tensor.cpu``); itself if it is there already."""
    return to(self, "cpu")


def _cuda(self, device=None):
    """This tensor on a CUDA device (``torch.Tensor.cuda``). Raises RuntimeError when no
    CUDA device is available."""
    return to(self, device or "cuda")


_METHODS = {
    # operators
    "__add__": _binary(E.add), "__radd__": _binary(E.add, True),
    "__sub__": _binary(E.sub), "__rsub__": _binary(E.sub, True),
    "__mul__": _binary(E.mul), "__rmul__": _binary(E.mul, True),
    "__truediv__": _binary(E.div), "__rtruediv__": _binary(E.div, True),
    "__pow__": _pow_method, "__rpow__": _rpow,
    "__matmul__": _matmul, "__rmatmul__": _rmatmul, "__array_ufunc__": array_ufunc,
    "__neg__": _neg, "__pos__": _pos, "__abs__": _abs,
    "__eq__": _binary(E.eq), "__ne__": _binary(E.ne), "__lt__": _binary(E.lt),
    "__le__": _binary(E.le), "__gt__": _binary(E.gt), "__ge__": _binary(E.ge),
    "__and__": _binary(BW.bitwise_and), "__or__": _binary(BW.bitwise_or),
    "__xor__": _binary(BW.bitwise_xor), "__rand__": _binary(BW.bitwise_and, True),
    "__ror__": _binary(BW.bitwise_or, True), "__rxor__": _binary(BW.bitwise_xor, True),
    "__invert__": BW.invert, "__getitem__": _getitem, "__setitem__": _setitem,
    "__mod__": _binary(SP.remainder), "__rmod__": _binary(SP.remainder, True),
    # arithmetic and elementwise functions: the public function, tensor first
    "matmul": linalg.matmul, "softmax": _softmax, "log_softmax": _log_softmax,
    # every registry row with an api: its method and in-place variant (ops.exposure)
    **exposure.methods(REGISTRY.values(), api.FUNCTIONS),
    # reductions
    "sum": R.sum, "mean": R.mean, "amax": R.amax, "amin": R.amin, "max": R.max, "min": R.min,
    "argmax": R.argmax, "argmin": R.argmin,
    # layout
    "reshape": L.reshape, "view": L.view, "flatten": L.flatten, "squeeze": L.squeeze,
    "unsqueeze": L.unsqueeze, "expand": L.expand, "expand_as": _expand_as,
    "broadcast_to": L.broadcast_to, "transpose": L.transpose, "permute": L.permute, "t": L.t,
    "T": property(_T), "mT": property(_mT),
    # conversion
    "to": to, "float": _float, "double": _double, "long": _long, "int": _int, "bool": _bool,
    "type_as": _type_as, "cpu": _cpu, "cuda": _cuda,
    "short": _cast_method("short", _dt.int16), "char": _cast_method("char", _dt.int8),
    "byte": _cast_method("byte", _dt.uint8),
    **{m: _missing_dtype(m, d, i) for m, d, i in (
        ("half", "float16", "float"), ("bfloat16", "bfloat16", "float"))},
    # in-place
    "zero_": inplace.zero_, "fill_": inplace.fill_, "copy_": inplace.copy_,
    # `t += o` is in place, as in PyTorch (same version bump, same leaf error).
    "__iadd__": _inplace_binary(E.add), "__isub__": _inplace_binary(E.sub),
    "__imod__": _inplace_binary(SP.remainder),
    "__iand__": _inplace_binary(BW.bitwise_and), "__ior__": _inplace_binary(BW.bitwise_or),
    "__ixor__": _inplace_binary(BW.bitwise_xor),
}
_METHODS.update({"__imul__": _METHODS["mul_"], "__itruediv__": _METHODS["div_"],
                 "__ipow__": _METHODS["pow_"]})
_METHODS.update({
    "var": C.var, "std": C.std, "norm": C.norm, "prod": C.prod, "cumsum": C.cumsum,
    "flip": C.flip, "roll": C.roll, "index_select": C.index_select, "gather": C.gather,
    "scatter_add": C.scatter_add, "scatter_add_": _inplace(C.scatter_add, "scatter_add_"),
    "masked_fill": C.masked_fill, "masked_fill_": _inplace(C.masked_fill, "masked_fill_"),
    "narrow": C.narrow, "split": C.split, "chunk": C.chunk, "unbind": C.unbind,
    "repeat": C.repeat, "tile": C.tile, "tril": C.tril, "triu": C.triu,
    "tril_": _inplace(C.tril, "tril_"), "triu_": _inplace(C.triu, "triu_"),
    "isclose": C.isclose, "allclose": C.allclose,
    "all": logical.all, "any": logical.any, "equal": logical.equal, "bmm": linalg.bmm,
    "sort": sorting.sort, "argsort": sorting.argsort, "topk": sorting.topk,
})


def _view_as(self, other) -> Tensor:
    """This tensor viewed with ``other``'s shape (``torch.Tensor.view_as``)."""
    return L.view(self, other.shape)


def _reshape_as(self, other) -> Tensor:
    """This tensor reshaped to ``other``'s shape (``torch.Tensor.reshape_as``)."""
    return L.reshape(self, other.shape)


_METHODS.update({
    "mm": products.mm, "mv": products.mv, "addmm": products.addmm,
    "baddbmm": products.baddbmm, "view_as": _view_as, "reshape_as": _reshape_as,
    "type": new_tensors.type_, **{n: getattr(new_tensors, n) for n in (
        "new_ones", "new_zeros", "new_empty", "new_full", "new_tensor")},
})
_METHODS.update({n: getattr(masked, n) for n in ("masked_select", "nonzero", "argwhere",
                                                  "unique")})
_METHODS.update({n: getattr(contiguity, n) for n in ("contiguous", "is_contiguous")})
_METHODS.update({n: getattr(small_math, n) for n in (
    "isfinite", "isnan", "isinf", "floor", "ceil", "trunc", "frac", "square", "reciprocal",
    "rsqrt", "lerp", "addcmul", "addcdiv", "dot", "outer")})
_METHODS.update(trig.INPLACE_METHODS)  # asinh_, acosh_, atanh_: no derivative, as PyTorch's
_METHODS.update({"__floordiv__": _binary(floor_div.floor_divide),  # int // int stays an int
                 "__rfloordiv__": _binary(floor_div.floor_divide, True),
                 "__ifloordiv__": _inplace_binary(floor_div.floor_divide),
                 "__lshift__": _binary(BW.bitwise_left_shift),
                 "__rlshift__": _binary(BW.bitwise_left_shift, True),
                 "__ilshift__": _inplace_binary(BW.bitwise_left_shift),
                 "__rshift__": _binary(BW.bitwise_right_shift),
                 "__rrshift__": _binary(BW.bitwise_right_shift, True),
                 "__irshift__": _inplace_binary(BW.bitwise_right_shift)})
import numgrad.ops.diagonals as diagonals  # noqa: E402  (linear algebra methods)
import numgrad.ops.matrices as matrices  # noqa: E402
_METHODS.update({n: getattr(diagonals, n) for n in ("diagonal", "diag_embed", "diag", "trace",
                                                     "diagflat", "diagonal_scatter",
                                                     "fill_diagonal_")})
_METHODS.update({n: getattr(matrices, n) for n in ("det", "logdet", "inverse", "pinverse",
                                                   "matrix_power", "cholesky_solve",
                                                   "cholesky_inverse", "matrix_exp")})
_METHODS.update({n: getattr(matrices, n + "_top") for n in ("slogdet", "cholesky", "svd",
                                                            "cross")})
_METHODS.update({"movedim": MD.movedim, "moveaxis": MD.moveaxis})
import numgrad.ops.view_dtype as view_dtype  # noqa: E402  (view(dtype) besides view(*shape))
_METHODS["view"] = view_dtype.view
# PyTorch's keyword names: axis= wherever dim= is taken, other= for a second operand (the
# first is self, so input= is not a method's keyword).
_METHODS.update({n: keywords.with_keywords(f, names) for n, f in _METHODS.items()
                 for names in [{k: v for k, v in keywords.renames(f).items() if k != "input"}]
                 if names})


def install():
    """Bind every method and operator onto ``Tensor`` (once, at import)."""
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)


install()
exposure.follow_registry()  # rows registered from now on (ops.register) are public at once

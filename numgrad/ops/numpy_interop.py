"""ops.numpy_interop: what happens when a Tensor meets a NumPy array.

Room: ops. The rule: a NumPy array next to a Tensor is a
constant, as if wrapped with ``ng.tensor(a)``. Both orders give a Tensor and keep the
graph: ``x * a`` goes through ``Tensor.__mul__``, and ``a * x`` reaches
``Tensor.__array_ufunc__``, which maps NumPy's ufunc onto the numgrad op.
``x += a`` updates ``x`` in place (a numgrad in-place op). ``a += x`` asks NumPy to
write into ``a``: allowed when no operand requires grad (the values are written), a
``TypeError`` otherwise, since an ndarray cannot hold a graph. A ufunc numgrad has no op
for runs on the values when nothing requires grad, and raises otherwise.

PyTorch 2.13 instead raises "Can't call numpy() on Tensor that requires grad" for
``x * a`` and NumPy's unrelated "Concatenation operation" error for ``a + x``.
"""
from __future__ import annotations

import numbers

import numpy as np

import numgrad.ops.wrapped as wrapped
from numgrad.tensor import Tensor


def as_constant(a):
    """An ndarray as a constant Tensor (numgrad's dtype for it, as ``ng.tensor`` picks)."""
    from numgrad.creation import _to_array
    return Tensor._make(_to_array(a))


def operand(x):
    """``x`` ready for an operator: Tensors and numbers as they are, ndarrays as constants,
    None for anything else (the operator then returns NotImplemented)."""
    if isinstance(x, (Tensor, numbers.Number, np.bool_, np.number)):
        return x
    if isinstance(x, np.ndarray):
        return as_constant(x)
    return None


def _table():
    import numgrad.ops.elementwise as E
    import numgrad.ops.linalg as linalg
    table = {
        np.add: E.add, np.subtract: E.sub, np.multiply: E.mul, np.true_divide: E.div,
        np.power: wrapped.pow, np.maximum: E.maximum, np.minimum: E.minimum,
        np.negative: E.neg, np.absolute: E.abs_, np.sign: E.sign, np.exp: E.exp,
        np.log: E.log, np.sqrt: E.sqrt, np.sin: E.sin, np.cos: E.cos, np.tanh: E.tanh,
        np.equal: E.eq, np.not_equal: E.ne, np.less: E.lt, np.less_equal: E.le,
        np.greater: E.gt, np.greater_equal: E.ge, np.logical_and: E.logical_and,
        np.logical_or: E.logical_or, np.logical_not: E.logical_not, np.matmul: linalg.matmul,
    }
    for ufunc, name in ((np.remainder, "remainder"), (np.fmod, "fmod"), (np.log1p, "log1p"),
                        (np.expm1, "expm1")):
        fn = getattr(E, name, None)
        if fn is not None:
            table[ufunc] = fn
    return table


_UFUNCS = None


def array_ufunc(self, ufunc, method, *inputs, out=None, **kwargs):
    """``Tensor.__array_ufunc__``: NumPy's ufuncs on Tensors (see the module docstring)."""
    global _UFUNCS
    if _UFUNCS is None:
        _UFUNCS = _table()
    grads = any(isinstance(a, Tensor) and a.requires_grad for a in inputs)
    if out is not None:
        if any(isinstance(o, Tensor) for o in out):
            raise TypeError(f"NumPy's {ufunc.__name__} cannot write into a numgrad Tensor "
                            "(out=...); use the numgrad op, or an in-place method such as "
                            "x.add_(y)")
        if grads:
            raise TypeError(f"NumPy's in-place {ufunc.__name__} would write a Tensor that "
                            "requires grad into a NumPy array, which cannot hold its graph; "
                            "write `a = a + x` (a Tensor) or use x.detach()")
    fn = _UFUNCS.get(ufunc) if method == "__call__" and out is None and not kwargs else None
    if fn is not None:
        return fn(*[as_constant(a) if isinstance(a, np.ndarray) else a for a in inputs])
    for a in inputs:
        if isinstance(a, Tensor) and type(a._data) is not np.ndarray:
            a._concrete("array")  # traced under @ng.jit: raises TracingError saying what to write
    if grads:
        raise TypeError(f"NumPy's {ufunc.__name__}{'' if method == '__call__' else '.' + method}"
                        " has no numgrad op to map onto, and an operand requires grad; use the "
                        "ng.* op, or apply it to x.detach().numpy()")
    arrays = [a._concrete("array") if isinstance(a, Tensor) else a for a in inputs]
    if out is not None:
        kwargs["out"] = out
    return getattr(ufunc, method)(*arrays, **kwargs)

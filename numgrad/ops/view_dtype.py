"""ops.view_dtype: ``Tensor.view(dtype)``, the same bytes read as another dtype.

Room: ops. PyTorch's ``view(dtype)`` is an alias outside autograd (its result never requires
grad) that shares the storage and the version counter: writes through either side reach the
other. Between dtypes of one element size the shape is kept; otherwise the last dim, which
must be contiguous, is split or merged, under PyTorch's checks and texts (``view_dtype`` in
ATen), strides and storage offsets counted in elements as PyTorch counts them.
"""
from __future__ import annotations

import numpy as np

import numgrad.ops.layout as L
from numgrad.dtypes import SCALAR_NAMES, as_dtype, dtype as _dtype
from numgrad.errors import TracingError
from numgrad.tensor import Tensor


def _storage_offset(a):
    """The element offset of ``a`` into the array that owns its memory."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    return (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) \
        // a.itemsize


def _check(a, new, old_name, new_name):
    """PyTorch's refusals of viewing ``a`` as NumPy dtype ``new`` (different element size)."""
    what = f"to view {old_name} as {new_name} (different element sizes)"
    if a.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    strides = [s // a.itemsize for s in a.strides]
    if a.size == 0:  # NumPy's strides of an empty array are arbitrary; PyTorch's contiguous
        strides = list(np.cumprod([1] + [max(n, 1) for n in a.shape[:0:-1]])[::-1])
    if a.shape[-1] != 1 and strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    if new.itemsize < a.itemsize:
        return
    ratio = new.itemsize // a.itemsize
    if a.shape[-1] % ratio:
        raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                           f"{a.shape[-1]}")
    offset = _storage_offset(a)
    if offset % ratio:
        raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but "
                           f"got {offset}")
    for i, s in enumerate(strides[:-1]):
        if a.shape[i] != 1 and s % ratio:
            raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got "
                               f"{s}")


def view(x, *shape, dtype=None) -> Tensor:
    """``x.view(*shape)`` (a new shape, see ``numgrad.ops.layout.view``) or ``x.view(dtype)``:
    the same bytes read as ``dtype``, sharing storage and version counter, outside autograd
    (``torch.Tensor.view``). Between element sizes the last dim is split or merged.

    >>> ng.tensor([1.0]).view(ng.int32)
    tensor([1065353216], dtype=numgrad.int32)
    >>> ng.zeros(2, 4, dtype=ng.int8).view(ng.int32).shape
    torch.Size([2, 1])
    """
    if dtype is None and len(shape) == 1 and isinstance(shape[0], _dtype):
        dtype = shape[0]
    elif (dtype is not None and shape) or any(isinstance(s, (str, _dtype)) for s in shape):
        got = ", ".join(type(s).__name__ for s in shape + ((dtype,) if dtype else ()))
        raise TypeError(f"view() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (torch.dtype dtype)\n * (tuple of ints size)")
    if dtype is None:
        return L.view(x, *shape)
    if not isinstance(dtype, _dtype):
        raise TypeError(f"view(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    a = x._data
    if type(a) is not np.ndarray:
        raise TracingError("Tensor.view(dtype) reinterprets eager memory; @ng.jit does not "
                           "compile it (call it outside the compiled function)")
    new = as_dtype(dtype).np
    if new.itemsize != a.itemsize:
        _check(a, new, SCALAR_NAMES[x.dtype.name], SCALAR_NAMES[as_dtype(dtype).name])
    # PyTorch's view of a size-1 last dim has stride 1 whatever the array's says; NumPy reads
    # the last axis as contiguous only with that stride.
    if a.ndim and a.shape[-1] == 1 and a.strides[-1] != a.itemsize:
        a = np.lib.stride_tricks.as_strided(a, strides=a.strides[:-1] + (a.itemsize,))
    return Tensor._make(a.view(new), None, x._vc)

"""creation: factories (tensor, zeros, ones, rand, ...) and the random seed.

Room: core. Imports tensor and dtypes.
"""
from __future__ import annotations

import sys

import numpy as np

import numgrad.dtypes as _dt
import numgrad.defaults as _defaults
from numgrad.tensor import Tensor, device as _device

_rng = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Seed numgrad's random generator: rand, randn, randint and dropout
    (``torch.manual_seed``)."""
    global _rng
    _rng = np.random.default_rng(int(seed))
    return _rng


def _generator() -> np.random.Generator:
    """numgrad's random generator, for a draw. Every draw numgrad makes from it calls this:
    that call is what ``@ng.jit``'s trace watches for (``compiler.random_watch``)."""
    return _rng


def _infer_dtype(data):
    """PyTorch's inference: bools -> bool, ints -> int64, any float -> default float."""
    kinds = set()

    def walk(x):
        if isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, (bool, np.bool_)):
            kinds.add(_dt.bool_)
        elif isinstance(x, (int, np.integer)):
            kinds.add(_dt.int64)
        elif isinstance(x, (float, np.floating)):
            kinds.add(_dt.default_float)
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    walk(data)
    if not kinds:
        return _dt.default_float
    return max(kinds, key=lambda d: d._rank)


def _to_array(data, dtype=None):
    """Copy ``data`` into a fresh NumPy array with numgrad's dtype rules."""
    if isinstance(data, Tensor):
        arr = data._concrete("ng.tensor()")
        d = _dt.as_dtype(dtype) if dtype is not None else data.dtype
        return np.array(arr, dtype=d.np, copy=True)
    if isinstance(data, np.ndarray):
        d = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(data.dtype)
        return np.array(data, dtype=d.np, copy=True)
    if isinstance(data, (str, bytes, dict, set)) or data is None:
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    d = _dt.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    if isinstance(data, (list, tuple)) and any(isinstance(v, Tensor) for v in _flat(data)):
        data = _tensors_to_lists(data)
    try:
        if d.np.kind in "iu" and d.np.itemsize < 8:
            return _narrow_int_array(data, d.np)
        return np.array(data, dtype=d.np)
    except ValueError as e:
        raise ValueError(f"could not build a tensor from the given data: {e}") from None


def _narrow_int_array(data, np_dtype):
    """Python numbers into int32/int16/int8/uint8 as ``torch.tensor`` takes them: checked
    against the dtype's range (a uint8 takes -255..255, wrapping negatives), where NumPy
    raises OverflowError or wraps silently."""
    wide = np.array(data)
    if wide.size and wide.dtype.kind in "iuf":
        _dt.check_range(wide.min(), wide.max(), np_dtype, c_name=False,
                        floats=wide.dtype.kind == "f")
    return wide.astype(np_dtype)


def _flat(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    else:
        yield x


def _tensors_to_lists(x):
    if isinstance(x, (list, tuple)):
        return [_tensors_to_lists(v) for v in x]
    return x.tolist() if isinstance(x, Tensor) else x


def _finish(arr, requires_grad, device):
    t = Tensor._make(arr)
    if device is None:
        device = _defaults.device  # ng.set_default_device's, None for the CPU
    if device is not None and _device(device).type != "cpu":
        import numgrad.devices as devices
        t = Tensor._make(devices.upload(arr, devices.target(device)))  # a leaf on the device
    if requires_grad:
        t._set_requires_grad(True)
    return t


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (``torch.tensor``); Python floats give float32.

    Raises TypeError for data numgrad cannot hold (strings, None). An object exporting
    ``__cuda_array_interface__`` (CuPy, a PyTorch CUDA tensor) is copied on its device.

    >>> ng.tensor([1., 2.], requires_grad=True)
    tensor([1., 2.], requires_grad=True)
    """
    if not isinstance(data, (Tensor, np.ndarray, list, tuple)) and hasattr(
            data, "__cuda_array_interface__"):
        import numgrad.devices as devices
        t = devices.wrap_cuda_interface(data)
        t = t.clone() if dtype is None or _dt.as_dtype(dtype) is t.dtype else t.to(dtype)
        return _finish_device(t, requires_grad, device)
    return _finish(_to_array(data, dtype), requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, without a copy when it already is one of the right dtype (or a
    NumPy array of a numgrad dtype, whose memory it then shares) (``torch.as_tensor``).

    Raises TypeError for data numgrad cannot hold (strings, None, complex).
    """
    if isinstance(data, Tensor) and (dtype is None or data.dtype is _dt.as_dtype(dtype)):
        return data
    if not isinstance(data, (Tensor, np.ndarray)) and hasattr(data, "__cuda_array_interface__"):
        import numgrad.devices as devices
        t = devices.wrap_cuda_interface(data)  # zero-copy: shares the exporter's memory
        if dtype is not None and _dt.as_dtype(dtype) is not t.dtype:
            t = t.to(dtype)
        return t if device is None else t.to(device)
    if isinstance(data, np.ndarray) and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def _finish_device(t, requires_grad, device):
    if device is not None and _device(device) != t.device:
        t = t.to(device).detach()
    if requires_grad:
        t._set_requires_grad(True)
    return t


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor that shares memory with the NumPy array ``a`` (and keeps its dtype)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    d = _dt.from_numpy_dtype(a.dtype)
    if d.np != a.dtype:
        raise TypeError(f"can't convert np.ndarray of type {a.dtype}. The only supported types "
                        "are: float64, float32, int64, int32, int16, int8, uint8 and bool.")
    return Tensor._make(a)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


def _float_dtype(dtype):
    return _dt.as_dtype(dtype) if dtype is not None else _dt.default_float


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros (``torch.zeros``, ``jax.numpy.zeros``).

    Sizes are ints or one tuple; ``dtype`` defaults to float32. Raises ValueError for a
    negative size.
    """
    return _finish(np.zeros(_size(size), _float_dtype(dtype).np), requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones (``torch.ones``, ``jax.numpy.ones``).

    Sizes are ints or one tuple; ``dtype`` defaults to float32. Raises ValueError for a
    negative size.
    """
    return _finish(np.ones(_size(size), _float_dtype(dtype).np), requires_grad, device)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor with unspecified contents (``torch.empty``).

    Sizes are ints or one tuple; ``dtype`` defaults to float32. Raises ValueError for a
    negative size.
    """
    return _finish(np.empty(_size(size), _float_dtype(dtype).np), requires_grad, device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (``torch.full``, ``jax.numpy.full``); the dtype
    follows the value (int64 for ints, bool for bools) unless given.
    """
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.of_scalar(fill_value)
    fill_value = _dt.checked_scalar(fill_value, d.np)
    return _finish(np.full(_size((size,)), fill_value, d.np), requires_grad, device)


def rand(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1) from numgrad's generator (``torch.rand``).

    Sizes are ints or one tuple; ``dtype`` defaults to float32. Raises ValueError for a
    negative size.
    """
    d = _float_dtype(dtype)
    return _finish(_generator().random(_size(size)).astype(d.np), requires_grad, device)


def randn(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples from numgrad's generator (``torch.randn``).

    Sizes are ints or one tuple; ``dtype`` defaults to float32. Raises ValueError for a
    negative size.
    """
    d = _float_dtype(dtype)
    return _finish(_generator().standard_normal(_size(size)).astype(d.np), requires_grad, device)


def randint(low, high=None, size=(), dtype=None, device=None) -> Tensor:
    """Integers uniform in ``[low, high)`` (``torch.randint``); int64.

    Raises ValueError when ``low >= high``.
    """
    if high is None:
        low, high = 0, low
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    return _finish(_generator().integers(low, high, _size((size,))).astype(d.np), False, device)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``start, start + step, ...`` below ``end`` (``torch.arange``, ``jax.numpy.arange``);
    int64 when every bound is an int, float32 otherwise. Raises ZeroDivisionError for
    ``step == 0``.
    """
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        d = _dt.int64 if ints else _dt.default_float
    else:
        d = _dt.as_dtype(dtype)
    return _finish(np.arange(start, end, step).astype(d.np), requires_grad, device)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (``torch.linspace``)."""
    d = _float_dtype(dtype)
    return _finish(np.linspace(start, end, int(steps)).astype(d.np), requires_grad, device)


def eye(n: int, m: int | None = None, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    """An ``n x m`` (default square) matrix with ones on the diagonal (``torch.eye``).

    Raises RuntimeError for a negative size.
    """
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {min(n, m)}")
    d = _float_dtype(dtype)
    return _finish(np.eye(int(n), int(m), dtype=d.np), requires_grad, device)


def _like(x, dtype):
    return _dt.as_dtype(dtype) if dtype is not None else x.dtype


def _like_device(x, device):
    # As torch: a *_like result is on x's device unless told otherwise.
    if device is None and type(x._data) is not np.ndarray and x.device.type != "cpu":
        return x.device
    if device is None and _defaults.device is not None:
        return x.device  # x's device, not the default one
    return device


def zeros_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros with ``x``'s shape (and dtype unless given) (``torch.zeros_like``)."""
    return _finish(np.zeros(x.shape, _like(x, dtype).np), requires_grad, _like_device(x, device))


def ones_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones with ``x``'s shape (and dtype unless given) (``torch.ones_like``)."""
    return _finish(np.ones(x.shape, _like(x, dtype).np), requires_grad, _like_device(x, device))


def empty_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor shaped like ``x`` (``torch.empty_like``)."""
    return _finish(np.empty(x.shape, _like(x, dtype).np), requires_grad, _like_device(x, device))


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``fill_value`` in ``x``'s shape (and dtype unless given) (``torch.full_like``)."""
    return _finish(np.full(x.shape, fill_value, _like(x, dtype).np), requires_grad,
                   _like_device(x, device))


def rand_like(x, dtype=None, requires_grad=False) -> Tensor:
    """Uniform [0, 1) samples shaped like ``x`` (``torch.rand_like``)."""
    return rand(x.shape, dtype=_like(x, dtype), requires_grad=requires_grad)


def randn_like(x, dtype=None, requires_grad=False) -> Tensor:
    """Standard normal samples shaped like ``x`` (``torch.randn_like``)."""
    return randn(x.shape, dtype=_like(x, dtype), requires_grad=requires_grad)


def randperm(n: int, *, generator: np.random.Generator | None = None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1`` from numgrad's generator (or ``generator``)
    (``torch.randperm``); int64 unless ``dtype`` says otherwise.

    >>> sorted(ng.randperm(4).tolist())
    [0, 1, 2, 3]

    Raises RuntimeError for a negative ``n``.
    """
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    rng = generator if generator is not None else _generator()
    return _finish(rng.permutation(n).astype(d.np), requires_grad, device)


# ``Tensor`` (below this module) reaches it through this slot (numgrad/tensor.py).
Tensor._ng_creation = sys.modules[__name__]

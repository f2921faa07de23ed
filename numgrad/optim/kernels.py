"""optim.kernels: the in-place array updates an optimizer's step is written in, per device.

Room: optim. An optimizer writes its update rule once, as calls on a kernel set (``mul_``,
``add_``, ``addcmul_``...). On the CPU the calls go straight to NumPy ufuncs with ``out=``
on the tensors' arrays (one pass each, no dispatch); elsewhere (CUDA) they are numgrad's
in-place tensor ops under ``no_grad``. Either way each updated tensor's version is bumped.
The formulas follow PyTorch's single-tensor (``foreach=False``) CPU code term by term, so
float64 trajectories agree with PyTorch's to rounding.
"""
from __future__ import annotations

import numpy as np

import numgrad.ops as ops
from numgrad.creation import zeros_like
from numgrad.tensor import Tensor


class NumpyKernels:
    """Updates on the NumPy arrays behind CPU tensors."""

    @staticmethod
    def view(t: Tensor):
        return t._data

    @staticmethod
    def bump(t: Tensor):
        t._vc.value += 1

    @staticmethod
    def mul_(a, s):
        np.multiply(a, s, out=a)

    @staticmethod
    def add_(a, b, alpha=1.0):
        np.add(a, b if alpha == 1.0 else alpha * b, out=a)

    @staticmethod
    def added(a, b, alpha=1.0):
        return a + (b if alpha == 1.0 else alpha * b)

    @staticmethod
    def lerp_(a, b, w):
        # PyTorch's lerp: a + w (b - a) for w < 0.5, else b - (1 - w) (b - a)
        if w < 0.5:
            np.add(a, w * (b - a), out=a)
        else:
            np.subtract(b, (1 - w) * (b - a), out=a)

    @staticmethod
    def addcmul_(a, b, c, value):
        np.add(a, value * b * c, out=a)

    @staticmethod
    def addcdiv_(a, b, c, value):
        np.add(a, value * (b / c), out=a)

    @staticmethod
    def maximum_(a, b):
        np.maximum(a, b, out=a)

    @staticmethod
    def denom(sq, scale, eps):
        return np.sqrt(sq) / scale + eps

    sqrt = staticmethod(np.sqrt)
    abs = staticmethod(np.abs)


class TensorKernels:
    """Updates as numgrad in-place tensor ops (any device); the caller holds ``no_grad``."""

    @staticmethod
    def view(t: Tensor):
        return t

    @staticmethod
    def bump(t: Tensor):
        pass  # each in-place op bumped it already

    @staticmethod
    def mul_(a, s):
        a.mul_(s)

    @staticmethod
    def add_(a, b, alpha=1.0):
        a.add_(b if alpha == 1.0 else b * alpha)

    @staticmethod
    def added(a, b, alpha=1.0):
        return a + (b if alpha == 1.0 else b * alpha)

    @staticmethod
    def lerp_(a, b, w):
        if w < 0.5:
            a.add_((b - a) * w)
        else:
            a.copy_(b - (b - a) * (1 - w))

    @staticmethod
    def addcmul_(a, b, c, value):
        a.add_(b * value * c)

    @staticmethod
    def addcdiv_(a, b, c, value):
        a.add_((b / c) * value)

    @staticmethod
    def maximum_(a, b):
        a.copy_(ops.maximum(a, b))

    @staticmethod
    def denom(sq, scale, eps):
        return ops.sqrt(sq) / scale + eps

    sqrt = staticmethod(ops.sqrt)
    abs = staticmethod(ops.abs)


def kernels_for(t: Tensor):
    """The kernel set for a parameter: NumPy's for CPU arrays, tensor ops otherwise."""
    return NumpyKernels if type(t._data) is np.ndarray else TensorKernels


def zeros_state(p: Tensor) -> Tensor:
    """A zero buffer shaped like ``p``, on its device, outside any graph."""
    return zeros_like(p.detach())


def copy_state(g: Tensor) -> Tensor:
    """A copy of ``g`` (a gradient) as a new buffer, outside any graph."""
    return ops.clone(g.detach())


def step_state(value: float = 0.0) -> Tensor:
    """A step counter (or ``mu_product``) as PyTorch keeps it: a float32 0-d CPU tensor."""
    import numgrad.dtypes as dtypes
    from numgrad.creation import tensor
    return tensor(float(value), dtype=dtypes.float32)


def advance(state: dict, key: str = "step") -> float:
    """Add one to ``state[key]`` in place (in float32, as PyTorch's ``step_t += 1``) and
    return the new count as a Python float. A plain number, as older PyTorch saved it,
    becomes a tensor first."""
    t = state[key]
    if not isinstance(t, Tensor):
        t = state[key] = step_state(t)
    t._data[...] = t._data + 1
    t._vc.value += 1
    return float(t._data)


def scale_state(state: dict, key: str, factor: float) -> float:
    """Multiply the 0-d ``state[key]`` by ``factor`` in place, rounding to its dtype (float32
    unless a loaded state dict cast it to the parameter's) as PyTorch's ``t *= factor``
    does, and return the new value as a Python float."""
    t = state[key]
    t._data[...] = t._data * factor  # a Python float keeps the array's dtype (NEP 50)
    t._vc.value += 1
    return float(t._data)

"""nn.init: PyTorch's weight initialisations (``torch.nn.init``), drawn from numgrad's generator.

Room: nn. Every function fills its tensor in place (under ``no_grad``, bumping its version)
and returns it. ``ng.manual_seed`` makes the draws repeatable; they follow the same
distributions as PyTorch's, not the same bits (the generators differ).
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.creation as creation
from numgrad.grad_mode import no_grad
from numgrad.tensor import Tensor

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``torch.nn.init.calculate_gain``).

    Raises ValueError for an unknown nonlinearity."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    src = creation.from_numpy(np.ascontiguousarray(values, dtype=tensor.dtype.np))
    # Into the tensor itself, as torch.nn.init does: no_grad lets a leaf that requires grad
    # be written, and its own version counter is bumped.
    with no_grad():
        tensor.copy_(src if tensor.device.type == "cpu" else src.to(tensor.device))
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with samples from U(a, b) (``torch.nn.init.uniform_``)."""
    return _fill(tensor, creation._generator().uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with samples from N(mean, std**2) (``torch.nn.init.normal_``)."""
    return _fill(tensor, creation._generator().normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val`` (``torch.nn.init.constant_``)."""
    return _fill(tensor, np.full(tensor.shape, val))


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones (``torch.nn.init.ones_``)."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros (``torch.nn.init.zeros_``)."""
    return constant_(tensor, 0.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``
    (``torch.nn.init.xavier_uniform_``)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``
    (``torch.nn.init.xavier_normal_``)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)``
    (``torch.nn.init.kaiming_uniform_``).
    ``nn.Linear`` uses ``a=sqrt(5)``, which makes ``b = 1 / sqrt(fan_in)``."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """He normal: N(0, std**2) with ``std = gain / sqrt(fan)``
    (``torch.nn.init.kaiming_normal_``)."""
    if 0 in tensor.shape:
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)))

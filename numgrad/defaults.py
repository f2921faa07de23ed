"""defaults: the default float dtype and the default device of the factories
(``torch.set_default_dtype``, ``torch.set_default_device``).

Room: leaf. Imports dtypes; ``creation`` reads ``device`` when a factory is given none,
and ``dtypes.default_float`` is the dtype Python floats and float factories take.
"""
from __future__ import annotations

import numgrad.device_type as _device_type
import numgrad.dtypes as _dt

device = None  # None: the CPU (the fast path: nothing to upload)


def set_default_dtype(d) -> None:
    """Make ``d`` (``ng.float32`` or ``ng.float64``) the dtype of Python floats and of float
    factories (``torch.set_default_dtype``). Raises TypeError for a non-float dtype.

    >>> ng.set_default_dtype(ng.float64); ng.tensor([1.5]).dtype
    numgrad.float64
    >>> ng.set_default_dtype(ng.float32)
    """
    try:
        d = _dt.as_dtype(d)
    except TypeError:
        d = None
    if d is None or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dt.default_float = d


def get_default_dtype() -> _dt.dtype:
    """The dtype Python floats become (``torch.get_default_dtype``): float32 unless set.

    >>> ng.get_default_dtype()
    numgrad.float32
    """
    return _dt.default_float


def set_default_device(dev) -> None:
    """The device factories use when given none (``torch.set_default_device``); None or
    ``"cpu"`` restores the CPU. Raises RuntimeError for an unknown or missing device.

    >>> ng.set_default_device("cpu"); ng.zeros(2).device
    device(type='cpu')
    """
    global device
    if dev is None:
        device = None
        return
    import numgrad.devices as devices
    dev = devices.target(dev)
    device = None if dev.type == "cpu" else dev


def get_default_device() -> "device":
    """The device factories use when given none (``torch.get_default_device``).

    >>> ng.get_default_device()
    device(type='cpu')
    """
    from numgrad.device_type import device as _device
    return device if device is not None else _device("cpu")


def _swap_default_device(dev):
    """Make ``dev`` the default device and return the one it replaces (None for the CPU):
    what ``with ng.device(...):`` does on entering and on leaving."""
    global device
    previous = device
    set_default_device(dev)
    return previous


_device_type.device._ng_set_default = staticmethod(_swap_default_device)

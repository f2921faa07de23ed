"""ops.new_tensors: ``Tensor.new_*`` factories and ``Tensor.type``, which take their dtype
and device from a tensor (``torch.Tensor.new_ones``, ``torch.Tensor.type``).

Room: ops. Builds on creation; bound onto Tensor by ``ops.methods``.
"""
from __future__ import annotations

import numgrad.creation as creation
import numgrad.dtypes as _dt
from numgrad.tensor import Tensor


def _where(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones of ``size`` with this tensor's dtype and device unless given
    (``torch.Tensor.new_ones``).

    >>> ng.ones(2, dtype=ng.float64).new_ones(3)
    tensor([1., 1., 1.], dtype=numgrad.float64)
    """
    dtype, device = _where(self, dtype, device)
    return creation.ones(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype and device unless given
    (``torch.Tensor.new_zeros``).

    >>> ng.ones(2).new_zeros(2, 2).shape
    torch.Size([2, 2])
    """
    dtype, device = _where(self, dtype, device)
    return creation.zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of ``size`` with this tensor's dtype and device unless given
    (``torch.Tensor.new_empty``).

    >>> ng.ones(2).new_empty(3).shape
    torch.Size([3])
    """
    dtype, device = _where(self, dtype, device)
    return creation.empty(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``fill_value`` in ``size``, with this tensor's dtype and device unless given
    (``torch.Tensor.new_full``; the dtype is this tensor's, not the value's).

    >>> ng.ones(2).new_full((2,), 3)
    tensor([3., 3.])
    """
    dtype, device = _where(self, dtype, device)
    return creation.full(size, fill_value, dtype=dtype, device=device,
                         requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A copy of ``data`` with this tensor's dtype and device unless given
    (``torch.Tensor.new_tensor``: ``ints`` become this tensor's float dtype too).

    >>> ng.ones(2).new_tensor([1, 2])
    tensor([1., 2.])
    """
    dtype, device = _where(self, dtype, device)
    if isinstance(data, Tensor):
        data = data.detach()
    return creation.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


# PyTorch's legacy type names: ``torch.FloatTensor`` and, on CUDA, ``torch.cuda.FloatTensor``.
_TYPE_NAMES = {k: v + "Tensor" for k, v in _dt.SCALAR_NAMES.items()}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


def type_(self, dtype=None, non_blocking=False, **kwargs):  # bound as Tensor.type
    """With no argument, this tensor's type name as PyTorch spells it
    (``'torch.FloatTensor'``, ``'torch.cuda.DoubleTensor'``); given a dtype or such a name, the
    tensor converted to it (itself when it has it already) (``torch.Tensor.type``).

    The names say ``torch.``, not ``numgrad.``: they are the strings PyTorch programs compare
    ``x.type()`` with, and they name no Python object either library exports by that path.
    Raises ValueError for an unknown type name.

    >>> ng.ones(2).type()
    'torch.FloatTensor'
    >>> ng.ones(2).type(ng.int64)
    tensor([1, 1])
    """
    if dtype is None:
        where = "cuda." if self.device.type == "cuda" else ""
        return f"torch.{where}{_TYPE_NAMES[self.dtype.name]}"
    if isinstance(dtype, str):
        name = dtype
        parts = name.split(".")
        if len(parts) < 2 or parts[0] != "torch" or parts[-1] not in _BY_TYPE_NAME:
            raise ValueError(f"invalid type: '{name}'")
        target = _dt.as_dtype(_BY_TYPE_NAME[parts[-1]])
        device = "cuda" if parts[1:2] == ["cuda"] else "cpu"
        return self.to(device, target)
    return self.to(dtype)


type_.__name__ = type_.__qualname__ = "type"  # as help(Tensor.type) shows it

"""nn.shape_and_dropout: ``Flatten``, ``Unflatten``, ``Dropout1d``, ``Dropout2d`` (``torch.nn``).

Room: nn. Parameter-free modules.
"""
from __future__ import annotations

import numgrad.ops as ops
import numgrad.nn.functional_norm as F
from numgrad.nn.layers import Dropout
from numgrad.nn.module import Module


class Flatten(Module):
    """Dims ``start_dim`` to ``end_dim`` merged into one (``torch.nn.Flatten``; the batch dim
    is kept by default).

    >>> ng.nn.Flatten()(ng.ones(2, 3, 4)).shape
    torch.Size([2, 12])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        """``input.flatten(start_dim, end_dim)``."""
        return ops.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """``start_dim=..., end_dim=...``."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Dim ``dim`` split into ``unflattened_size`` (``torch.nn.Unflatten``).

    >>> ng.nn.Unflatten(1, (2, 3))(ng.ones(4, 6)).shape
    torch.Size([4, 2, 3])
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError("invalid argument type for dim parameter")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        """``input`` with ``dim`` reshaped to ``unflattened_size``."""
        d = self.dim % input.ndim if input.ndim else 0
        shape = tuple(input.shape[:d]) + self.unflattened_size + tuple(input.shape[d + 1:])
        return ops.view(input, shape)

    def extra_repr(self) -> str:
        """``dim=..., unflattened_size=...``."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class _ChannelDropout(Dropout):
    _fn = None

    def forward(self, input):
        """Whole channels zeroed with probability ``p`` while training."""
        return type(self)._fn(input, self.p, self.training, self.inplace)


class Dropout1d(_ChannelDropout):
    """Zero whole channels of ``(N, C, L)`` while training (``torch.nn.Dropout1d``).

    >>> ng.nn.Dropout1d().eval()(ng.ones(2, 3, 4)).shape
    torch.Size([2, 3, 4])
    """
    _fn = F.dropout1d


class Dropout2d(_ChannelDropout):
    """Zero whole channels of ``(N, C, H, W)`` while training (``torch.nn.Dropout2d``).

    >>> ng.nn.Dropout2d().eval()(ng.ones(2, 3, 4, 4)).shape
    torch.Size([2, 3, 4, 4])
    """
    _fn = F.dropout2d

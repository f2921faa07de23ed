"""nn.activation: ``ReLU``, ``Tanh``, ``Sigmoid``, ``GELU``, ``Softmax``, ``LogSoftmax``.

Room: nn. Parameter-free modules over ``nn.functional``.
"""
from __future__ import annotations

import numgrad.nn.functional as F
from numgrad.nn.module import Module


class ReLU(Module):
    """``max(x, 0)`` (``torch.nn.ReLU``)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """``relu(input)``."""
        return F.relu(input, self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when in place."""
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """Hyperbolic tangent (``torch.nn.Tanh``)."""

    def forward(self, input):
        """``tanh(input)``."""
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` (``torch.nn.Sigmoid``)."""

    def forward(self, input):
        """``sigmoid(input)``."""
        return F.sigmoid(input)


class GELU(Module):
    """``x * Phi(x)``, or its tanh approximation (``torch.nn.GELU``)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        """``gelu(input, approximate)``."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``approximate='...'``."""
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """``softmax(x, dim)`` (``torch.nn.Softmax``)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """``softmax(input, dim)``."""
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        """``dim=...``."""
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """``log_softmax(x, dim)`` (``torch.nn.LogSoftmax``)."""

    def forward(self, input):
        """``log_softmax(input, dim)``."""
        return F.log_softmax(input, self.dim)

"""nn.loss: ``MSELoss`` and ``CrossEntropyLoss`` (``torch.nn`` loss modules).

Room: nn. Each holds its options and calls the functional loss.
"""
from __future__ import annotations

import numgrad.nn.functional as F
from numgrad.nn.module import Module


class MSELoss(Module):
    """Mean squared error (``torch.nn.MSELoss``); ``reduction`` is "mean", "sum" or "none"."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        """``mse_loss(input, target, reduction)``."""
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(Module):
    """``nll_loss(log_softmax(logits), target)`` over class indices or probabilities
    (``torch.nn.CrossEntropyLoss``)."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """``cross_entropy(input, target, ...)``."""
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)

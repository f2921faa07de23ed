"""nn.loss_extra: ``NLLLoss``, ``BCELoss``, ``BCEWithLogitsLoss``, ``L1Loss``,
``SmoothL1Loss``, ``HuberLoss``, ``KLDivLoss`` (``torch.nn``).

Room: nn. Each holds its options (PyTorch's, including the deprecated ``size_average`` and
``reduce``, mapped to ``reduction`` as PyTorch maps them) and calls the functional loss.
"""
from __future__ import annotations

import numgrad.nn.functional as F
from numgrad.nn.functional_norm import _legacy_reduction
from numgrad.nn.module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices under log-probabilities (``torch.nn.NLLLoss``).

    >>> ng.nn.NLLLoss()(ng.log(ng.tensor([[0.5, 0.5]])), ng.tensor([0]))
    tensor(0.6931)
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        """``nll_loss(input, target, weight, ignore_index, reduction)``."""
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities (``torch.nn.BCELoss``).

    >>> ng.nn.BCELoss()(ng.tensor([0.5]), ng.tensor([1.]))
    tensor(0.6931)
    """

    def forward(self, input, target):
        """``binary_cross_entropy(input, target, weight, reduction)``."""
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits, computed stably (``torch.nn.BCEWithLogitsLoss``).

    >>> ng.nn.BCEWithLogitsLoss()(ng.tensor([0.]), ng.tensor([1.]))
    tensor(0.6931)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        """``binary_cross_entropy_with_logits(input, target, weight, ...)``."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)


class L1Loss(_Loss):
    """Mean absolute error (``torch.nn.L1Loss``).

    >>> ng.nn.L1Loss()(ng.tensor([1., -1.]), ng.zeros(2))
    tensor(1.)
    """

    def forward(self, input, target):
        """``l1_loss(input, target, reduction)``."""
        return F.l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (``torch.nn.SmoothL1Loss``).

    >>> ng.nn.SmoothL1Loss()(ng.tensor([0.5]), ng.zeros(1))
    tensor(0.1250)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        """``smooth_l1_loss(input, target, reduction, beta)``."""
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear (slope ``delta``) above (``torch.nn.HuberLoss``).

    >>> ng.nn.HuberLoss()(ng.tensor([3.]), ng.zeros(1))
    tensor(2.5000)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        """``huber_loss(input, target, reduction, delta)``."""
        return F.huber_loss(input, target, self.reduction, self.delta)


class KLDivLoss(_Loss):
    """KL divergence of ``target`` from log-probabilities ``input`` (``torch.nn.KLDivLoss``);
    ``reduction="batchmean"`` gives the true KL divergence.

    >>> ng.nn.KLDivLoss(reduction="sum")(ng.log(ng.tensor([0.5, 0.5])), ng.tensor([.5, .5]))
    tensor(0.)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        """``kl_div(input, target, reduction=..., log_target=...)``."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)

"""optim.factor_schedules: ``ConstantLR``, ``MultiplicativeLR`` and ``PolynomialLR``
(``torch.optim.lr_scheduler``).

Room: optim. As the other schedules: PyTorch's recursive ``get_lr`` (each rate from the
group's current one, so float sequences agree to the bit) and its closed form for
``step(epoch)``.
"""
from __future__ import annotations

import numgrad.optim.lr_scheduler as _lr_scheduler
from numgrad.optim.lr_scheduler import LRScheduler
from numgrad.optim.optimizer import Optimizer
from numgrad.optim.schedules import _lrs, per_group_lambdas


class ConstantLR(LRScheduler):
    """Scale the rate by ``factor`` until epoch ``total_iters``, then restore it
    (``torch.optim.lr_scheduler.ConstantLR``), a warm-up.

    >>> opt = ng.optim.SGD([ng.nn.Parameter(ng.zeros(1))], lr=1.0)
    >>> sched = ng.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=1)
    >>> sched.get_last_lr(), (opt.step(), sched.step(), sched.get_last_lr())[-1]
    ([0.5], [1.0])

    Raises ValueError for a factor outside [0, 1].
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The rate times ``factor`` at epoch 0, divided by it at ``total_iters``."""
        if self.last_epoch == 0:
            return [lr * self.factor for lr in _lrs(self.optimizer)]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [lr * (1.0 / self.factor) for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Multiply the rate by ``lr_lambda(epoch)`` each epoch, one function or one per group
    (``torch.optim.lr_scheduler.MultiplicativeLR``).

    >>> opt = ng.optim.SGD([ng.nn.Parameter(ng.zeros(1))], lr=1.0)
    >>> sched = ng.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)
    >>> for _ in range(2): opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]

    Raises ValueError when a list of functions does not have one per group, TypeError for
    one that is not callable.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        self.lr_lambdas = per_group_lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates times each group's ``lr_lambda(last_epoch)``."""
        if self._is_initial:
            return _lrs(self.optimizer)
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas,
                                                           _lrs(self.optimizer))]


class PolynomialLR(LRScheduler):
    """Decay the rate as ``base * (1 - epoch / total_iters) ** power`` until ``total_iters``
    (``torch.optim.lr_scheduler.PolynomialLR``).

    >>> opt = ng.optim.SGD([ng.nn.Parameter(ng.zeros(1))], lr=1.0)
    >>> sched = ng.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=1.0)
    >>> for _ in range(2): opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next rate from the current one (PyTorch's recursive form)."""
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        e, t = self.last_epoch, self.total_iters
        decay = ((1.0 - e / t) / (1.0 - (e - 1) / t)) ** self.power
        return [lr * decay for lr in _lrs(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base in self.base_lrs]


# torch.optim.lr_scheduler's names for them (optim.lr_scheduler, which this module builds on).
for _cls in (ConstantLR, MultiplicativeLR, PolynomialLR):
    setattr(_lr_scheduler, _cls.__name__, _cls)

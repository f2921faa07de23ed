"""optim.lr_scheduler: the base class, ``StepLR`` and ``CosineAnnealingLR``
(``torch.optim.lr_scheduler``); the other schedules are in ``optim.schedules``.

Room: optim. Each ``step()`` advances ``last_epoch`` and writes the new rates into the
optimizer's groups, using PyTorch's recursive formulas (each rate from the previous one),
so the sequences agree with PyTorch's; ``step(epoch)`` uses the closed forms.
"""
from __future__ import annotations

import math

from numgrad.optim.optimizer import Optimizer


class LRScheduler:
    """Base class (``torch.optim.lr_scheduler.LRScheduler``): subclasses give ``get_lr()``
    (recursive) and ``_get_closed_form_lr()``.

    Raises TypeError when ``optimizer`` is not an Optimizer, KeyError when resuming
    (``last_epoch != -1``) from groups without ``initial_lr``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                               "resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """The constructor's first step (``SequentialLR`` replays it at a milestone)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates for ``last_epoch``, from the groups' current rates."""
        raise NotImplementedError

    def _get_closed_form_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates the last ``step()`` set, one per group (``LRScheduler.get_last_lr``)."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, closed form) and set the groups' rates."""
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            lrs = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = type(self)._get_closed_form_lr is not LRScheduler._get_closed_form_lr
            lrs = self._get_closed_form_lr() if closed else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything but the optimizer (``LRScheduler.state_dict``)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict()`` returned."""
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs
    (``torch.optim.lr_scheduler.StepLR``).

    >>> opt = ng.optim.SGD([ng.nn.Parameter(ng.zeros(1))], lr=1.0)
    >>> sched = ng.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> for _ in range(4): opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """``lr * gamma`` at each multiple of ``step_size``, else ``lr``."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal the rate from its initial value to ``eta_min`` along half a cosine over
    ``T_max`` epochs (``torch.optim.lr_scheduler.CosineAnnealingLR``)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next rate from the current one (PyTorch's recursive form)."""
        groups = self.optimizer.param_groups
        e, t, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and e > 0:
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / t)) / 2
                    for base in self.base_lrs]
        if (e - 1 - t) % (2 * t) == 0:
            return [group["lr"] + (base - lo) * (1 - math.cos(math.pi / t)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t))
                * (group["lr"] - lo) + lo for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


# LambdaLR, MultiStepLR, ExponentialLR, LinearLR, SequentialLR, ReduceLROnPlateau and
# OneCycleLR (optim.schedules), ConstantLR, MultiplicativeLR and PolynomialLR
# (optim.factor_schedules) are entered here by their modules, which build on LRScheduler
# above (optim/__init__ imports them): this module imports nothing of them.

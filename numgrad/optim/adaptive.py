"""optim.adaptive: RMSprop, Adagrad and Adadelta, the optimizers that scale each step by
a running sum or average of squared gradients (``torch.optim.RMSprop``, ``Adagrad``,
``Adadelta``).

Room: optim. Each update is PyTorch's single-tensor (``foreach=False``) code term by term,
written on the kernel set of ``optim.kernels`` (NumPy on the CPU, tensor ops elsewhere);
the state (keys, order, a float32 0-d ``step``) is PyTorch's, so ``state_dict`` moves
between the two.
"""
from __future__ import annotations

from numgrad.creation import full_like
from numgrad.optim.impl_flags import check_flags
from numgrad.optim.kernels import advance, step_state
from numgrad.optim.optimizer import Optimizer


def check_nonnegative(**values) -> None:
    """PyTorch's ValueError for the first negative hyperparameter (``lr`` is "learning
    rate", ``eps`` "epsilon")."""
    label = {"lr": "learning rate", "eps": "epsilon value"}
    for name, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"Invalid {label.get(name, name + ' value')}: {v}")


class RMSprop(Optimizer):
    """RMSprop (``torch.optim.RMSprop``): divide each gradient by the root of a running
    average of its squares (``alpha``), optionally centred and with momentum.

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9

    Raises ValueError for a negative lr, eps, momentum, weight_decay or alpha.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False):
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                          alpha=alpha)
        check_flags(foreach, differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def _update(self, group):
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum, centered = (group["weight_decay"], group["momentum"],
                                            group["centered"])
        buffers = ("square_avg",) + ("momentum_buffer",) * (momentum > 0) + \
            ("grad_avg",) * bool(centered)
        for p, grad, state, k in self._stepping(group, buffers):
            advance(state)
            x, g = k.view(p), k.view(grad)
            if weight_decay != 0:
                g = k.added(g, x, weight_decay)
            sq = k.view(state["square_avg"])
            k.mul_(sq, alpha)
            k.addcmul_(sq, g, g, 1 - alpha)
            bumped = [p, state["square_avg"]]
            if centered:
                ga = k.view(state["grad_avg"])
                k.lerp_(ga, g, 1 - alpha)
                avg = k.sqrt(sq - ga * ga)
                bumped.append(state["grad_avg"])
            else:
                avg = k.sqrt(sq)
            avg = avg + eps
            if momentum > 0:
                buf = k.view(state["momentum_buffer"])
                k.mul_(buf, momentum)
                k.addcdiv_(buf, g, avg, 1)
                k.add_(x, buf, -lr)
                bumped.append(state["momentum_buffer"])
            else:
                k.addcdiv_(x, g, avg, -lr)
            for t in bumped:
                k.bump(t)


class Adagrad(Optimizer):
    """Adagrad (``torch.optim.Adagrad``): divide each gradient by the root of the sum of
    all its squares so far; the rate decays as ``lr / (1 + (step - 1) * lr_decay)``. The
    state exists from construction, as PyTorch's does.

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.Adagrad([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9

    Raises ValueError for a negative lr, lr_decay, weight_decay, initial_accumulator_value
    or eps.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_flags(foreach, differentiable, fused)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = step_state()
                state["sum"] = full_like(p.detach(), initial_accumulator_value)

    def _update(self, group):
        lr, lr_decay, eps, weight_decay = (group["lr"], group["lr_decay"], group["eps"],
                                           group["weight_decay"])
        for p, grad, state, k in self._stepping(group):  # the state exists from __init__
            step = advance(state)
            x, g = k.view(p), k.view(grad)
            if weight_decay != 0:
                g = k.added(g, x, weight_decay)
            clr = lr / (1 + (step - 1) * lr_decay)
            acc = k.view(state["sum"])
            k.addcmul_(acc, g, g, 1)
            k.addcdiv_(x, g, k.sqrt(acc) + eps, -clr)
            k.bump(p)
            k.bump(state["sum"])


class Adadelta(Optimizer):
    """Adadelta (``torch.optim.Adadelta``): a step of ``sqrt(acc_delta + eps) /
    sqrt(square_avg + eps) * grad``, both running averages with decay ``rho``; ``lr``
    scales it (default 1).

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.Adadelta([w])
    >>> (w * w).sum().backward(); opt.step(); w.item() < 1.0
    True

    Raises ValueError for a negative lr, eps or weight_decay, or rho outside [0, 1].
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False):
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        check_flags(foreach, differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    def _update(self, group):
        lr, rho, eps, weight_decay = (group["lr"], group["rho"], group["eps"],
                                      group["weight_decay"])
        for p, grad, state, k in self._stepping(group, ("square_avg", "acc_delta")):
            advance(state)
            x, g = k.view(p), k.view(grad)
            if weight_decay != 0:
                g = k.added(g, x, weight_decay)
            sq, acc = k.view(state["square_avg"]), k.view(state["acc_delta"])
            k.mul_(sq, rho)
            k.addcmul_(sq, g, g, 1 - rho)
            std = k.sqrt(sq + eps)
            delta = k.sqrt(acc + eps) / std * g
            k.mul_(acc, rho)
            k.addcmul_(acc, delta, delta, 1 - rho)
            k.add_(x, delta, -lr)
            for t in (p, state["square_avg"], state["acc_delta"]):
                k.bump(t)

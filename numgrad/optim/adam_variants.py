"""optim.adam_variants: Adamax, NAdam and RAdam (``torch.optim.Adamax``, ``NAdam``,
``RAdam``): Adam's two moments with an infinity norm, Nesterov momentum, or a rectified
variance.

Room: optim. PyTorch's single-tensor code term by term on ``optim.kernels``; the state
(keys, order, float32 0-d ``step`` and NAdam's ``mu_product``) is PyTorch's.
"""
from __future__ import annotations

from numgrad.optim.impl_flags import check_flags
from numgrad.optim.adaptive import check_nonnegative
from numgrad.optim.kernels import advance, scale_state
from numgrad.optim.optimizer import Optimizer


_MOMENTS = ("exp_avg", "exp_avg_sq")


def _check_adam(lr, betas, eps, weight_decay):
    check_nonnegative(lr=lr, eps=eps)
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    check_nonnegative(weight_decay=weight_decay)


def _decay(k, x, g, group):
    """Weight decay: decoupled (``p *= 1 - lr * wd``) or as an L2 term in the gradient."""
    wd = group["weight_decay"]
    if wd == 0:
        return g
    if group.get("decoupled_weight_decay"):
        k.mul_(x, 1 - group["lr"] * wd)
        return g
    return k.added(g, x, wd)


class Adamax(Optimizer):
    """Adamax (``torch.optim.Adamax``): Adam with the infinity norm of past gradients in
    place of the root mean square.

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9

    Raises ValueError for a negative lr, eps or weight_decay, or a beta outside [0, 1).
    """

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        _check_adam(lr, betas, eps, weight_decay)
        check_flags(foreach, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        for p, grad, state, k in self._stepping(group, ("exp_avg", "exp_inf")):
            step = advance(state)
            x = k.view(p)
            g = _decay(k, x, k.view(grad), group)
            m, u = k.view(state["exp_avg"]), k.view(state["exp_inf"])
            k.lerp_(m, g, 1 - beta1)
            k.mul_(u, beta2)
            k.maximum_(u, k.abs(g) + eps)
            k.addcdiv_(x, m, u, -lr / (1 - beta1 ** step))
            for t in (p, state["exp_avg"], state["exp_inf"]):
                k.bump(t)


class NAdam(Optimizer):
    """NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum, whose coefficient
    ``mu`` warms up with ``momentum_decay``; ``decoupled_weight_decay=True`` is NAdamW.

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.item() < 1.0
    True

    Raises ValueError for a negative lr, eps, weight_decay or momentum_decay, or a beta
    outside [0, 1).
    """

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        _check_adam(lr, betas, eps, weight_decay)
        check_nonnegative(momentum_decay=momentum_decay)
        check_flags(foreach, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    def _update(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        momentum_decay = group["momentum_decay"]
        for p, grad, state, k in self._stepping(group, ("mu_product",) + _MOMENTS):
            step = advance(state)
            bias_correction2 = 1 - beta2 ** step
            x = k.view(p)
            g = _decay(k, x, k.view(grad), group)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product = scale_state(state, "mu_product", mu)  # float32, as PyTorch's
            m, v = k.view(state["exp_avg"]), k.view(state["exp_avg_sq"])
            k.lerp_(m, g, 1 - beta1)
            k.mul_(v, beta2)
            k.addcmul_(v, g, g, 1 - beta2)
            denom = k.sqrt(v / bias_correction2) + eps
            k.addcdiv_(x, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
            k.addcdiv_(x, m, denom, -lr * mu_next / (1.0 - mu_product * mu_next))
            for t in (p, state["exp_avg"], state["exp_avg_sq"]):
                k.bump(t)


class RAdam(Optimizer):
    """RAdam (``torch.optim.RAdam``): Adam whose adaptive term is switched in, rectified,
    once the variance estimate is tractable (``rho_t > 5``); before that, momentum SGD.

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.8

    Raises ValueError for a negative lr, eps or weight_decay, or a beta outside [0, 1).
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        _check_adam(lr, betas, eps, weight_decay)
        check_flags(foreach, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def _update(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        for p, grad, state, k in self._stepping(group, _MOMENTS):
            step = advance(state)
            x = k.view(p)
            g = _decay(k, x, k.view(grad), group)
            m, v = k.view(state["exp_avg"]), k.view(state["exp_avg_sq"])
            k.lerp_(m, g, 1 - beta1)
            k.mul_(v, beta2)
            k.addcmul_(v, g, g, 1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            corrected = m / bias_correction1
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = (bias_correction2 ** 0.5) / (k.sqrt(v) + eps)
                k.add_(x, corrected * lr * adaptive * rect, -1.0)
            else:
                k.add_(x, corrected * lr, -1.0)
            for t in (p, state["exp_avg"], state["exp_avg_sq"]):
                k.bump(t)

"""optim.adam: Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``).

Room: optim. PyTorch's rule, per parameter, at step ``t``::

    p = p * (1 - lr * weight_decay)              (AdamW: decoupled decay)
    g = grad + weight_decay * p                  (Adam: L2 penalty)
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    v_hat = max(v_hat, v)                        (amsgrad)
    denom = sqrt(v or v_hat) / sqrt(1 - beta2 ** t) + eps
    p = p - lr / (1 - beta1 ** t) * m / denom
"""
from __future__ import annotations

from numgrad.optim.impl_flags import check_flags
from numgrad.optim.kernels import advance
from numgrad.optim.optimizer import Optimizer


class Adam(Optimizer):
    """Adam (``torch.optim.Adam``); ``decoupled_weight_decay=True`` is AdamW.

    Raises ValueError for a negative lr, eps or weight_decay, or a beta outside [0, 1).
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_flags(foreach, differentiable, fused)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        decoupled = group["decoupled_weight_decay"]
        buffers = ("exp_avg", "exp_avg_sq") + ("max_exp_avg_sq",) * bool(amsgrad)
        for p, grad, state, k in self._stepping(group, buffers):
            step = advance(state)
            x, g = k.view(p), k.view(grad)
            if weight_decay != 0:
                if decoupled:
                    k.mul_(x, 1 - lr * weight_decay)
                else:
                    g = k.added(g, x, weight_decay)
            m, v = k.view(state["exp_avg"]), k.view(state["exp_avg_sq"])
            k.lerp_(m, g, 1 - beta1)
            k.mul_(v, beta2)
            k.addcmul_(v, g, g, 1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if amsgrad:
                vmax = k.view(state["max_exp_avg_sq"])
                k.maximum_(vmax, v)
                k.bump(state["max_exp_avg_sq"])
                v_used = vmax
            else:
                v_used = v
            k.addcdiv_(x, m, k.denom(v_used, bias_correction2_sqrt, eps), -lr / bias_correction1)
            for t in (p, state["exp_avg"], state["exp_avg_sq"]):
                k.bump(t)


class AdamW(Adam):
    """Adam with decoupled weight decay, default 0.01 (``torch.optim.AdamW``)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

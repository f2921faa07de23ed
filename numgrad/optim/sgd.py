"""optim.sgd: stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

Room: optim. PyTorch's rule (``torch.optim.SGD``), per parameter::

    g = grad + weight_decay * p
    buf = g (first step)  |  buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf (nesterov)  |  g = buf
    p = p - lr * g
"""
from __future__ import annotations

from numgrad.optim.impl_flags import check_flags
from numgrad.optim.kernels import copy_state, kernels_for
from numgrad.optim.optimizer import Optimizer, required
from numgrad.tensor import Tensor


class SGD(Optimizer):
    """Stochastic gradient descent (``torch.optim.SGD``).

    >>> w = ng.nn.Parameter(ng.tensor([1.0]))
    >>> opt = ng.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w
    Parameter containing:
    tensor([0.8000], requires_grad=True)

    Raises ValueError for a negative lr, momentum or weight_decay, or Nesterov without
    momentum (or with dampening).
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_flags(foreach, differentiable, fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _update(self, group):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        # The buffers as the step found them, read once before any update, as PyTorch's
        # SGD does: a parameter listed twice ([p, p]) then steps as PyTorch's would (two
        # fresh buffers on the first step, one buffer moved twice after).
        bufs = {id(p): self.state[p].get("momentum_buffer")
                for p in group["params"] if momentum != 0}
        for p in group["params"]:
            grad = self._grad_of(p, group)
            if grad is None:
                continue
            k = kernels_for(p)
            g = k.view(grad)
            if weight_decay != 0:
                g = k.added(g, k.view(p), weight_decay)
            if momentum != 0:
                buf = bufs[id(p)]
                if buf is None:
                    buf = self.state[p]["momentum_buffer"] = copy_state(_as_tensor(g))
                else:
                    b = k.view(buf)
                    k.mul_(b, momentum)
                    k.add_(b, g, 1 - dampening)
                    k.bump(buf)
                g = k.added(g, k.view(buf), momentum) if nesterov else k.view(buf)
            k.add_(k.view(p), g, -lr)
            k.bump(p)


def _as_tensor(g):
    """``g`` (a kernel's array or tensor) as a tensor, without a copy."""
    return g if isinstance(g, Tensor) else Tensor._make(g)

"""nn.utils.clip_grad: ``clip_grad_norm_`` and ``clip_grad_value_`` (``torch.nn.utils``).

Room: nn. The gradients are rescaled in place under ``no_grad``.
"""
from __future__ import annotations

import math

import numgrad.ops as ops
from numgrad.grad_mode import no_grad
from numgrad.tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their joint ``norm_type``-norm is
    at most ``max_norm``; returns the norm before clipping (``torch.nn.utils.clip_grad_norm_``).

    Raises RuntimeError for a non-finite norm when ``error_if_nonfinite``.
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        from numgrad.creation import tensor
        return tensor(0.0)
    with no_grad():
        if math.isinf(norm_type):
            norms = [ops.amax(ops.abs(g)) for g in grads]
            total = norms[0] if len(norms) == 1 else ops.amax(ops.stack(norms))
        else:
            norms = [ops.norm(g, norm_type) for g in grads]
            total = ops.norm(ops.stack(norms), norm_type)
        if error_if_nonfinite and not math.isfinite(float(total)):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To disable "
                               "this error and scale the gradients by the non-finite norm anyway, "
                               "set `error_if_nonfinite=False`")
        coef = ops.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place
    (``torch.nn.utils.clip_grad_value_``)."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)

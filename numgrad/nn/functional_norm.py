"""nn.functional_norm: batch and group normalisation, channel dropout, hardtanh and the
Huber and KL-divergence losses (``torch.nn.functional``).

Room: nn. Composites over primitives like the rest of ``nn.functional``; each ends in
``named`` so ``grad_fn`` prints PyTorch's node.
"""
from __future__ import annotations

import warnings

import numgrad.nn.functional as F
import numgrad.ops as ops
from numgrad.grad_mode import no_grad
from numgrad.ops.conv import named
from numgrad.tensor import Tensor


def _reduce(loss, reduction):
    return F._reduce(loss, reduction)


def _normalize(x, dims, eps):
    mean = ops.mean(x, dims, keepdim=True)
    centered = x - mean
    var = ops.mean(centered * centered, dims, keepdim=True)
    return centered / ops.sqrt(var + eps), mean, var


def _channel_shape(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of ``(N, C, *)`` by the batch's mean and biased variance
    while ``training`` (updating the running statistics in place, the variance unbiased), by
    ``running_mean``/``running_var`` otherwise (``torch.nn.functional.batch_norm``).

    >>> F.batch_norm(ng.tensor([[1.], [3.]]), None, None, training=True)
    tensor([[-1.0000],
            [ 1.0000]])

    Raises ValueError when training on one value per channel.
    """
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    shape = _channel_shape(input)
    if training:
        n = input.numel() // input.shape[1]
        if n <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        dims = (0,) + tuple(range(2, input.ndim))
        out, mean, var = _normalize(input, dims, eps)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    m = ops.reshape(mean.detach(), (-1,))
                    running_mean.copy_(running_mean * (1 - momentum) + m * momentum)
                if running_var is not None:
                    v = ops.reshape(var.detach(), (-1,)) * (n / (n - 1))
                    running_var.copy_(running_var * (1 - momentum) + v * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        out = (input - ops.reshape(running_mean, shape)) / ops.sqrt(
            ops.reshape(running_var, shape) + eps)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    return named(out, "NativeBatchNormBackward0")


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each group of ``C / num_groups`` channels of every sample to zero mean and
    unit (biased) variance, then scale and shift per channel
    (``torch.nn.functional.group_norm``).

    >>> F.group_norm(ng.tensor([[1., 3.]]), 1)
    tensor([[-1.0000,  1.0000]])

    Raises RuntimeError when the channels are not divisible by ``num_groups``.
    """
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    n = input.shape[0]
    grouped = ops.reshape(input, (n, num_groups, -1))
    out, _, _ = _normalize(grouped, (2,), eps)
    out = ops.reshape(out, input.shape)
    shape = _channel_shape(input)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    return named(out, "NativeGroupNormBackward0")


def _channel_dropout(input, p, training, inplace, n, name, lead=None):
    dropout = F.dropout
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if lead is None and input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D input, but received a "
                           f"{input.ndim}D input. Note that {name} exists to provide channel-"
                           f"wise dropout on inputs with {n} spatial dimension(s), a channel "
                           f"dimension, and an optional batch dimension (i.e. {n + 1}D or "
                           f"{n + 2}D inputs).")
    if not training or p == 0.0:
        return input
    # One draw per channel: dropout of a (..., C, 1, ...) tensor of ones, broadcast.
    lead = input.ndim - n if lead is None else lead
    n = input.ndim - lead
    probe = ops.getitem(input.detach(), (slice(None),) * lead + (slice(0, 1),) * n)
    mask = dropout(ops.mul(probe, 0.0) + 1.0, p, True)
    if inplace:
        from numgrad.ops.inplace import apply_inplace
        return apply_inplace(input, lambda x: x * mask)
    return input * mask


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` with probability ``p`` and scale the rest by
    ``1 / (1 - p)`` (``torch.nn.functional.dropout1d``).

    >>> F.dropout1d(ng.ones(2, 3, 4), 0.5, training=False).shape
    torch.Size([2, 3, 4])
    """
    return _channel_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` with probability ``p`` and scale the rest by
    ``1 / (1 - p)`` (``torch.nn.functional.dropout2d``).

    >>> F.dropout2d(ng.ones(2, 3, 4, 4), 0.5, training=False).shape
    torch.Size([2, 3, 4, 4])
    """
    nd = input.ndim
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that "
                      "dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch "
                      "dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    # As PyTorch's feature dropout: one draw per (dim 0, dim 1) pair, whatever the rank (a 3D
    # input is (N, C, L), a 2D one is dropped element by element).
    return _channel_dropout(input, p, training, inplace, 2, "dropout2d", lead=2)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]`` (``torch.nn.functional.hardtanh``).

    >>> F.hardtanh(ng.tensor([-2., 0.5, 3.]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    if inplace:
        from numgrad.ops.inplace import apply_inplace
        return apply_inplace(input, lambda x: ops.clamp(x, min_val, max_val))
    return named(ops.clamp(input, min_val, max_val), "HardtanhBackward0")


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``
    (``torch.nn.functional.huber_loss``).

    >>> F.huber_loss(ng.tensor([0., 3.]), ng.zeros(2))
    tensor(1.2500)
    """
    d = input - target
    a = ops.abs(d)
    loss = ops.where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    return named(_reduce(loss, reduction), "HuberLossBackward0")


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log(target) - input)`` for log-probabilities ``input``, 0 where
    ``target`` is 0 (``torch.nn.functional.kl_div``); ``reduction="batchmean"`` divides
    the sum by the batch size, the mathematically correct KL divergence.

    >>> F.kl_div(ng.log(ng.tensor([0.5, 0.5])), ng.tensor([0.5, 0.5]), reduction="sum")
    tensor(0.)
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        pos = target > 0
        safe = ops.where(pos, target, 1.0)
        loss = ops.where(pos, target * ops.log(safe), 0.0) - target * input
    if reduction == "batchmean":
        total = ops.sum(loss)
        return total / input.shape[0] if input.ndim else total
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    return _reduce(loss, reduction)


def _legacy_reduction(size_average, reduce):
    """PyTorch's mapping of the deprecated ``size_average``/``reduce`` to ``reduction``."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    return reduction


# torch.nn.functional's names for them (nn.functional, which this module builds on).
for _f in (batch_norm, group_norm, dropout1d, dropout2d, hardtanh, huber_loss, kl_div):
    setattr(F, _f.__name__, _f)

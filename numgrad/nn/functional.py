"""nn.functional: composite functions built from primitives (no new derivatives).

Room: nn. Each function here is plain numgrad ops, so its gradient, its
higher-order gradients and its compiled form come from the primitives' rules.
"""
from __future__ import annotations

from numgrad import ops
from numgrad.tensor import Tensor


def relu(x, inplace=False):
    return x.relu_() if inplace else ops.relu(x)


def sigmoid(x):
    return ops.sigmoid(x)


def tanh(x):
    return ops.tanh(x)


def _logsumexp_parts(x, dim):
    # Subtract the (detached) max so exp never overflows; the max cancels exactly
    # in the gradient, so detaching it changes nothing but the numerics.
    m = ops.amax(x.detach(), dim, keepdim=True)
    shifted = x - m
    return shifted, ops.log(ops.sum(ops.exp(shifted), dim, keepdim=True))


def softmax(x, dim, dtype=None):
    """``exp(x) / sum(exp(x), dim)``, computed stably."""
    if dtype is not None:
        x = x.to(dtype)
    e = ops.exp(x - ops.amax(x.detach(), dim, keepdim=True))
    return e / ops.sum(e, dim, keepdim=True)


def log_softmax(x, dim, dtype=None):
    """``x - logsumexp(x, dim)``, computed stably."""
    if dtype is not None:
        x = x.to(dtype)
    shifted, lse = _logsumexp_parts(x, dim)
    return shifted - lse


def logsumexp(x, dim, keepdim=False):
    m = ops.amax(x.detach(), dim, keepdim=True)
    out = ops.log(ops.sum(ops.exp(x - m), dim, keepdim=True)) + m
    return out if keepdim else ops.squeeze(out, dim)


def _reduce(loss, reduction):
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input, target, reduction="mean"):
    if input.shape != target.shape:
        import warnings
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=2)
    d = input - target
    return _reduce(d * d, reduction)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``."""
    if not isinstance(target, Tensor) or target.dtype.name != "int64":
        raise RuntimeError("nll_loss: expected target to be an int64 (Long) tensor of class "
                           "indices")
    if input.ndim == 1:
        input, target = ops.unsqueeze(input, 0), ops.unsqueeze(target, 0)
    if input.ndim > 2:  # (N, C, d1, ...) -> (N*d1*..., C)
        c = input.shape[1]
        input = ops.reshape(ops.permute(input, 0, *range(2, input.ndim), 1), (-1, c))
        target = ops.reshape(target, (-1,))
    n, c = input.shape
    if target.shape != (n,):
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    _check_targets(target, c, ignore_index)
    # A one-hot mask instead of gathering by index keeps this traceable under @ng.jit
    # (no data-dependent indexing) and its gradient is the same scatter.
    from numgrad.creation import arange
    hit = ops.reshape(arange(c), (1, c)) == ops.unsqueeze(target, 1)
    picked = ops.sum(ops.where(hit, input, 0), 1)
    valid = (target != ignore_index).to(input.dtype)
    if weight is not None:
        valid = valid * ops.sum(ops.where(hit, ops.reshape(weight, (1, c)), 0), 1)
    loss = -(picked * valid)
    if reduction == "mean":
        return ops.sum(loss) / ops.sum(valid)
    return _reduce(loss, reduction)


def _check_targets(target, c, ignore_index):
    data = target._data
    if type(data).__module__ != "numpy":
        return  # traced: values unknown until run time
    bad = (data != ignore_index) & ((data < 0) | (data >= c))
    if bad.any():
        raise IndexError(f"Target {int(data[bad][0])} is out of bounds.")


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)``; ``target`` may also be class probabilities."""
    dim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, dim)
    if isinstance(target, Tensor) and target.dtype.is_floating_point:
        if target.shape != input.shape:
            raise RuntimeError("cross_entropy: probability targets must have the input's shape")
        loss = -ops.sum(logp * target, dim)
        return _reduce(loss, reduction)
    if label_smoothing:
        nll = nll_loss(logp, target, weight, ignore_index, reduction)
        smooth = _reduce(-ops.mean(logp, dim), reduction)
        return nll * (1 - label_smoothing) + smooth * label_smoothing
    return nll_loss(logp, target, weight, ignore_index, reduction)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    out = ops.matmul(input, ops.t(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias

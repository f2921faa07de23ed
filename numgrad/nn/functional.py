"""nn.functional: composite functions built from primitives (no new derivatives).

Room: nn. Each function here is plain numgrad ops, so its gradient, its
higher-order gradients and its compiled form come from the primitives' rules.
"""
from __future__ import annotations

import numgrad.ops as ops
from numgrad.ops.conv import named as _named
from numgrad.tensor import Tensor
from numgrad.ops.index_check import check_targets as _check_targets
from numgrad.ops import losses as _losses
from numgrad.grad_mode import is_grad_enabled as _is_grad_enabled


def relu(x, inplace=False) -> Tensor:
    """``max(x, 0)`` (``torch.nn.functional.relu``); ``inplace=True`` writes into ``x``.

    Raises RuntimeError for bool input, or in place on a leaf that requires grad.
    """
    return x.relu_() if inplace else ops.relu(x)


def sigmoid(x) -> Tensor:
    """``1 / (1 + exp(-x))`` (``torch.nn.functional.sigmoid``, ``jax.nn.sigmoid``)."""
    return ops.sigmoid(x)


def tanh(x) -> Tensor:
    """Hyperbolic tangent (``torch.nn.functional.tanh``)."""
    return ops.tanh(x)


# Softmax, log_softmax and logsumexp are ops composites (Tensor methods use them, and the
# ops room never imports nn); this module gives them their torch.nn.functional names.
from numgrad.ops.composites import softmax, log_softmax, logsumexp  # noqa: E402,F401


def _reduce(loss, reduction):
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input, target, reduction="mean") -> Tensor:
    """Mean (or sum, or none) of ``(input - target) ** 2`` (``torch.nn.functional.mse_loss``).

    Warns when the shapes differ (broadcasting is then likely a bug).

    Raises ValueError for an unknown ``reduction`` ("mean", "sum", "none").
    """
    if input.shape != target.shape:
        import warnings
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=2)
    fused = _losses.mse_loss(input, target, reduction)
    if fused is not None:
        return fused
    d = input - target
    return _named(_reduce(d * d, reduction), "MseLossBackward0")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean") -> Tensor:
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``."""
    if not isinstance(target, Tensor) or target.dtype.name != "int64":
        raise RuntimeError("nll_loss: expected target to be an int64 (Long) tensor of class "
                           "indices")
    if weight is not None and weight.requires_grad and _is_grad_enabled():
        raise RuntimeError("The function 'nll_loss_forward' is not differentiable with respect "
                           "to argument 'weight'. This input cannot have requires_grad True.")
    fused = _losses.nll_loss(input, target, weight, ignore_index, reduction)
    if fused is not None:
        return fused
    samples = target.shape  # what reduction="none" returns: one loss per target
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
    target = _check_targets(target, c, ignore_index)  # a mask alone would take any index
    # A one-hot mask instead of gathering by index keeps this traceable under @ng.jit
    # (no data-dependent indexing) and its gradient is the same scatter.
    hit = ops.reshape(_arange_on(c, input), (1, c)) == ops.unsqueeze(target, 1)
    picked = ops.sum(ops.where(hit, input, 0), 1)
    keep = target != ignore_index
    valid = keep.to(input.dtype)
    if weight is not None:
        valid = valid * ops.sum(ops.where(hit, ops.reshape(weight, (1, c)), 0), 1)
    # A where, not a product with 0, so an ignored row's gradient is 0 even when the mean's
    # count is 0 (all ignored: PyTorch's NaN loss with zero gradients, not 0 * inf).
    loss = ops.where(keep, -(picked * valid), 0)
    if reduction == "mean":
        return _named(ops.sum(loss) / ops.sum(valid), "NllLossBackward0")
    if reduction == "none":
        return _named(ops.reshape(loss, samples), "NllLossBackward0")
    return _named(_reduce(loss, reduction), "NllLossBackward0")


def _arange_on(n, like):
    """``arange(n)`` on ``like``'s device (a CPU constant cannot meet a CUDA tensor)."""
    from numgrad.creation import arange
    dev = like.device
    return arange(n) if dev.type == "cpu" else arange(n, device=dev)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``; ``target`` may also be class probabilities."""
    if label_smoothing > 1.0:  # PyTorch checks only the upper end (a negative one runs)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if weight is None and not label_smoothing:  # the usual call, as two nodes at once
        fused = _losses.cross_entropy(input, target, ignore_index, reduction)
        if fused is not None:
            return fused
    dim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, dim)
    if isinstance(target, Tensor) and target.dtype.is_floating_point:
        if target.shape != input.shape:
            raise RuntimeError("cross_entropy: probability targets must have the input's shape")
        if label_smoothing > 0:  # PyTorch mixes the uniform distribution into the target
            target = target * (1 - label_smoothing) + label_smoothing / input.shape[dim]
        if weight is not None:
            target = target * _along(weight, dim, input.ndim)
        loss = -ops.sum(logp * target, dim)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing > 0:
        smooth = _smoothing(logp, target, weight, ignore_index, reduction, dim)
        return nll * (1 - label_smoothing) + smooth * (label_smoothing / input.shape[dim])
    return nll


def _along(weight, dim, ndim):
    """A per-class ``weight`` shaped to broadcast along the class ``dim``."""
    return ops.reshape(weight, tuple(-1 if i == dim else 1 for i in range(ndim)))


def _smoothing(logp, target, weight, ignore_index, reduction, dim):
    """PyTorch's smoothing term of ``cross_entropy`` with class indices: minus the
    (weighted) sum of the log-probabilities over the classes, zero on ignored samples, and
    for ``mean`` divided by what ``nll_loss`` divides by (the count, or the summed weight,
    of the samples kept)."""
    if weight is not None:
        logp = logp * _along(weight, dim, logp.ndim)
    keep = target != ignore_index
    smooth = ops.where(keep, -ops.sum(logp, dim), 0)
    if reduction == "none":
        return smooth
    total = ops.sum(smooth)
    if reduction == "sum":
        return total
    if weight is None:
        return total / ops.sum(keep.to(smooth.dtype))
    c = logp.shape[dim]
    classes = _along(_arange_on(c, logp), dim, logp.ndim)
    hit = (classes == ops.unsqueeze(target, dim)) & ops.unsqueeze(keep, dim)
    return total / ops.sum(ops.where(hit, _along(weight, dim, logp.ndim), 0))


from numgrad.ops.linear import linear as _linear_node  # noqa: E402


def linear(input, weight, bias=None) -> Tensor:
    """``input @ weight.T + bias``."""
    fused = _linear_node(input, weight, bias)  # one node eagerly (AddmmBackward0 / MmBackward0)
    if fused is not None:
        return fused
    out = ops.matmul(input, ops.t(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


# ------------------------------------------------------------- activations and losses
from numgrad.ops.composites import softplus, gelu, leaky_relu, elu  # noqa: E402,F401


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (``torch.nn.functional.silu``)."""
    from numgrad.ops.composites import silu as _silu
    if inplace:
        from numgrad.ops.inplace import apply_inplace
        return apply_inplace(input, _silu)
    return _silu(input)


def _same_shape(input, target, name):
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{name}(): input and target must be Tensors")
    if input.shape != target.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``, each log clamped at
    -100 as PyTorch does (``torch.nn.functional.binary_cross_entropy``).

    Raises ValueError when ``target``'s shape differs from ``input``'s, or for an
    unknown ``reduction``.
    """
    _same_shape(input, target, "binary_cross_entropy")
    if weight is None:
        fused = _losses.binary_cross_entropy(input, target, False, reduction)
        if fused is not None:
            return fused
    log_x = ops.clamp(ops.log(input), min=-100.0)
    log_1mx = ops.clamp(ops.log(1 - input), min=-100.0)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _named(_reduce(loss, reduction), "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(x), t)`` computed stably from logits, with an
    optional weight for positive examples
    (``torch.nn.functional.binary_cross_entropy_with_logits``).

    Raises ValueError when ``target``'s shape differs from ``input``'s.
    """
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    if weight is None and pos_weight is None:
        fused = _losses.binary_cross_entropy(input, target, True, reduction)
        if fused is not None:
            return fused
    # log(1 + exp(-|x|)) + max(-x, 0) is -log(sigmoid(x)) without overflow.
    log_sig_neg = ops.log1p(ops.exp(-ops.abs(input))) + ops.relu(-input)
    if pos_weight is None:
        loss = (1 - target) * input + log_sig_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _named(_reduce(loss, reduction), "BinaryCrossEntropyWithLogitsBackward0")


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or none) of ``|input - target|`` (``torch.nn.functional.l1_loss``)."""
    return _reduce(ops.abs(input - target), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """Huber-like loss: ``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``
    (``torch.nn.functional.smooth_l1_loss``). Raises RuntimeError for a negative beta."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = input - target
    a = ops.abs(d)
    if beta == 0:
        return _reduce(a, reduction)
    loss = ops.where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta)
    return _named(_reduce(loss, reduction), "SmoothL1LossBackward0")


_dropout_calls = __import__("itertools").count()


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    while ``training`` (``torch.nn.functional.dropout``).

    The mask is drawn from numgrad's generator (``ng.manual_seed`` makes it repeatable);
    under ``@ng.jit`` a fresh mask is drawn on every call. Raises ValueError unless
    ``0 <= p <= 1``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out_fn = lambda x: x * 0.0  # noqa: E731
    else:
        from numgrad.ops.cumulative import keep_mask_p
        keep = keep_mask_p(input.detach(), p=float(p), seq=next(_dropout_calls))
        scale = 1.0 / (1.0 - p)
        out_fn = lambda x: x * keep.to(x.dtype) * scale  # noqa: E731
    if inplace:
        from numgrad.ops.inplace import apply_inplace
        return apply_inplace(input, out_fn)
    return out_fn(input)


# ------------------------------------------------- layers' functional forms
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Class indices as int64 one-hot rows along a new last dim
    (``torch.nn.functional.one_hot``); ``num_classes=-1`` means ``max + 1``.

    >>> ng.nn.functional.one_hot(ng.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])

    Raises RuntimeError for a non-int64 input or a class outside ``[0, num_classes)``.
    """
    if not isinstance(tensor, Tensor) or tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor._data
    concrete = type(data).__module__ == "numpy"
    if num_classes == -1:
        if not concrete:
            raise RuntimeError("one_hot: pass num_classes under @ng.jit or on a CUDA tensor "
                               "(the class count cannot be read from traced values)")
        num_classes = int(data.max()) + 1 if data.size else 0
        if not data.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if concrete and data.size:
        if data.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if data.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    hit = ops.unsqueeze(tensor, -1) == _arange_on(num_classes, tensor)
    return hit.to(tensor.dtype)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims to zero mean and unit (biased)
    variance, then scale by ``weight`` and shift by ``bias`` (``torch.nn.functional.layer_norm``).

    Raises RuntimeError when the trailing dims of ``input`` are not ``normalized_shape``.
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    centered = input - ops.mean(input, dims, keepdim=True)
    var = ops.mean(centered * centered, dims, keepdim=True)
    out = centered / ops.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` picked by the int64 indices ``input``; the result has shape
    ``input.shape + (embedding_dim,)`` (``torch.nn.functional.embedding``). Rows at
    ``padding_idx`` get no gradient.

    Raises RuntimeError for a non-int64 index, IndexError for an index out of range.
    """
    if not isinstance(input, Tensor) or input.dtype.name != "int64":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long; but got "
                           f"{getattr(input, 'dtype', type(input).__name__)} instead (while "
                           "checking arguments for embedding)")
    flat = ops.reshape(input, (-1,))
    rows = ops.index_select(weight, 0, flat)
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        pad = ops.unsqueeze(flat == padding_idx, 1)
        rows = ops.where(pad, rows.detach(), rows)  # same values, no gradient there
    return ops.reshape(rows, tuple(input.shape) + (weight.shape[1],))


# ------------------------------------------------- convolution, pooling, normalisation
from numgrad.nn.functional_conv import (  # noqa: E402,F401
    pad, conv1d, conv2d, conv_transpose2d, max_pool1d, max_pool2d, avg_pool1d, avg_pool2d,
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool2d, unfold, fold, interpolate,
)
# batch_norm, group_norm, dropout1d, dropout2d, hardtanh, huber_loss, kl_div (nn.functional_norm)
# and scaled_dot_product_attention (nn.attention) are entered here by their modules, which
# build on this one (nn/__init__ imports both): this module imports nothing of nn.

"""ops.losses: log_softmax and the common losses as single eager primitives.

Room: ops. Imports NumPy, tracing_hook, the registry and the tensor.

As composites, ``cross_entropy`` ran about 20 ops and recorded as many backward nodes per
call; PyTorch runs one kernel and records one node for each of these (``LogSoftmaxBackward0``,
``NllLossBackward0``, ``MseLossBackward0``, ``BinaryCrossEntropyWithLogitsBackward0``,
``BinaryCrossEntropyBackward0``). Here each is one NumPy kernel and one node, with a vjp rule
written in numgrad ops, so ``create_graph`` differentiates it again.

They run only on eager NumPy payloads (``fused``): while ``@ng.jit`` traces, under
``ng.func.vmap``, forward-mode AD or on a CUDA tensor, the caller decomposes into the
composite it always had (which the compiler fuses, and the transforms know), so each
primitive is ``jit=False`` and the tracer never meets it. Odd calls (empty inputs, mixed
dtypes, other ranks) take the composite too, which also raises PyTorch's errors.
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.tracing_hook as tracing_hook
from numgrad.ops.index_check import check_targets_p
from numgrad.ops.registry import defop
from numgrad.tensor import Tensor

_ndarray = np.ndarray
REDUCTIONS = ("mean", "sum", "none")


def fused(*tensors) -> bool:
    """Whether the fused kernels may run on ``tensors`` (None entries skipped): NumPy payloads
    of one floating dtype, no trace running, nothing empty."""
    if tracing_hook.capture is not None:
        return False
    dtype = None
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, Tensor):
            return False
        d = t._data
        if type(d) is not _ndarray or d.dtype.kind != "f" or not d.size:
            return False
        if dtype is None:
            dtype = d.dtype
        elif d.dtype != dtype:
            return False
    return True


def _same(x, **params):
    return x.shape, np.dtype(x.dtype)


def _reduced(x, t, reduction):
    return (x.shape if reduction == "none" else ()), np.dtype(x.dtype)


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _scale(g, shape, reduction):
    """The incoming gradient of an elementwise loss, per element (``mean`` divides by the
    count; ``none`` is already per element)."""
    if reduction == "mean":
        return g / math.prod(shape)
    return g


# ----------------------------------------------------------------- log_softmax
# The reductions as ufunc methods and the last steps in place: ndarray.max / .sum's Python
# wrappers and two temporaries cost ~2 us of a 32x10 call; the same operations in the same
# order, so the same bits.
def _log_softmax(x, dim):
    shifted = x - np.maximum.reduce(x, axis=dim, keepdims=True)
    total = np.add.reduce(np.exp(shifted), axis=dim, keepdims=True)
    return np.subtract(shifted, np.log(total, out=total), out=shifted)


def _log_softmax_backward(grad, logp, dim):
    scaled = np.exp(logp)
    np.multiply(scaled, np.add.reduce(grad, axis=dim, keepdims=True), out=scaled)
    return np.subtract(grad, scaled, out=scaled)


log_softmax_p = defop("log_softmax", inputs=("x",), params=("dim",), impl=_log_softmax,
                      abstract=_same, jit=False)
# Its backward is one kernel too (PyTorch's _log_softmax_backward_data): ``grad - softmax *
# sum(grad)``. Linear in grad, with the transpose ``v - sum(v * softmax)``; in logp,
# elementwise ``-softmax * sum(grad)``. (``out`` is taken: it names a node's own output.)
log_softmax_backward_p = defop(
    "log_softmax_backward", inputs=("grad", "logp"), params=("dim",),
    impl=_log_softmax_backward, node="LogSoftmaxBackwardDataBackward0",
    abstract=lambda grad, logp, dim: (grad.shape, np.dtype(grad.dtype)), jit=False)
log_softmax_p.defvjp(lambda g, out, dim: log_softmax_backward_p(g, out, dim=dim))
log_softmax_backward_p.defvjp(
    lambda g, logp, dim: g - (g * logp.exp()).sum(dim, keepdim=True),
    lambda g, grad, logp, dim: -(g * logp.exp()) * grad.sum(dim, keepdim=True))


def log_softmax(x: Tensor, dim: int):
    """``log_softmax`` as one node, or None where the composite must run (see ``fused``).

    >>> log_softmax(ng.tensor([[0., 0.]]), 1)
    tensor([[-0.6931, -0.6931]])
    """
    if not fused(x) or type(dim) is not int or not -x.ndim <= dim < x.ndim:
        return None
    return log_softmax_p(x, dim=dim % x.ndim)


# ----------------------------------------------------------------- nll_loss
def _picked(target, weight, ignore_index):
    """Per sample: whether it counts (None: all do), its class (0 where ignored) and its
    weight (0 where ignored)."""
    keep = target != ignore_index
    if keep.all():  # the usual batch: nothing to mask
        return None, target, weight[target]
    idx = np.where(keep, target, 0)
    return keep, idx, np.where(keep, weight[idx], 0)


def _largest_unsigned(target):
    """The largest target read as unsigned (a negative index reads huge), in one pass: below
    the class count exactly when every target is a class."""
    u = _UNSIGNED.get(target.dtype) or np.dtype(f"u{target.itemsize}")
    return np.maximum.reduce(target.view(u))  # (ndarray.max's Python wrapper costs ~0.3 us)


_UNSIGNED = {np.dtype(np.int64): np.dtype(np.uint64), np.dtype(np.int32): np.dtype(np.uint32)}


def _rows(n):
    """``np.arange(n)``, made once per ``n`` and read-only (the row index of every pick)."""
    a = _ROWS.get(n)
    if a is None:
        a = _ROWS[n] = np.arange(n)
        a.flags.writeable = False
    return a


_ROWS = {}


# ``plain`` (a param of both rows, settled by ``nll_loss`` from one pass over the targets):
# every sample counts with weight 1 (no class weights, every target a class, none
# ``ignore_index``), the usual batch; the kernels then skip the masks and the weight gathers
# and give the general path's bits. The targets are saved by the node, so an in-place change
# to them before the backward is an error, not a stale ``plain``.
def _nll(x, target, weight, ignore_index, reduction, plain):
    if plain:  # the bits of the general path, with w = 1
        loss = -x[_rows(len(target)), target]
        if reduction == "none":
            return loss
        total = np.add.reduce(loss)  # (ndarray.sum's Python wrapper costs ~0.5 us)
        return total if reduction == "sum" else total / x.dtype.type(len(target))
    keep, idx, w = _picked(target, weight, ignore_index)
    loss = -(x[np.arange(len(idx)), idx] * w)
    if keep is not None:  # 0, not -(x * 0), for an ignored row (x may be inf)
        loss = np.where(keep, loss, 0).astype(x.dtype, copy=False)
    if reduction == "none":
        return loss
    total = loss.sum()
    return total if reduction == "sum" else total / w.sum()


def _nll_backward(g, target, weight, x_shape, ignore_index, reduction, plain):
    if plain:
        out = np.zeros(x_shape, g.dtype)
        out[_rows(len(target)), target] = (
            -g if reduction != "mean" else -g / g.dtype.type(len(target)))
        return out
    keep, idx, w = _picked(target, weight, ignore_index)
    scale = -g if reduction != "mean" else -g / w.sum()
    out = np.zeros(x_shape, g.dtype)
    picked = w * scale
    if keep is not None:  # 0 for an ignored row (scale is inf when every row is ignored)
        picked = np.where(keep, picked, 0)
    out[np.arange(len(idx)), idx] = picked
    return out


nll_loss_p = defop("nll_loss", inputs=("x", "target", "weight"),
                   params=("ignore_index", "reduction", "plain"), impl=_nll,
                   abstract=lambda x, target, weight, ignore_index, reduction, plain: (
                       target.shape if reduction == "none" else (), np.dtype(x.dtype)),
                   jit=False)
nll_loss_backward_p = defop(
    "nll_loss_backward", inputs=("g", "target", "weight"),
    params=("x_shape", "ignore_index", "reduction", "plain"), impl=_nll_backward,
    abstract=lambda g, target, weight, x_shape, **p: (tuple(x_shape), np.dtype(g.dtype)),
    jit=False)
nll_loss_p.defvjp(
    lambda g, target, weight, x_shape, ignore_index, reduction, plain: nll_loss_backward_p(
        g, target, weight, x_shape=x_shape, ignore_index=ignore_index, reduction=reduction,
        plain=plain),
    None, None)
# The backward is linear in g: its own vjp is the forward applied to the cotangent.
nll_loss_backward_p.defvjp(
    lambda g, target, weight, ignore_index, reduction, plain: nll_loss_p(
        g, target, weight, ignore_index=ignore_index, reduction=reduction, plain=plain),
    None, None)

_ONES = {}


def nll_loss(x: Tensor, target: Tensor, weight, ignore_index: int, reduction: str):
    """``nll_loss`` of log-probabilities ``x`` (N, C) and int64 class indices ``target``
    (N,) as one node, or None where the composite must run (see ``fused``).

    >>> nll_loss(ng.tensor([[-1., -2.]]), ng.tensor([1]), None, -100, "mean")
    tensor(2.)
    """
    if (not fused(x, weight) or x.ndim != 2 or reduction not in REDUCTIONS
            or type(target._data) is not _ndarray or target._data.shape != x._data.shape[:1]):
        return None
    return _nll_loss(x, target, weight, ignore_index, reduction)


def _nll_loss(x, target, weight, ignore_index, reduction):
    n, c = x._data.shape
    ignore_index = int(ignore_index)
    ones = weight is None
    if ones:
        key = (c, x._data.dtype)
        weight = _ONES.get(key)
        if weight is None:  # shared and read-only: never a leaf of anything
            a = np.ones(c, x._data.dtype)
            a.flags.writeable = False
            weight = _ONES[key] = Tensor._make(a)
    elif weight._data.shape != (c,):
        return None
    if _largest_unsigned(target._data) < c:  # every target a class: nothing to check
        plain = ones and not 0 <= ignore_index < c
    else:  # PyTorch's IndexError, before reading, unless the strays are ignore_index
        check_targets_p.impl(target._data, c, ignore_index)
        plain = False
    return nll_loss_p(x, target, weight, ignore_index=ignore_index, reduction=reduction,
                      plain=plain)


_INT64 = np.dtype(np.int64)


def cross_entropy(x: Tensor, target, ignore_index: int, reduction: str):
    """``cross_entropy`` of logits ``x`` (N, C) and int64 class indices ``target`` (N,), with
    no class weights or smoothing: ``nll_loss(log_softmax(x, 1))`` as torch records it (an
    ``NllLossBackward0`` over a ``LogSoftmaxBackward0``), each input checked once; None where
    ``nn.functional.cross_entropy``'s general path must run.

    >>> cross_entropy(ng.tensor([[0., 0.]]), ng.tensor([1]), -100, "mean")
    tensor(0.6931)
    """
    if tracing_hook.capture is not None or not isinstance(x, Tensor):
        return None
    d = x._data
    if (type(d) is not _ndarray or d.ndim != 2 or d.dtype.kind != "f" or not d.size
            or not isinstance(target, Tensor) or reduction not in REDUCTIONS):
        return None
    t = target._data
    if type(t) is not _ndarray or t.dtype != _INT64 or t.shape != d.shape[:1]:
        return None
    return _nll_loss(log_softmax_p(x, dim=1), target, None, ignore_index, reduction)


# ----------------------------------------------------------------- mse_loss
def _mse(x, t, reduction):
    d = x - t
    return _reduce(d * d, reduction)


def _mse_grad(g, x, t, reduction):
    return (x - t) * (_scale(g, x._data.shape, reduction) * 2)


mse_loss_p = defop("mse_loss", inputs=("x", "t"), params=("reduction",), impl=_mse,
                   abstract=_reduced, jit=False)
mse_loss_p.defvjp(lambda g, x, t, reduction: _mse_grad(g, x, t, reduction),
                  lambda g, x, t, reduction: _mse_grad(g, t, x, reduction))  # one shape


def mse_loss(x: Tensor, t: Tensor, reduction: str):
    """``mse_loss`` as one node, or None where the composite must run (see ``fused``).

    >>> mse_loss(ng.tensor([1., 3.]), ng.tensor([0., 0.]), "mean")
    tensor(5.)
    """
    if not fused(x, t) or x._data.shape != t._data.shape or reduction not in REDUCTIONS:
        return None
    return mse_loss_p(x, t, reduction=reduction)


# ----------------------------------------------------------------- binary cross entropy
def _bce_logits(x, t, reduction):
    # (1 - t) x - log(sigmoid(x)), with -log(sigmoid(x)) = log1p(exp(-|x|)) + max(-x, 0).
    loss = (1 - t) * x + np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
    return _reduce(loss, reduction)


bce_logits_p = defop("binary_cross_entropy_with_logits", inputs=("x", "t"),
                     params=("reduction",), impl=_bce_logits, abstract=_reduced, jit=False)
bce_logits_p.defvjp(
    lambda g, x, t, reduction: (x.sigmoid() - t) * _scale(g, x._data.shape, reduction),
    lambda g, x, reduction: -x * _scale(g, x._data.shape, reduction))


def _bce(x, t, reduction):
    loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    return _reduce(loss, reduction)


def _bce_grad_x(g, x, t, reduction):
    # PyTorch's: (x - t) / max((1 - x) x, 1e-12).
    return (x - t) / ((1 - x) * x).clamp(min=1e-12) * _scale(g, x._data.shape, reduction)


def _bce_grad_t(g, x, reduction):
    # PyTorch's: log(1 - x) - log(x), each clamped at -100 as in the forward.
    return ((1 - x).log().clamp(min=-100.0) - x.log().clamp(min=-100.0)) * _scale(
        g, x.shape, reduction)


bce_p = defop("binary_cross_entropy", inputs=("x", "t"), params=("reduction",), impl=_bce,
              abstract=_reduced, jit=False)
bce_p.defvjp(_bce_grad_x, _bce_grad_t)


def binary_cross_entropy(x: Tensor, t: Tensor, logits: bool, reduction: str):
    """``binary_cross_entropy`` (of probabilities, or ``logits``) as one node, or None where
    the composite must run (see ``fused``).

    >>> binary_cross_entropy(ng.tensor([0.]), ng.tensor([1.]), True, "mean")
    tensor(0.6931)
    """
    if not fused(x, t) or x._data.shape != t._data.shape or reduction not in REDUCTIONS:
        return None
    return (bce_logits_p if logits else bce_p)(x, t, reduction=reduction)

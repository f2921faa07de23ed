"""ops.convolution: a CPU convolution as two primitives, PyTorch's ``ConvolutionBackward0``.

Room: ops. Imports NumPy, the registry, grad mode and the ops its rules are written in.

As a composite (``nn.functional_conv``) a convolution applied nine primitives (the padding's
``index_add``, ``im2col``, four reshapes, the matmul, the bias add, ``named``) and recorded as
many nodes. On NumPy payloads (eager, or traced for the CPU) it is two here:

- ``conv_windows(x)``: the padded input's windows ``(N, C, *kernel, *out)``, one copy into a
  zero-padded buffer and one strided-view copy (no separate padding step); its vjp,
  ``conv_windows_add``, adds each window back where it came from, the padding dropped (one
  Numba pass, ``ops.window_kernels``), and the two are each other's vjp;
- ``conv(cols, w, b)``: one BLAS product per image of the weight matrix with those windows,
  the bias added in place; node ``ConvolutionBackward0``. Its backward reads the saved
  windows for the weight's gradient (``cols @ g^T`` per image, summed) and the weight for
  the windows' gradient (``w^T @ g``, laid out for ``conv_windows_add``'s adds), so the
  windows are made once per step, forward.

The backward rules run one NumPy kernel each, or, when a graph of the backward is being
recorded (``create_graph``), the same products in numgrad ops, so every order of derivative
follows. ``@ng.jit`` runs them as NumPy steps between its kernels, as it ran ``im2col``
and ``col2im`` (LeNet's ``jit(value_and_grad)`` step 1.2x -> 1.0x torch eager); under
``vmap``, forward mode or on a device the caller takes the composite instead
(``nn.functional_conv._cpu_primitive`` says when).
"""
from __future__ import annotations

import math

import numpy as np

from numgrad.grad_mode import is_grad_enabled
from numgrad.ops import window_kernels
from numgrad.ops.registry import defop
from numgrad.tensor import Tensor

_GEOM = ("kernel", "stride", "dilation", "padding")


def _windows(x, kernel, stride, dilation, padding):
    if any(padding):
        xp = np.zeros(x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding)),
                      x.dtype)
        xp[(slice(None),) * 2 + tuple(slice(p, p + s) for s, p in
                                      zip(x.shape[2:], padding))] = x
    else:
        xp = x
    out = tuple((s - d * (k - 1) - 1) // st + 1
                for s, k, st, d in zip(xp.shape[2:], kernel, stride, dilation))
    sp = xp.strides[2:]
    view = np.lib.stride_tricks.as_strided(
        xp, xp.shape[:2] + tuple(kernel) + out,
        xp.strides[:2] + tuple(s * d for s, d in zip(sp, dilation))
        + tuple(s * st for s, st in zip(sp, stride)), writeable=False)
    return np.ascontiguousarray(view)


def _windows_shape(x, kernel, stride, dilation, padding):
    out = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                for s, k, st, d, p in zip(x.shape[2:], kernel, stride, dilation, padding))
    return tuple(x.shape[:2]) + tuple(kernel) + out


def _windows_add(g, shape, kernel, stride, dilation, padding):
    n = len(kernel)
    # One Numba pass (LeNet's second layer: 1.0 -> 0.5 ms against a NumPy slice-add per
    # kernel offset). ``conv``'s backward hands ``g`` over as a view of a
    # ``(*kernel, C, *out, N)`` array: the loop reads it in that order, a copy only for
    # other layouts (a second order's).
    d = np.ascontiguousarray(g.transpose(tuple(range(2, 2 + n)) + (1,)
                                         + tuple(range(2 + n, 2 + 2 * n)) + (0,)))
    k, st, dl, sp = window_kernels.geometry2d(kernel, stride, dilation, shape[2:])
    pd = (0,) * (2 - n) + tuple(padding)  # a row high has no padding above it
    if n == 1:  # one row high: (k, C, o, N) -> (1, k, C, 1, o, N)
        d = d.reshape((1,) + d.shape[:2] + (1,) + d.shape[2:])
    acc = window_kernels.kernel("windows_add", d.dtype)(d, shape[0], shape[1], *sp, *k, *st, *dl, *pd)
    return np.ascontiguousarray(acc.transpose(3, 0, 1, 2)).reshape(shape)


conv_windows_p = defop("conv_windows", inputs=("x",), params=_GEOM, impl=_windows,
                       node="Im2ColBackward0",
                       abstract=lambda x, kernel, stride, dilation, padding: (
                           _windows_shape(x, kernel, stride, dilation, padding), x.dtype))
conv_windows_add_p = defop("conv_windows_add", inputs=("g",), params=("shape",) + _GEOM,
                           impl=_windows_add, node="Col2ImBackward0",
                           abstract=lambda g, shape, kernel, stride, dilation, padding: (
                               tuple(shape), g.dtype))
conv_windows_p.defvjp(lambda g, x_shape, kernel, stride, dilation, padding: conv_windows_add_p(
    g, shape=tuple(x_shape), kernel=kernel, stride=stride, dilation=dilation, padding=padding))
conv_windows_add_p.defvjp(lambda g, kernel, stride, dilation, padding: conv_windows_p(
    g, kernel=kernel, stride=stride, dilation=dilation, padding=padding))


# ------------------------------------------------------------------ the product
def _split(cols_shape, w_shape, groups):
    """``(N, G, C/G * prod(kernel), L)`` and ``(G, O/G, C/G * prod(kernel))``."""
    n = len(w_shape) - 2
    nb, c = cols_shape[:2]
    ck = c // groups * math.prod(cols_shape[2:2 + n])
    length = math.prod(cols_shape[2 + n:])
    return (nb, groups, ck, length), (groups, w_shape[0] // groups, ck)


def _out_shape(cols_shape, w_shape):
    return tuple(cols_shape[:1]) + (w_shape[0],) + tuple(cols_shape[len(w_shape):])


def _conv(cols, w, b, groups):
    c4, w3 = _split(cols.shape, w.shape, groups)
    if groups == 1:  # one (O, CK) @ (CK, L) product per image
        out = np.matmul(w.reshape(w3[1:]), cols.reshape(c4[:1] + c4[2:]))
    else:
        out = np.matmul(w.reshape(w3), cols.reshape(c4))
    out = out.reshape(_out_shape(cols.shape, w.shape))
    out += b.reshape((-1,) + (1,) * (w.ndim - 2))
    return out


def _cols_grad(g, w, groups, cols_shape):
    c4, w3 = _split(cols_shape, w.shape, groups)
    n = w.ndim - 2
    if groups == 1:
        # One product ``(*kernel, C, O) @ (O, *positions, N)``, its rows as long as the
        # batch's positions, laid out ``(*kernel, C, *positions, N)``: ``conv_windows_add``
        # then adds rows ``out_width * N`` long per kernel offset, where its slice-adds over
        # ``(N, C, *out)`` views ran rows ``out_width`` long (LeNet's second layer: the
        # product and the adds 1.9 -> 1.1 ms). A view in the windows' axis order is returned.
        gt = np.ascontiguousarray(g.transpose(tuple(range(1, n + 2)) + (0,)))
        wt = np.ascontiguousarray(w.transpose(tuple(range(2, n + 2)) + (1, 0)))
        d = wt.reshape(-1, w.shape[0]) @ gt.reshape(w.shape[0], -1)
        d = d.reshape(tuple(w.shape[2:]) + (w.shape[1],) + tuple(cols_shape[2 + n:])
                      + (cols_shape[0],))
        return d.transpose((2 * n + 1, n) + tuple(range(n)) + tuple(range(n + 1, 2 * n + 1)))
    g4 = g.reshape(c4[:2] + (w3[1], c4[3]))
    return np.matmul(w.reshape(w3).transpose(0, 2, 1), g4).reshape(cols_shape)


def _weight_grad(g, cols, groups, w_shape):
    # ``cols @ g^T`` per image (``(CK, L) @ (L, O)``), then transposed: faster for these
    # shapes than ``g @ cols^T`` (a transposed long operand).
    c4, w3 = _split(cols.shape, w_shape, groups)
    g4 = g.reshape(c4[:2] + (w3[1], c4[3]))
    dw = np.matmul(cols.reshape(c4), g4.transpose(0, 1, 3, 2)).sum(0)
    # written into an array of the weight's shape, not a reshaped copy: a view's base might
    # be shared, so autograd would copy it again to make it ``.grad``
    out = np.empty(tuple(w_shape), dw.dtype)
    out.reshape(w3)[...] = dw.transpose(0, 2, 1)
    return out


conv_p = defop("conv", inputs=("cols", "w", "b"), params=("groups",), impl=_conv,
               node="ConvolutionBackward0",
               abstract=lambda cols, w, b, groups: (_out_shape(cols.shape, w.shape),
                                                    np.dtype(w.dtype)))
conv_cols_grad_p = defop("conv_cols_grad", inputs=("g", "w"), params=("groups", "cols_shape"),
                         impl=_cols_grad,
                         abstract=lambda g, w, groups, cols_shape: (tuple(cols_shape),
                                                                    np.dtype(g.dtype)))
conv_weight_grad_p = defop("conv_weight_grad", inputs=("g", "cols"),
                           params=("groups", "w_shape"), impl=_weight_grad,
                           abstract=lambda g, cols, groups, w_shape: (tuple(w_shape),
                                                                      np.dtype(g.dtype)))


# Grad mode is on while the rules run only when the backward is itself recorded
# (``create_graph``): then they are written in numgrad ops, whose rules give the next order.
def _rule_cols(g, w, cols_shape, groups):
    if not is_grad_enabled():
        return conv_cols_grad_p(g, w, groups=groups, cols_shape=tuple(cols_shape))
    c4, w3 = _split(cols_shape, w.shape, groups)
    g4 = g.reshape(c4[:2] + (w3[1], c4[3]))
    return (w.reshape(w3).transpose(1, 2) @ g4).reshape(tuple(cols_shape))


def _rule_w(g, cols, w_shape, groups):
    if not is_grad_enabled():
        return conv_weight_grad_p(g, cols, groups=groups, w_shape=tuple(w_shape))
    c4, w3 = _split(cols.shape, w_shape, groups)
    g4 = g.reshape(c4[:2] + (w3[1], c4[3]))
    return (g4 @ cols.reshape(c4).transpose(2, 3)).sum(0).reshape(tuple(w_shape))


conv_p.defvjp(lambda g, w, cols_shape, groups: _rule_cols(g, w, cols_shape, groups),
              lambda g, cols, w_shape, groups: _rule_w(g, cols, w_shape, groups),
              lambda g: g.sum((0,) + tuple(range(2, g.ndim))))


def conv(x, weight, bias, stride, padding, dilation, groups):
    """The convolution of ``x`` ``(N, C, *spatial)`` with ``weight`` (padding ``padding``
    per spatial dim on both sides) as two primitives; ``bias`` may be None. The caller has
    checked the arguments and that the kernels may run
    (``nn.functional_conv._cpu_primitive``).

    >>> conv(ng.ones(1, 1, 3), ng.ones(1, 1, 2), None, (1,), (0,), (1,), 1)
    tensor([[[2., 2.]]])
    """
    cols = conv_windows_p(x, kernel=tuple(weight.shape[2:]), stride=tuple(stride),
                          dilation=tuple(dilation), padding=tuple(padding))
    if bias is None:  # a constant zero: no gradient flows to it, as PyTorch's None bias
        bias = Tensor._make(np.zeros(weight.shape[:1], weight._data.dtype))
    return conv_p(cols, weight, bias, groups=int(groups))

"""ops.threshold: relu's eager kernel, and its backward as one eager kernel (PyTorch's
``threshold_backward``).

Room: ops. Imports NumPy, tracing_hook and the registry.

relu's vjp rule, ``where(out <= 0, 0, g)``, ran two ops per backward eagerly (the compare and
the where, each through dispatch). On eager NumPy payloads of one dtype and shape it runs this
single primitive instead; traced (``@ng.jit`` differentiates relu through its rule), under a
transform, or on a device, the rule keeps its ``where``, which the compiler fuses.
"""
from __future__ import annotations

import numpy as np

import numgrad.tracing_hook as tracing_hook
from numgrad.ops.registry import defop

_ndarray = np.ndarray


# Same-width integer views of the float dtypes the bitwise kernel serves.
_BITS = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}
# np.where's per-element branch costs ~22 us on 64x128 float32 with a relu's random mask; the
# bitwise mask ~4.5 us, but its extra passes make it slower below ~2,000 elements.
_BITWISE_FROM = 2048


def _relu_by_where(x):
    # PyTorch's rule, `x < 0 ? 0 : x`, spelled portably: np.maximum with the zeros copied back
    # (np.where's per-element branch is 10x slower on a random sign pattern).
    out = np.maximum(x, np.zeros((), x.dtype), out=np.empty_like(x))
    np.copyto(out, x, where=(x == 0))
    return out


def _max_is_relu(dtype):
    """Whether ``np.maximum(0, x)`` is PyTorch's relu bit for bit in ``dtype`` here: -0 stays
    -0 and a NaN passes with its sign and payload. x86's SIMD max returns its second operand
    where the two compare equal (so ``x``: its -0) and NumPy passes a NaN operand through;
    other machines' max instructions may rank -0 below +0. Probed once per dtype, on the
    SIMD body, its tail and strided loops."""
    special = np.array([-0.0, 0.0, np.nan, -np.nan, -1.0, 1.0, -np.inf, np.inf, -1e-30],
                       dtype)
    zero = dtype.type(0)
    for n in (1, 5, 16, 37, 130):
        x = np.resize(special, 2 * n)
        for v in (x, x[::2], x[::-1]):
            want = _relu_by_where(v).view(f"u{dtype.itemsize}")
            got = np.maximum(zero, v)
            if got.dtype != dtype or not np.array_equal(got.view(want.dtype), want):
                return False
    return True


# dtype -> its zero, for the float dtypes whose relu is one np.maximum (see _max_is_relu).
_MAX_ZERO = {d: d.type(0) for d in map(np.dtype, (np.float16, np.float32, np.float64))
             if _max_is_relu(d)}


def relu_kernel(x):
    """relu's eager kernel, PyTorch's rule (``relu(-0.)`` is ``-0.``, NaN passes): one
    ``np.maximum(0, x)`` where that rule holds for it (integers; floats as probed), 2.5x
    faster than the copy-back; else ``_relu_by_where``.

    >>> relu_kernel(np.array([-1., -0., 2.]))
    array([ 0., -0.,  2.])
    """
    zero = _MAX_ZERO.get(x.dtype)
    if zero is not None:
        return np.maximum(zero, x)
    if x.dtype.kind != "f":
        return np.maximum(x.dtype.type(0), x)
    return _relu_by_where(x)


def _threshold_backward(grad, y):
    # 0 where relu's output is <= 0; NaN passes (1 at NaN, as PyTorch's threshold_backward).
    bits = _BITS.get(grad.dtype) if grad.size >= _BITWISE_FROM else None
    if bits is None:
        return np.where(y <= 0, grad.dtype.type(0), grad)
    # (y <= 0) - 1 is all ones where grad passes and 0 where it drops: the AND keeps grad's
    # bits exactly (inf, NaN and -0 in grad included) and gives +0 elsewhere, as np.where.
    mask = np.subtract(np.less_equal(y, 0), 1, dtype=bits)
    return np.bitwise_and(grad.view(bits), mask, out=mask).view(grad.dtype)


threshold_backward_p = defop(
    "threshold_backward", inputs=("grad", "y"), impl=_threshold_backward,
    abstract=lambda grad, y: (grad.shape, np.dtype(grad.dtype)),
    node="ThresholdBackwardBackward0", jit=False)


def threshold_backward(g, y):
    """``g`` where relu's output ``y`` is positive (or NaN), else 0, as one eager node; None
    where the caller's composite must run (traced, transformed, on a device, or mixed
    dtypes or shapes).

    >>> threshold_backward(ng.tensor([1., 2.]), ng.tensor([0., 3.]))
    tensor([0., 2.])
    """
    gd, yd = g._data, y._data
    if (tracing_hook.capture is not None or type(gd) is not _ndarray
            or type(yd) is not _ndarray or gd.shape != yd.shape or gd.dtype != yd.dtype):
        return None
    return threshold_backward_p(g, y)


def _again(g, y):
    # Linear and diagonal in grad: its transpose is itself.
    r = threshold_backward(g, y)
    return r if r is not None else g.masked_fill(y <= 0, 0)


threshold_backward_p.defvjp(_again, None)

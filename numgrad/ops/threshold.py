"""ops.threshold: relu's backward as one eager kernel (PyTorch's ``threshold_backward``).

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


def _threshold_backward(grad, y):
    # 0 where relu's output is <= 0; NaN passes (1 at NaN, as PyTorch's threshold_backward).
    return np.where(y <= 0, grad.dtype.type(0), grad)


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

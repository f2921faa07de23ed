"""printing: a repr that reads like PyTorch's (``tensor([1., 2.], requires_grad=True)``).

Room: core. Imports NumPy only; called lazily by ``Tensor.__repr__``.
"""
from __future__ import annotations

import numpy as np


def _float_formatter(a):
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.4f}"
    absf = np.abs(finite)
    nz = absf[absf > 0]
    ints = np.all(finite == np.round(finite))
    big, small = (absf.max(), nz.min()) if nz.size else (0.0, 0.0)
    if nz.size and (big / small > 1000 or big > 1e8 or small < 1e-4):
        spec = "{:.4e}"
    elif ints:
        spec = "{:.0f}."
    else:
        spec = "{:.4f}"
    fmt = spec.format
    # PyTorch's width: the widest finite magnitude, plus one if any value is negative
    # (-0.0 does not count); nan/inf are not padded.
    width = max(len(fmt(abs(v))) for v in finite) + (1 if (finite < 0).any() else 0)
    return lambda v: _special(v) or fmt(v).rjust(width)


def _special(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def tensor_repr(t) -> str:
    data = t._data
    suffix = []
    if type(data) is not np.ndarray:
        body = getattr(data, "_ng_repr", lambda: f"<{type(data).__name__}>")()
    else:
        a = data
        if a.size == 0:
            body = "[]"
            if a.ndim != 1:
                suffix.append(f"size={tuple(a.shape)}")
            if a.dtype.name == "int64":
                suffix.append("dtype=numgrad.int64")  # PyTorch names it when nothing shows it
        else:
            fmt = {}
            if a.dtype.kind == "f":
                fmt["float_kind"] = _float_formatter(a)
            elif a.dtype == np.bool_:
                width = 5 if not a.all() else 4
                fmt["bool"] = lambda v: ("True" if v else "False").rjust(width)
            body = np.array2string(a, separator=", ", prefix="tensor(", formatter=fmt,
                                   max_line_width=80, threshold=1000, edgeitems=3)
            body = body.replace(", ..., ", ",  ..., ")
    name = t.dtype.name
    if name not in ("float32", "int64", "bool"):
        suffix.append(f"dtype=numgrad.{name}")
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"

"""printing: a repr that reads like PyTorch's (``tensor([1., 2.], requires_grad=True)``).

Room: core. Imports NumPy only; called lazily by ``Tensor.__repr__``.
"""
from __future__ import annotations

import sys

import numpy as np

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
             "sci_mode": None}
_PROFILES = {"default": _DEFAULTS,
             "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
             "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3,
                      "linewidth": 80}}
_opts = dict(_DEFAULTS)


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print (``torch.set_printoptions``): digits after the point, the
    element count above which a tensor is summarised, the items kept at each edge of a
    summary, the line width, a ``profile`` ("default", "short", "full") that sets them
    all, and ``sci_mode`` (True/False force scientific notation on or off; None decides).

    Raises ValueError for an unknown profile.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"unknown print profile {profile!r}; use default, short or full")
        _opts.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _opts[name] = value
    _opts["sci_mode"] = sci_mode


def _float_formatter(a):
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.{_opts['precision']}f}"
    absf = np.abs(finite)
    nz = absf[absf > 0]
    ints = np.all(finite == np.round(finite))
    big, small = (absf.max(), nz.min()) if nz.size else (0.0, 0.0)
    p = _opts["precision"]
    sci = _opts["sci_mode"]
    if sci is None:
        sci = bool(nz.size and (big / small > 1000 or big > 1e8 or small < 1e-4))
    if sci:
        spec = f"{{:.{p}e}}"
    elif ints:
        spec = "{:.0f}."
    else:
        spec = f"{{:.{p}f}}"
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
    if type(data) is not np.ndarray and hasattr(data, "_ng_host"):
        data = data._ng_host()  # a device tensor prints its values, copied to the host
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
            threshold = _opts["threshold"]
            body = np.array2string(a, separator=", ", prefix="tensor(", formatter=fmt,
                                   max_line_width=_opts["linewidth"],
                                   threshold=sys.maxsize if threshold == float("inf")
                                   else int(threshold), edgeitems=_opts["edgeitems"])
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

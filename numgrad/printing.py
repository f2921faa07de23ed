"""printing: a repr that reads like PyTorch's (``tensor([1., 2.], requires_grad=True)``).

Room: core. Imports NumPy only; called lazily by ``Tensor.__repr__``. PyTorch's layout
(``torch/_tensor_str.py``) step by step: one element width fitted to the values (to the
summary's, past ``threshold`` elements), ``edgeitems`` at each end of a summary, lines
wrapped at ``linewidth``, suffixes moved to a new line when they would not fit.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from numgrad.tensor import Tensor as _Tensor

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


class _Formatter:
    """PyTorch's element formatter (``torch._tensor_str._Formatter``): one width for every
    element, from the nonzero finite values (of the summary, when summarising); floats in
    integer mode (``2.``), fixed point, or scientific when the magnitudes span over 1000x,
    exceed 1e8 or go below 1e-4."""

    def __init__(self, a):
        self.floating = a.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = _opts["precision"]
        if not self.floating:
            for v in a.reshape(-1).tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        flat = a.reshape(-1)
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        lo, hi = absv.min(), absv.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        sci = _opts["sci_mode"]
        self.sci_mode = bool(hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if sci is None \
            else sci
        if self.sci_mode:
            spec, extra = f"{{:.{p}e}}", 0
        elif self.int_mode:
            spec, extra = "{:.0f}", 1  # room for the "." that marks a float
        else:
            spec, extra = f"{{:.{p}f}}", 0
        self.max_width = max(len(spec.format(v)) + extra for v in vals.tolist())

    def format(self, value) -> str:
        if self.floating:
            p = _opts["precision"]
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{p}e}}".format(value)
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{{:.{p}f}}".format(value)
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a):
    """The elements a summary shows (``edgeitems`` at each end of each dim): the formatter
    is fitted to these alone, as PyTorch's is."""
    e = _opts["edgeitems"]
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    if not e:
        return a[tuple(slice(0, 0) for _ in a.shape)]
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) \
        if a.shape[0] > 2 * e else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _vector_str(a, indent, summarize, fmt):
    e = _opts["edgeitems"]
    per_line = max(1, math.floor((_opts["linewidth"] - indent) / (fmt.max_width + 2)))
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = _opts["edgeitems"]
    if summarize and a.shape[0] > 2 * e:
        slices = ([_nested_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_nested_str(a[i], indent + 1, summarize, fmt)
                     for i in range(a.shape[0] - e, a.shape[0])])
    else:
        slices = [_nested_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def array_str(a, indent: int) -> str:
    """The body PyTorch prints for an array's values (``torch._tensor_str._tensor_str``),
    lines after the first indented by ``indent``."""
    if a.size == 0:
        return "[]"
    summarize = a.size > _opts["threshold"]
    fmt = _Formatter(_summarized(a) if summarize else a)
    return _nested_str(a, indent, summarize, fmt)


def _add_suffixes(text, suffixes, indent):
    # Each suffix goes on the last line if it fits in the line width, else on a new one.
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > _opts["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t) -> str:
    """``tensor([...], dtype=..., requires_grad=True)`` laid out as PyTorch lays it out."""
    import numgrad.defaults as _defaults
    import numgrad.dtypes as _dt
    data = t._data
    prefix = "tensor("
    suffixes = []
    default_device = _defaults.device.type if _defaults.device is not None else "cpu"
    if t.device.type != default_device:  # as PyTorch: only a device other than the default
        suffixes.append(f"device='{t.device}'")
    if type(data) is not np.ndarray and hasattr(data, "_ng_host"):
        data = data._ng_host()  # a device tensor prints its values, copied to the host
    dtype = t.dtype
    default = dtype in (_dt.default_float, _dt.int64, _dt.bool_)
    if type(data) is not np.ndarray:
        body = getattr(data, "_ng_repr", lambda: f"<{type(data).__name__}>")()
        suffixes += getattr(data, "_ng_suffixes", list)()  # a meta tensor's size
        if not default:
            suffixes.append(f"dtype={dtype!r}")
    elif data.size == 0:
        body = "[]"
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if dtype is not _dt.default_float:  # PyTorch names it when no value shows it
            suffixes.append(f"dtype={dtype!r}")
    else:
        if not _opts["edgeitems"]:
            suffixes.append(f"size={tuple(data.shape)}")
        if not default:
            suffixes.append(f"dtype={dtype!r}")
        body = array_str(data, len(prefix))
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, len(prefix))


# ``Tensor`` (below this module) reaches it through this slot (numgrad/tensor.py).
_Tensor._ng_printing = sys.modules[__name__]

"""The ``meta`` device: tensors with a shape and a dtype but no data (``device="meta"``,
``with ng.device("meta"):``, ``module.to("meta")``), as PyTorch's.

Room: core (imports only ``device_type``). A meta tensor's payload is a ``MetaArray``; like a
CUDA payload it carries ``_ng_interpreter``, so dispatch hands it every primitive and this
interpreter answers with the primitive's shape rule (its ``abstract``, the one the tracer
uses), never computing a value. Autograd records meta ops as any other. Reading values
(printing aside) raises PyTorch's errors; so does mixing a meta tensor with a CPU one that is
not a 0-d scalar.

>>> x = ng.zeros(2, 3, device="meta")
>>> (x * 2).sum(0)
tensor(..., device='meta', size=(3,))
"""
from __future__ import annotations

import math

import numpy as np

from numgrad.device_type import device as _device

META = _device("meta")
_NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaArray:
    """The payload of a meta tensor: a shape and a NumPy dtype."""

    __slots__ = ("shape", "dtype")
    _ng_device = META
    _ng_standin = None

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        for s in self.shape:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(self.shape)}")
        self.dtype = np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def astype(self, dtype, copy=True):
        return MetaArray(self.shape, dtype)

    def _ng_concrete(self, reason=None):
        if reason == "array":
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        raise NotImplementedError(_NO_DATA)

    def _ng_repr(self):
        return "..."

    def _ng_suffixes(self):
        return [f"size={self.shape}"]


def empty(shape, dtype) -> MetaArray:
    """A meta payload of ``shape`` and ``dtype`` (what a factory makes on ``meta``)."""
    return MetaArray(shape, dtype)


def _broadcast(shapes):
    return np.broadcast_shapes(*shapes)


class MetaInterpreter:
    """Every primitive applied to a meta payload: its output's shape and dtype, no value."""

    _dtype_cache: dict = {}

    def refuse_backward(self):
        """Backward may run on meta tensors (it computes meta gradients)."""

    def detach(self, data):
        return data

    def detached(self, tensor, out):
        pass

    def wrap_hook(self, tensor, hook):
        return hook

    def concrete_access(self, data, reason=None):
        raise NotImplementedError(_NO_DATA)

    def process(self, prim, datas, params):
        for d in datas:
            interp = getattr(d, "_ng_interpreter", None)
            if type(d) is np.ndarray:
                if d.ndim != 0:
                    raise RuntimeError("Tensor on device cpu is not on the expected device "
                                       "meta!")
            elif interp is not None and interp is not self:
                return interp.process(prim, datas, params)  # a trace or transform sees it first
        if prim.name == "to_device":
            if _device(params["device"]).type != "meta":
                raise NotImplementedError(_NO_DATA)
            return datas[0]
        shape, dtype = self._abstract(prim, datas, params)
        return MetaArray(shape, dtype)

    def _abstract(self, prim, datas, params):
        if prim.kind in ("elementwise", "compare"):
            shape = _broadcast([d.shape for d in datas])
            key = (prim.name, tuple(d.dtype for d in datas), repr(sorted(params.items())))
            dt = self._dtype_cache.get(key)
            if dt is None:  # NumPy says what the impl returns, so meta dtypes match eager ones
                probe = prim.impl(*[np.ones(1, d.dtype) for d in datas], **params)
                dt = self._dtype_cache[key] = np.asarray(probe).dtype
            return shape, dt
        if prim.abstract is None:
            raise NotImplementedError(f"numgrad: '{prim.name}' has no shape rule, so it cannot "
                                      "run on meta tensors")
        shape, dt = prim.abstract(*datas, **params)
        return shape, dt

    def cast(self, d, dtype):
        return MetaArray(d.shape, dtype)


INTERPRETER = MetaInterpreter()
MetaArray._ng_interpreter = INTERPRETER

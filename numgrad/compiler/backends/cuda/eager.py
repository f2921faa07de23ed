"""backends.cuda.eager: eager ops on CUDA tensors, each one a one-equation CUDA program.

Room: compiler. ``CudaArray._ng_interpreter`` is ``INTERPRETER``: ``ops.dispatch``
hands it every primitive applied to a CUDA payload (autograd is recorded by the
dispatcher as for NumPy payloads). It builds the graph of that one equation and
compiles it with the CUDA backend (``backends.cuda.renderer``): the same renderer ``@ng.jit``
uses, not a second engine. Programs are cached per (op, params, shapes, dtypes,
device). Python scalars arrive as 0-d host arrays (as in PyTorch, a 0-d CPU value may
meet a CUDA tensor); any other host array is a device mismatch, with PyTorch's error.
"""
from __future__ import annotations

import numpy as np

from numgrad.compiler.backends.cuda import array as cuda_array
from numgrad.compiler import pipeline as _pipeline
from numgrad.compiler.backends import cuda as _backend
from numgrad.compiler.ir import Eqn, Graph, Var
from numgrad.compiler.tracer import current_tracer
from numgrad.ops.device_copy import to_device as _to_device
from numgrad.ops.dispatch import broadcast_shapes
from numgrad.tensor import device as _device

_CACHE_MAX = 4096


def mismatch(a, b):
    return RuntimeError("Expected all tensors to be on the same device, but found at least two "
                        f"devices, {a} and {b}!")


def _param_key(params):
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


class CudaEager:
    def __init__(self):
        self.programs = {}
        self._scalars = {}
        self._dtypes = {}
        self.compiles = 0

    # The rest of the payload-interpreter protocol (the tracer's; see compiler.tracer).
    def refuse_backward(self):
        """The engine asks whether ``backward()`` may run here (the tracer refuses): on CUDA
        tensors, eagerly, it may."""

    def detach(self, data):
        return data  # the same device memory

    def detached(self, tensor, out):
        # The alias shares the payload, so an in-place op on either writes the memory both
        # read; it is recorded as a view too, as a traced alias is (ops.inplace).
        from numgrad.ops import views
        views.record(out, tensor, views.DETACH, {})

    def wrap_hook(self, tensor, hook):
        return hook

    def concrete_access(self, data, reason=None):
        pass

    def _abstract(self, prim, ins, params):
        if prim.kind in ("elementwise", "compare"):
            shape = broadcast_shapes(*[v.shape for v in ins]) if len(ins) > 1 else ins[0].shape
            key = (prim.name, tuple(v.dtype for v in ins), _param_key(params))
            dt = self._dtypes.get(key)
            if dt is None:
                probe = prim.impl(*[np.ones(1, v.dtype) for v in ins], **params)
                dt = self._dtypes[key] = np.asarray(probe).dtype
            return tuple(shape), dt
        shape, dt = prim.abstract(*ins, **params)
        return tuple(shape), np.dtype(dt)

    def process(self, prim, datas, params):
        device = None
        host_array = False
        CudaArray = cuda_array.CudaArray
        for d in datas:
            t = type(d)
            if t is CudaArray:
                dev = d._ng_device
                if device is None:
                    device = dev
                elif dev is not device and dev != device:
                    raise mismatch(device, dev)
            elif t is np.ndarray:
                host_array = host_array or d.ndim != 0
            else:  # a traced value: the tracer records the op
                interp = getattr(d, "_ng_interpreter", None)
                if interp is not None and interp is not self:
                    return interp.process(prim, datas, params)
        if host_array:
            tracer = current_tracer()
            if tracer is not None and tracer.backward:
                # A gradient the engine derives inside @ng.jit (value_and_grad, grad) from
                # a host constant it made (a seed, expanded) and a CUDA constant the
                # function holds (a detached captured tensor): both are constants of one
                # graph, which the CUDA backend places on its device, so the trace records
                # the op rather than eager mode refusing the mix.
                return tracer.process(prim, datas, params)
            raise mismatch(device, "cpu")
        if prim is _to_device:
            return _move(datas[0], _device(params["device"]))
        host = prim.role == "host" and not prim.cost.blas and not prim.view
        pkey = _param_key(params) if params else ()
        # Not cached: host steps (nothing to compile), and params NumPy prints abridged
        # (large index arrays), whose repr would not tell them apart.
        key = None if host or (pkey and "..." in str(pkey)) else (
            prim.name, pkey, tuple((d.shape, d.dtype.str) for d in datas), device)
        prog = self.programs.get(key) if key is not None else None
        if prog is None:  # the equation's graph is built only to compile it
            ins = [Var(i, d.shape, d.dtype) for i, d in enumerate(datas)]
            shape, dtype = self._abstract(prim, ins, params)
            out = Var(len(ins), shape, dtype)
            graph = Graph(ins, [Eqn(prim, ins, params, out)], [out], name=prim.name)
            prog = _pipeline.compile_graph(graph, _backend,
                                           _pipeline.Options(name=f"eager_{prim.name}", role="op"))
            if key is not None:
                if len(self.programs) >= _CACHE_MAX:
                    self.programs.pop(next(iter(self.programs)))
                self.programs[key] = prog
                self.compiles += 1
        arrays = [d if type(d) is CudaArray else self._scalar(d, device) for d in datas]
        return prog(arrays)[0]

    def _scalar(self, d, device):
        # Python scalars (0-d host arrays) on the device, kept per value: a loop's `x * 2.0`
        # or learning rate is uploaded once, not at every op. Kernels never write inputs.
        key = (d.dtype.str, d.tobytes(), device)
        a = self._scalars.get(key)
        if a is None:
            if len(self._scalars) >= 256:
                self._scalars.pop(next(iter(self._scalars)))
            a = self._scalars[key] = cuda_array.to_device(d, device)
        return a


def _move(d, target):
    if target.type == "cpu":
        return d._ng_host()
    if target == d._ng_device:
        return d
    return cuda_array.to_device(d._ng_host(), target)


def cast(d, dtype):
    from numgrad.ops.elementwise import to_dtype
    return INTERPRETER.process(to_dtype, [d], {"dtype": dtype})


INTERPRETER = CudaEager()

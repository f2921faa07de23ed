"""cuda.eager: eager ops on CUDA tensors, each one a one-equation CUDA program.

Room: CUDA runtime (below the ops; imports nothing above it). ``INTERPRETER`` is every
``CudaArray``'s ``_ng_interpreter``: ``ops.dispatch`` hands it each primitive applied to a
CUDA payload (autograd is recorded by the dispatcher as for NumPy payloads). It checks
the devices, uploads Python scalars, and runs the op's program, cached per (op, params,
shapes, dtypes, device). Python scalars arrive as 0-d host arrays (as in PyTorch, a 0-d
CPU value may meet a CUDA tensor); any other host array is a device mismatch, with
PyTorch's error.

What it needs from the layers above is registered into it, never imported: the ops give
the device move, the cast and the alias record of ``detach`` (``register``, called by
``ops.cuda_ops`` when the ops are imported); the compiler's CUDA backend builds each
program from the equation's graph (``backends.cuda.one_op``: the same renderer
``@ng.jit`` uses, not a second engine), loaded on the first compile through
``load_compiler``, which ``numgrad/__init__`` sets (the package sits above both).
"""
from __future__ import annotations

import numpy as np

from numgrad.cuda import array as cuda_array
import numgrad.tracing_hook as tracing_hook
from numgrad.device_type import device as _device

# Set by the package (numgrad/__init__): returns the compiler's one-op module, importing it
# (and Numba) on the first CUDA op that needs a kernel compiled.
load_compiler = None

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
        self.compiles = 0
        self.compiler = None    # backends.cuda.one_op, once a program was compiled
        # Registered by the ops (ops.cuda_ops): the device-move and cast primitives, and
        # the record of a detached alias.
        self.move = self.cast_prim = self.record_alias = None

    def register(self, move, cast, record_alias):
        """The ops' pieces this interpreter uses: ``move`` (the primitive whose run is a
        copy between devices, no kernel), ``cast`` (the dtype conversion, for ``astype``)
        and ``record_alias(tensor, out)`` (``out = tensor.detach()`` shares memory)."""
        self.move, self.cast_prim, self.record_alias = move, cast, record_alias

    def _compiler(self):
        c = self.compiler
        if c is None:
            c = self.compiler = load_compiler()
        return c

    # The rest of the payload-interpreter protocol (the tracer's; see compiler.tracer).
    def refuse_backward(self):
        """The engine asks whether ``backward()`` may run here (the tracer refuses): on CUDA
        tensors, eagerly, it may."""

    def detach(self, data):
        return data  # the same device memory

    def detached(self, tensor, out):
        self.record_alias(tensor, out)  # the alias shares the payload (ops.cuda_ops)

    def wrap_hook(self, tensor, hook):
        return hook

    def concrete_access(self, data, reason=None):
        pass

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
            # (Some thread traces: the compiler is loaded, and asks its tracer.)
            out = None if tracing_hook.capture is None else self._compiler().traced(
                prim, datas, params)
            if out is not None:
                # A gradient the engine derives inside @ng.jit (value_and_grad, grad) from
                # a host constant it made (a seed, expanded) and a CUDA constant the
                # function holds (a detached captured tensor): both are constants of one
                # graph, which the CUDA backend places on its device, so the trace records
                # the op rather than eager mode refusing the mix.
                return out
            raise mismatch(device, "cpu")
        if prim is self.move:
            return _move(datas[0], _device(params["device"]))
        host = prim.role == "host" and not prim.cost.blas and not prim.view
        pkey = _param_key(params) if params else ()
        # Not cached: host steps (nothing to compile), and params NumPy prints abridged
        # (large index arrays), whose repr would not tell them apart.
        key = None if host or (pkey and "..." in str(pkey)) else (
            prim.name, pkey, tuple((d.shape, d.dtype.str) for d in datas), device)
        prog = self.programs.get(key) if key is not None else None
        if prog is None:
            prog = self._compiler().compile_op(prim, datas, params)
            if key is not None:
                if len(self.programs) >= _CACHE_MAX:
                    self.programs.pop(next(iter(self.programs)))
                self.programs[key] = prog
                self.compiles += 1
        arrays = [d if type(d) is CudaArray else self._scalar(d, device) for d in datas]
        return prog(arrays)[0]

    def cast(self, d, dtype):
        """``d`` converted to ``dtype`` on its device (``CudaArray.astype``)."""
        return self.process(self.cast_prim, [d], {"dtype": dtype})

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


INTERPRETER = CudaEager()
cuda_array.CudaArray._ng_interpreter = INTERPRETER

"""backends.cuda.program: runs a rendered CUDA graph: launches, allocations, host steps.

Room: compiler. ``backends.cuda.renderer`` renders the source and the steps,
``backends.cuda.cache`` loads their module (kernels compiled, or read from the verified
disk cache); a ``Program`` uploads the graph's constants and index maps at its first call
and runs the steps in order with the inputs' ``CudaArray``s, prepared once per device by
``cuda.launch`` (a call only swaps pointers). Launch configuration comes from
the device's properties (``cuda.device.launch``) and is fixed per device, so
reductions combine in the same order on every run.
"""
from __future__ import annotations

import numpy as np

from numgrad.cuda import array as cuda_array
from numgrad.cuda import launch
import numgrad.compiler.backends.cuda.blas as blas
import numgrad.compiler.backends.cuda.matmul_kernel as matmul_kernel
from numgrad.device_type import device as _device

_CUDA0 = _device("cuda", 0)


class Program:
    """One graph's kernels and the steps between them; called with the input arrays."""

    def __init__(self, schedule, steps, source, module, disk_hit):
        self.schedule = schedule
        self.graph = schedule.graph
        self.cuda_steps = steps   # (``steps`` is the CPU program's list, read by plans)
        self.source = source
        self.kernels = source.count("@cuda.jit")
        self.disk_hit = disk_hit
        # The kernel module (shared by every program whose source is the same: a
        # shape-generic plan's next shape compiles nothing), by name for plan_cache.
        self.module = module
        self.modules = (module.__name__,)
        self._fns = None
        self._consts = None
        self._prepared = {}     # device -> launch.Prepared

    def _load(self, device):
        self._fns = vars(self.module)
        self._consts = {v: cuda_array.to_device(a, device) for v, a in self.graph.consts.items()}
        self._maps = {}
        for st in self.cuda_steps:
            if st[0] == "index_map":
                self._maps[st[1]] = cuda_array.to_device(st[2], device)

    def __call__(self, arrays):
        device = _CUDA0
        for a in arrays:
            if isinstance(a, cuda_array.CudaArray):
                device = a._ng_device
                break
        prep = self._prepared.get(device)
        if prep is None:
            if self._fns is None:
                self._load(device)
            prep = self._prepared[device] = launch.Prepared(
                self, device, host_step, matmul_kernel, blas.prepare)
        return prep(arrays)


def host_step(e, ins, device):
    """An equation the kernels do not cover: its NumPy impl on host copies of its inputs
    (a hook gets the gradient as a CUDA tensor and may return one)."""
    if "calls_user" in e.prim.effects:  # a hook
        from numgrad.grad_mode import no_grad
        from numgrad.tensor import Tensor
        g_arr = ins[0]
        fn = e.params["fn"]
        with no_grad():
            g = Tensor._make(g_arr)
            r = fn(g)
        if r is None:
            return g_arr
        if not isinstance(r, Tensor):
            raise TypeError(f"hook returned {type(r).__name__}; a hook must return a Tensor "
                            "or None")
        if r.shape != g.shape:
            raise RuntimeError(f"hook '{getattr(fn, '__name__', repr(fn))}' has changed the size "
                               f"of value: expected {g.shape}, got {r.shape}")
        if r.device != g.device:
            raise RuntimeError(f"hook '{getattr(fn, '__name__', repr(fn))}' returned a tensor on "
                               f"{r.device}; the gradient is on {g.device}")
        out = r._data
        return out if out.dtype == g_arr.dtype else out.astype(g_arr.dtype)
    if "stop_gradient" in e.prim.effects:  # detach: the identity at run time
        return ins[0]
    host = [a._ng_host() if isinstance(a, cuda_array.CudaArray) else a for a in ins]
    out = e.prim.impl(*host, **e.params)
    return cuda_array.to_device(np.asarray(out, e.out.dtype), device)

"""cuda.launch: a CUDA program's steps prepared once, so a call only swaps pointers.

Room: CUDA runtime (below the ops). The compiler's CUDA backend
(``compiler/backends/cuda/renderer.py``) renders a graph's steps (kernel launches, matmuls,
gathers, aliases, host steps) for one plan's shapes (a shape-generic plan's kernels take
their extents as int64 arguments, which the steps carry). ``Prepared`` turns them, per
device, into a flat list of closures over integer slots: every buffer's size, dtype and
rounded block size, every grid and block (from the plan's sizes, by the device's fixed
rules), the matmul kernel's blocking for the plan's shape (``matmul.tiling``, the backend's
``matmul_kernel`` passed in; a generic plan rendered them all), a cuBLAS step's call (the
backend's ``blas.prepare``, passed in too), every scalar argument but a traced Python
float's (``Value``) is fixed before the first call. A call fills the input slots (such a
float's with its number), and each step takes its output blocks from the caching allocator
(``allocator``) and launches.

**The launch itself.** Numba-cuda's dispatcher, per launch, resolves the argument types,
looks up the overload and packs each array into 7 kernel parameters in Python
(``_Kernel._prepare_args``), then calls ``cuda.core.launch``. All of numgrad's buffers
are 1-D and C-contiguous with sizes fixed per step, so only the data pointer changes
between calls: after its first (ordinary, compiling) launch a ``Kernel`` takes the
compiled overload's ``cuda.core`` kernel handle, builds the ``LaunchConfig`` and the
parameter list once in the layout ``_prepare_args`` produces (meminfo, parent, nitems,
itemsize, data, shape, stride per array; a ``ctypes`` value per scalar), and from then
on writes the pointers (and a traced float's ``ctypes`` value) into a copy of that list
and calls ``cuda.core.launch`` directly.
Nothing synchronises the host: results stay on the device until read.

Numba's simulator has no kernel handles: there every launch goes through the
dispatcher (``kernel[grid, block](*device_arrays)``), with the same steps and counts.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from numgrad.cuda import allocator
from numgrad.cuda import array as cuda_array
from numgrad.cuda import device as cuda_device

def _core_launch(*args):
    from cuda.core import launch
    launch(*args)


def _handle(disp, grid, block):
    """``(kernel handle, LaunchConfig, stream)`` of ``disp``'s one compiled overload for a
    direct ``cuda.core.launch``, or None where that is not possible (the simulator, a
    debug or cooperative kernel, a numba-cuda whose internals differ)."""
    if cuda_device.simulated():
        return None
    try:
        overloads = list(disp.overloads.values())
        if len(overloads) != 1:
            return None
        kern = overloads[0]
        if kern.debug or kern.cooperative or disp.targetoptions.get("extensions"):
            return None
        from cuda.core import LaunchConfig
        from numba.cuda._compat import CUDA_CORE_GE_1_0
        from numba.cuda.cudadrv.driver import _to_core_stream
        from numba.cuda.errors import normalize_kernel_dimensions
        griddim, blockdim = normalize_kernel_dimensions(grid, block)
        flag = "is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch"
        config = LaunchConfig(grid=griddim, block=blockdim, shmem_size=0, **{flag: False})
        return kern._codelibrary.get_cufunc().kernel, config, _to_core_stream(cuda_device.STREAM)
    except Exception:  # noqa: BLE001  (another numba-cuda: keep launching through its dispatcher)
        return None


# How numba-cuda passes a scalar argument of each type (``_Kernel._prepare_args``).
_CTYPES = {"int64": ctypes.c_int64, "int32": ctypes.c_int32, "float64": ctypes.c_double,
           "float32": ctypes.c_float}


class Value:
    """A by-value kernel argument that changes per call: the number in slot ``slot`` (a
    traced Python float, ``renderer.by_value``), passed as ``type`` (a key of
    ``_CTYPES``)."""
    __slots__ = ("slot", "type")

    def __init__(self, type, slot):
        self.type, self.slot = type, slot


class Kernel:
    """One launch of one rendered kernel: ``args`` are slots (ints: buffers of ``sizes``
    elements), ``(type, value)`` scalars fixed per plan (a type of ``_CTYPES``), or
    ``Value`` scalars read from their slot per call."""
    __slots__ = ("disp", "grid", "block", "args", "core", "template", "ptr_pos", "val_pos",
                 "tried")

    def __init__(self, disp, grid, block, args, layouts):
        self.disp, self.grid, self.block, self.args = disp, grid, block, args
        self.core = None
        self.tried = False
        # The parameter list _prepare_args would build, pointers and per-call values left
        # as 0: a call writes them into a copy (as it swaps pointers).
        template, ptr_pos, val_pos = [], [], []
        for a, lay in zip(args, layouts):
            if type(a) is int:
                n, itemsize = lay
                template += [0, 0, n, itemsize]
                ptr_pos.append((len(template), a))
                template += [0, n, itemsize]
            elif type(a) is Value:
                val_pos.append((len(template), a.slot, _CTYPES[a.type]))
                template.append(0)
            else:
                template.append(_CTYPES[a[0]](a[1]))
        self.template, self.ptr_pos, self.val_pos = template, ptr_pos, val_pos

    def __call__(self, env):
        core = self.core
        if core is not None:
            params = self.template[:]
            for pos, slot in self.ptr_pos:
                params[pos] = env[slot].ptr
            for pos, slot, ctype in self.val_pos:
                params[pos] = ctype(env[slot])
            _core_launch(core[2], core[1], core[0], *params)
            return
        self.disp[self.grid, self.block](
            *[env[a].buf if type(a) is int else env[a.slot] if type(a) is Value else a[1]
              for a in self.args])
        if not self.tried:
            self.tried = True
            self.core = _handle(self.disp, self.grid, self.block)


def _number(a, dtype):
    """The Python number a by-value input's payload holds (a 0-d host array, as a traced
    float arrives; a one-element device array is read back)."""
    if type(a) is np.ndarray and a.ndim == 0 and a.dtype == dtype:
        return a.item()
    if type(a) is cuda_array.CudaArray:
        a = a._ng_host()
    return np.asarray(a, dtype).reshape(-1)[0].item()


def _blocks(n, launch):
    # Enough blocks to fill the device a few times over, never more than the work needs.
    return max(1, min(math.ceil(n / launch.threads), launch.max_blocks))


def _reshaped(src, shape, dtype, device):
    if src.block is not None:
        out = cuda_array.fresh(src.block, shape, dtype, device)
        out.owner = src.owner
        return out
    return cuda_array.CudaArray(src.buf, shape, dtype, device, src.owner)


class Prepared:
    """A program's steps on one device, ready to run: ``prepared(arrays)`` returns the
    graph's output arrays."""

    def __init__(self, program, device, host_step, matmul, cublas):
        # ``matmul``: the tiled kernel's rules (``tiling``, ``launch_shape``), ``cublas``: a
        # cuBLAS step's preparer; the compiler's CUDA backend, which rendered the steps,
        # passes its own (this runtime sits below it).
        self.device = device
        index = device.index or 0
        launch = cuda_device.launch(index)
        pool = allocator.pool(index)
        graph, fns = program.graph, program._fns
        slots = {}

        def slot(v):
            s = slots.get(v)
            if s is None:
                s = slots[v] = len(slots)
            return s

        consts = [(slot(v), a) for v, a in program._consts.items()]
        maps = {name: a for name, a in program._maps.items()}
        by_value = set()
        for st in program.cuda_steps:
            if st[0] == "by_value":
                by_value |= st[1]
        # Per input: its slot, dtype, and whether kernels take it by value (a number).
        self.in_slots = [(slot(v), v.dtype, v in by_value) for v in graph.inputs]
        ops = []

        def kernel(name, grid, block, args, layouts, outs):
            # ``outs``: [(slot, shape, dtype)] the launch writes, their blocks taken first
            k = Kernel(fns[name], grid, block, args, layouts)
            specs = [(s, tuple(int(d) for d in shape), np.dtype(dt), allocator.round_size(
                max(1, int(np.prod(shape, dtype=np.int64))) * np.dtype(dt).itemsize))
                for s, shape, dt in outs]
            fresh, alloc = cuda_array.fresh, pool.take

            def run(env):
                for s, shape, dt, nbytes in specs:
                    env[s] = fresh(alloc(nbytes), shape, dt, device)
                k(env)
            run.kernel = k
            ops.append(run)

        def lay(v):
            return max(1, int(np.prod(v.shape, dtype=np.int64))), np.dtype(v.dtype).itemsize

        def ints(values):  # a shape-generic kernel's extents and constants, fixed per plan
            return [(t, v) for v, t in values], [None] * len(values)

        extra = len(graph.inputs) + 10 ** 6  # scratch slots, numbered apart from values
        for st in program.cuda_steps:
            kind = st[0]
            if kind == "by_value":
                continue
            if kind == "loop":
                _, name, ins, outs, finals, n, reduces, values, scalars = st
                blocks = _blocks(n, launch)
                parts = []
                for _, r in finals:
                    extra += 1
                    parts.append((slot(("parts", extra)), (blocks,), r.dtype))
                args = [slot(v) for v in ins] + [slot(v) for v in outs] + \
                    [p[0] for p in parts] + [Value(np.dtype(v.dtype).name, slot(v))
                                             for v in scalars]
                layouts = [lay(v) for v in ins] + [lay(v) for v in outs] + \
                    [(blocks, np.dtype(p[2]).itemsize) for p in parts] + [None] * len(scalars)
                iargs, ilays = ints(values)
                kernel(name, blocks, launch.threads, args + iargs, layouts + ilays,
                       [(slot(v), v.shape, v.dtype) for v in outs] + parts)
                for ((fname, fvalues), r), p in zip(finals, parts):
                    o = r.out
                    iargs, ilays = ints(fvalues)
                    kernel(fname, 1, launch.threads, [p[0], ("int64", blocks), slot(o)] + iargs,
                           [(blocks, np.dtype(p[2]).itemsize), None, lay(o)] + ilays,
                           [(slot(o), o.shape, o.dtype)])
                for (rname, m, rvalues), r, src in reduces:
                    o = r.out
                    iargs, ilays = ints(rvalues)
                    kernel(rname, max(1, min(m, launch.max_blocks)), launch.threads,
                           [slot(src), slot(o)] + iargs, [lay(src), lay(o)] + ilays,
                           [(slot(o), o.shape, o.dtype)])
            elif kind == "tiled_mm":
                _, variants, dims, e, (va, vb) = st
                til = matmul.tiling(dims)   # this plan's shape decides
                name, values = variants[til]
                grid, block = matmul.launch_shape(dims, til)
                o = e.out
                iargs, ilays = ints(values)
                kernel(name, grid, block, [slot(va), slot(vb), slot(o)] + iargs,
                       [lay(va), lay(vb), lay(o)] + ilays, [(slot(o), o.shape, o.dtype)])
            elif kind == "cublas":
                ops.append(cublas(st, slot, device, pool))
            elif kind == "index_map":
                _, name, idx, e, values = st
                o, src = e.out, e.inputs[0]
                ms = slot(("map", name))
                consts.append((ms, maps[name]))
                iargs, ilays = ints(values)
                kernel(name, _blocks(idx.size, launch), launch.threads,
                       [slot(src), ms, slot(o)] + iargs,
                       [lay(src), (maps[name].size or 1, maps[name].dtype.itemsize), lay(o)]
                       + ilays, [(slot(o), o.shape, o.dtype)])
            elif kind == "alias":
                ops.append(self._alias(st[1], slot, device))
            else:
                ops.append(self._host(st[1], slot, device, host_step))
        self.ops = ops
        self.out_slots = [slot(v) for v in graph.outputs]
        self.n_slots = len(slots)
        env = [None] * self.n_slots
        for s, a in consts:
            env[s] = a
        self.template = env

    @staticmethod
    def _alias(a, slot, device):
        src, out = slot(a.src), slot(a.out)
        shape, dtype = tuple(int(d) for d in a.out.shape), np.dtype(a.out.dtype)
        fill = a.fill

        def run(env):
            s = env[src]
            if s is None and fill is not None:  # a constant the graph never computed
                s = env[src] = cuda_array.to_device(
                    np.full(a.src.shape, fill.value, fill.dtype), device)
            env[out] = _reshaped(s, shape, dtype, device)
        return run

    @staticmethod
    def _host(e, slot, device, host_step):
        ins, out = [slot(v) for v in e.inputs], slot(e.out)

        def run(env):
            env[out] = host_step(e, [env[s] for s in ins], device)
        return run

    def kernels(self):
        """The prepared launches, in order (for tests and benchmarks)."""
        return [op.kernel for op in self.ops if hasattr(op, "kernel")]

    def __call__(self, arrays):
        env = self.template[:]
        CudaArray = cuda_array.CudaArray
        for (s, dt, number), a in zip(self.in_slots, arrays):
            if number:
                env[s] = _number(a, dt)
            else:
                env[s] = a if type(a) is CudaArray else cuda_array.to_device(
                    np.asarray(a, dt), self.device)
        for op in self.ops:
            op(env)
        return [env[s] for s in self.out_slots]

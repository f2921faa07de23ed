"""cuda.allocator: numgrad's caching allocator for CUDA device memory.

Room: CUDA runtime (below the ops). Every device buffer numgrad makes (eager results, a
plan's outputs and scratch, ``to("cuda")``) comes from here, so that a steady loop of calls
reuses memory instead of paying a ``cuMemAlloc`` (and, later, a ``cuMemFree``) per buffer
per call. It is numgrad's own, not a Numba EMM plugin: a plugin is process-global and would
override a user's RMM or CuPy pool.

- **Sizes are rounded** as PyTorch's allocator rounds them: up to 512 bytes, and
  requests up to 1 MiB (the small pool) to a multiple of 512; larger ones (the large
  pool) to 2 MiB, or to an eighth of their power of two above 16 MiB (at most 12.5%
  slack). Blocks are never split: a free list per rounded size, so a plan whose shapes
  repeat finds each buffer it needs waiting in its list.
- **A block goes back to its free list when the last object holding it dies** (the
  ``CudaArray`` and any device-array view made of it; ``Block.__del__``). All launches
  and copies use the default stream, so memory handed out again is written only after
  every kernel queued before has read it.
- **The cap** on idle cached bytes is ``NUMGRAD_CUDA_CACHE_MAX_BYTES`` (read when a
  block is first given back; unset: no cap, as in PyTorch): a block that would push the
  cache past it is freed instead.
- **Out of memory**: the cache is flushed (every idle block freed, Numba's deferred
  frees run) and the allocation tried once more before the error reaches the user.

Under Numba's simulator a "device allocation" is a NumPy byte buffer and a pointer its
host address, so the same pool, counters and tests run without a GPU.
"""
from __future__ import annotations


import numpy as np

import numgrad.config as config
import numgrad.cuda.device as cuda_device

_SMALL = 1 << 20          # requests up to this size come from the small pool
_ROUND_SMALL = 512
_ROUND_LARGE = 2 << 20
_ENV_CAP = "NUMGRAD_CUDA_CACHE_MAX_BYTES"


def round_size(nbytes: int) -> int:
    """The size of the block that serves a request of ``nbytes``."""
    if nbytes <= _SMALL:
        return max(_ROUND_SMALL, -(-nbytes // _ROUND_SMALL) * _ROUND_SMALL)
    step = max(_ROUND_LARGE, 1 << (nbytes.bit_length() - 4))
    return -(-nbytes // step) * step


def _cap():
    value = config.get(_ENV_CAP)   # raises ValueError naming the variable if unparsable
    if value is None:
        return None
    if value < 0:
        raise ValueError(f"{_ENV_CAP}={value!r}: the cap on cached bytes cannot be negative")
    return int(value)


class Block:
    """One rounded allocation in use. ``ptr`` is the device address (the host address of
    the buffer under the simulator); ``mem`` what owns the memory (a Numba
    ``MemoryPointer``, or a NumPy byte buffer)."""
    __slots__ = ("size", "mem", "ptr", "pool")

    def __init__(self, size, mem, ptr, pool):
        self.size = size
        self.mem = mem
        self.ptr = ptr
        self.pool = pool

    def __del__(self):
        try:
            self.pool.give_back(self.size, self.mem, self.ptr)
        except Exception:  # noqa: BLE001  (interpreter shutdown: nothing left to cache in)
            pass


STAT_NAMES = ("device_mallocs", "device_frees", "allocs", "frees", "cache_hits",
              "allocated_bytes", "cached_bytes", "peak_allocated_bytes", "oom_flushes")


class Pool:
    """The free lists and counters of one device."""

    def __init__(self, index, simulated):
        self.index = index
        self.simulated = simulated
        self.free = {}            # rounded size -> [(mem, ptr), ...]
        self.cap = False          # False: not read yet
        self.ctx = None
        self.stats = dict.fromkeys(STAT_NAMES, 0)

    # -------------------------------------------------------------- raw memory
    def _context(self):
        if self.ctx is None:
            from numba import cuda
            with cuda.gpus[self.index]:
                self.ctx = cuda.current_context()
        return self.ctx

    def _raw_malloc(self, size):
        if self.simulated:
            mem = np.empty(size, np.uint8)
            return mem, mem.ctypes.data
        ctx = self._context()
        if self.index:
            from numba import cuda
            with cuda.gpus[self.index]:
                mem = ctx.memalloc(size)
        else:
            mem = ctx.memalloc(size)
        return mem, int(mem.device_pointer_value)

    def _malloc(self, size):
        try:
            out = self._raw_malloc(size)
        except Exception as exc:  # noqa: BLE001  (only out-of-memory is retried)
            if not _is_oom(exc):
                raise
            self.stats["oom_flushes"] += 1
            self.empty_cache()
            out = self._raw_malloc(size)
        self.stats["device_mallocs"] += 1
        return out

    # -------------------------------------------------------------- blocks
    def alloc(self, nbytes) -> Block:
        return self.take(round_size(nbytes))

    def take(self, size) -> Block:
        """A block of ``size`` bytes, a size ``round_size`` returned (a prepared plan
        rounds its buffers' sizes once)."""
        stats = self.stats
        stats["allocs"] += 1
        lst = self.free.get(size)
        if lst:
            mem, ptr = lst.pop()
            stats["cache_hits"] += 1
            stats["cached_bytes"] -= size
        else:
            mem, ptr = self._malloc(size)
        a = stats["allocated_bytes"] = stats["allocated_bytes"] + size
        if a > stats["peak_allocated_bytes"]:
            stats["peak_allocated_bytes"] = a
        return Block(size, mem, ptr, self)

    def give_back(self, size, mem, ptr):
        stats = self.stats
        stats["frees"] += 1
        stats["allocated_bytes"] -= size
        if self.cap is False:
            self.cap = _cap()
        if self.cap is not None and stats["cached_bytes"] + size > self.cap:
            stats["device_frees"] += 1  # dropping ``mem`` frees it (Numba: deferred)
            return
        self.free.setdefault(size, []).append((mem, ptr))
        stats["cached_bytes"] += size

    def empty_cache(self):
        n = sum(len(v) for v in self.free.values())
        self.free = {}
        self.stats["device_frees"] += n
        self.stats["cached_bytes"] = 0
        if not self.simulated and self.ctx is not None:
            self.ctx.deallocations.clear()  # run Numba's deferred cuMemFree calls now


def _is_oom(exc):
    if isinstance(exc, MemoryError):
        return True
    code = getattr(exc, "code", None)
    if code is None:
        return False
    try:
        from numba.cuda.cudadrv.driver import binding
        return code == binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    except Exception:  # noqa: BLE001
        return "OUT_OF_MEMORY" in str(exc)


_POOLS = {}


def pool(index=0) -> Pool:
    p = _POOLS.get(index)
    if p is None:
        p = _POOLS[index] = Pool(index, cuda_device.simulated())
    return p


def view(block, n, dtype):
    """A 1-D Numba device array of ``n`` elements of ``dtype`` on ``block``'s memory;
    it keeps the block alive (and out of the free lists) while it lives."""
    dtype = np.dtype(dtype)
    if block.pool.simulated:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        buf = FakeCUDAArray(block.mem[:n * dtype.itemsize].view(dtype))
    else:
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        buf = DeviceNDArray((n,), (dtype.itemsize,), dtype, gpu_data=block.mem)
    buf._ng_block = block
    return buf


def memory_stats(device=None) -> dict:
    """The allocator's counters for ``device`` (an index, ``"cuda:1"``...; default: all
    devices summed): ``device_mallocs``/``device_frees`` (raw driver allocations and
    frees so far), ``allocs``/``frees``/``cache_hits`` (blocks handed out, given back,
    and served from the cache), ``allocated_bytes`` (in use), ``cached_bytes`` (idle,
    kept for reuse), ``reserved_bytes`` (both), ``peak_allocated_bytes``,
    ``oom_flushes``. Sizes are the rounded block sizes."""
    if device is not None:
        pools = [pool(_index(device))]
    else:
        pools = list(_POOLS.values())
    out = dict.fromkeys(STAT_NAMES, 0)
    for p in pools:
        for k, v in p.stats.items():
            out[k] += v
    out["reserved_bytes"] = out["allocated_bytes"] + out["cached_bytes"]
    return out


def empty_cache():
    """Give every idle cached block back to the driver (memory in use is untouched)."""
    for p in _POOLS.values():
        p.empty_cache()


def _index(device):
    if isinstance(device, int):
        return device
    from numgrad.device_type import device as _device
    return _device(device).index or 0

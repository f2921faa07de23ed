"""distributed.worker: what a Dask worker runs for ``data_parallel``.

Room: distributed (worker side; imports Dask). Tasks take NumPy arrays and return NumPy
arrays, so nothing but arrays, bytes and small tuples crosses the network; the compiled
function arrives as its pickled payload (``pickling``) and is rebuilt once per process.
"""
from __future__ import annotations

import os
import socket
import sys

import numpy as np
from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

import numgrad.distributed.pickling as pickling
import numgrad.distributed.shard as shard
from numgrad.distributed.errors import ShardFailed, shard_failed

_threads = None  # this worker's Numba thread count, set up by NumgradSetup


class NumgradSetup(WorkerPlugin):
    """Prepares each worker (and each replacement of a dead one) before its first task:
    one Numba thread pool sized to the worker's share of its machine's cores, and, on the
    client's own machine, the client's kernel disk cache, which the client has warmed."""

    name = "numgrad-data-parallel"

    def __init__(self, workers_per_host: dict, cache_dir: str | None, client_host: str):
        self.workers_per_host = workers_per_host
        self.cache_dir = cache_dir
        self.client_host = client_host

    def setup(self, worker):
        global _threads
        host = worker.address.rsplit(":", 1)[0]
        share = self.workers_per_host.get(host, 1) * max(1, worker.state.nthreads)
        _threads = max(1, (os.cpu_count() or 1) // share)
        if "numba" not in sys.modules:
            # The pool's size is read once, when Numba starts its threads.
            os.environ["NUMBA_NUM_THREADS"] = str(_threads)
        if self.cache_dir and socket.gethostname() == self.client_host:
            os.environ["NUMGRAD_CACHE_DIR"] = self.cache_dir


def _where() -> str:
    try:
        return f"{get_worker().address} (pid {os.getpid()})"
    except ValueError:  # called outside a worker (a test, or the client's warm-up)
        return f"pid {os.getpid()}"


def _set_threads():
    if _threads is not None:
        import numba

        # NOTE: Numba's thread count is per calling thread: set it in the task's thread.
        numba.set_num_threads(min(_threads, numba.config.NUMBA_NUM_THREADS))


def shard_task(index, token, data, blob, arrays, positions, reduction):
    """Task: shard ``index``'s ``(n, value, grads)``; ``blob`` is the step's broadcast
    ``(parameters, shared arguments)``."""
    try:
        _set_threads()
        params, consts = blob
        fn = pickling.rebuild(token, data, shard.signature(params, arrays, consts))
        return shard.run(fn, params, arrays, consts, positions, reduction)
    except ShardFailed:
        raise
    except Exception as exc:
        raise shard_failed(f"shard {index}", _where(), exc) from None


def load_task(data, key):
    """Task: ``load_fn(key)`` as a tuple of NumPy arrays, one per sharded argument."""
    import cloudpickle

    try:
        load_fn = cloudpickle.loads(data)
        out = load_fn(key)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return tuple(np.ascontiguousarray(shard.as_array(x, f"load_fn({key!r})")) for x in out)
    except Exception as exc:
        raise shard_failed(f"the data shard for key {key!r}", _where(), exc) from None


def stats(token):
    """This process's counters for one compiled shard function, one entry per argument
    signature it has run (``[]`` before its first shard): the jit ``Stats`` plus
    ``compiled``, the plans whose kernels were compiled here instead of loaded from the
    disk cache, the Numba thread count and the pid."""
    out = []
    for variant, cf in pickling.lookup(token).items():
        s = cf.stats
        row = {k: getattr(s, k) for k in s.__slots__}
        row.update(compiled=max(0, s.compiles - s.disk_hits), numba_threads=_threads,
                   pid=os.getpid(), signature=variant)
        out.append(row)
    return out

"""distributed.errors: what a failed step raises, naming the shard and the worker.

Room: distributed. No Dask import: the worker raises ``ShardFailed`` (it pickles back to
the client with its fields), the client turns it, or Dask's own ``KilledWorker``, into a
``DistributedError`` that says what to do.
"""
from __future__ import annotations


class ShardFailed(Exception):
    """Raised on a worker when one shard's task fails: ``shard`` (its index or data key),
    ``worker`` (the worker's address and pid) and the original error as text (the
    exception object itself may not pickle)."""

    def __init__(self, message: str, shard=None, worker: str | None = None):
        super().__init__(message, shard, worker)
        self.message, self.shard, self.worker = message, shard, worker

    def __str__(self):
        return self.message


class DistributedError(RuntimeError):
    """A ``data_parallel`` step that could not finish: the message names the shard, the
    worker and what to try. The parameters the caller passed are never changed by it."""


def shard_failed(what: str, worker: str, exc: BaseException) -> ShardFailed:
    """The worker-side error for ``what`` (``"shard 3"``) failing with ``exc``."""
    return ShardFailed(f"{what} failed on worker {worker}: {type(exc).__name__}: {exc}",
                       what, worker)


def retries_exhausted(failed: ShardFailed, tries: int, n_shards: int) -> DistributedError:
    return DistributedError(
        f"data_parallel: {failed.message} (tried {tries} time(s), on every try; {n_shards} "
        "shard(s) in this step). The parameters you passed are unchanged. What to do: the "
        "error comes from your loss or data on that shard, so reproduce it in this process "
        "with ng.value_and_grad(loss, argnums) on that shard's rows; if it is transient "
        "(out of memory, a full disk), pass a larger retries= to data_parallel.")


def worker_died(shard: str, worker: str, allowed: int) -> DistributedError:
    return DistributedError(
        f"data_parallel: {shard} was lost: worker {worker} died while computing it, and "
        f"{allowed + 1} worker(s) died on it in all, so the scheduler gave up "
        "(distributed.scheduler.allowed-failures). The parameters you passed are unchanged. "
        "What to do: a shard that kills every worker that runs it usually exhausts the "
        "worker's memory limit (see the worker logs and the dashboard); use more, smaller "
        "shards (n_shards=) or give the workers more memory; raise "
        "distributed.scheduler.allowed-failures if the workers die for other reasons.")


def workers_lost(lost: list, tries: int, doing: str) -> DistributedError:
    names = ", ".join(lost) or "(the scheduler had already replaced them)"
    return DistributedError(
        f"data_parallel: workers were lost while {doing}, on each of {tries} try(s); lost: "
        f"{names}. The parameters you passed are unchanged. What to do: run the step again "
        "once the cluster is stable, or pass a larger retries=.")


def no_worker_left(lost: list, waited: float) -> DistributedError:
    names = ", ".join(lost) or "(none seen yet)"
    return DistributedError(
        f"data_parallel: no worker is left to run the step: lost worker(s) {names}, and none "
        f"joined within {waited:g} s. The parameters you passed are unchanged. What to do: "
        "restart the workers (or the cluster) and run the step again; a worker that dies at "
        "once usually ran out of memory (see its log), and timeout= sets how long to wait.")


def cannot_import(worker: str, error: str) -> DistributedError:
    return DistributedError(
        f"data_parallel: worker {worker} cannot import numgrad ({error}), so it cannot run "
        "the shards. What to do: install numgrad in the workers' Python environment, the "
        "same version as here (pip install 'numgrad[distributed]'), or start the workers "
        "from this environment (dask worker, or LocalCluster from this process).")

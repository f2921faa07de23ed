"""distributed: data-parallel gradients over the workers of a Dask cluster.

Room: distributed, beside and above the compiler (it compiles on the workers with
``ng.jit``); nothing in numgrad imports it, and it imports Dask only when a step first
needs a cluster, so ``import numgrad`` never loads Dask. Modules: ``data_parallel`` (the
client side), ``worker`` (the tasks), ``shard`` (splitting and the fixed-order sum),
``pickling`` (how a compiled function travels), ``errors``.

Install with ``pip install 'numgrad[distributed]'``.
"""
from numgrad.distributed import pickling  # registers the CompiledFunction reducer
from numgrad.distributed.data_parallel import DataParallel, Shards, data_parallel
from numgrad.distributed.errors import DistributedError, ShardFailed

__all__ = ["data_parallel", "DataParallel", "Shards", "DistributedError", "ShardFailed"]

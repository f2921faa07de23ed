"""distributed.data_parallel: one ``value_and_grad`` spread over the workers of a Dask
cluster, shard by shard, added back in a fixed order.

Room: distributed (client side). Dask is imported when a step first needs a client, so
``import numgrad.distributed`` works without it.

A step, for parameters ``P`` and a batch cut into shards ``0..k-1`` along axis 0:

1. ``P`` (and the arguments every shard shares) are scattered once, to one worker; each
   other worker fetches them from a worker that has them when its first shard task needs
   them (Dask's dependency transfer), so each worker receives ``P`` once, peer to peer.
   If every copy is lost, the step sends them again. Shard ``i``'s rows travel inside its
   task, so a task that must run again (its worker died) finds its data in the task
   itself. Data made on the workers (``dp.shards``) is a task result instead, recomputed
   from its task if lost.

   Not ``client.scatter(..., broadcast=True)``: it ends in ``Scheduler.replicate``, which
   takes the set of running workers once, at its start, and loops until each of them
   holds a copy. A worker killed during the loop stays in that set, so every round asks
   it again (``gather_on_worker`` gives up only after the 30 s connect timeout, and the
   loop goes on): the scatter, and the step, never return, which is how it stalled the
   test that kills a worker mid-step. Dependency transfers are rescheduled when a worker
   dies. Without failures the two cost the same (docs/distributed.md).
2. Each shard task runs the compiled ``value_and_grad`` of the loss (rebuilt once per
   worker process) and returns ``(rows, value, grads)``.
3. Pairs of results are added by tasks in the tree of ``shard.tree_sum`` (by shard
   index), and only the total comes back: one gradient's bytes, whatever ``k``.

A worker may be lost at any moment of a step: while the parameters are sent (the
scatter fails with a comm error), while shards compute or while results are added (Dask
reruns the lost tasks elsewhere; the parameters' only copy may go with it). Each of these
sends the step again, up to ``retries`` times, and gives the same bits, since the sum's
order depends on the shard count alone. When no worker is left, the step waits up to
``timeout`` (``NO_WORKER_WAIT`` if None) for one to join, then raises a
``DistributedError`` naming the workers it lost.

Nothing the caller passed is written to: the parameters go out as copies and the
gradients come back as new tensors, so a failed step leaves the caller as it was.
"""
from __future__ import annotations

import itertools
import socket
import time
import uuid

import numpy as np

import numgrad.config as config
from numgrad.compiler import jit
from numgrad.compiler import pytree
from numgrad.creation import from_numpy
import numgrad.distributed.errors as errors
import numgrad.distributed.pickling as pickling
import numgrad.distributed.shard as shard
from numgrad.tensor import Tensor

_PROBE = "__import__('numgrad').__version__"
_steps = itertools.count()
NO_WORKER_WAIT = 10.0  # seconds a step waits for a worker to join when none is left
POLL = 0.5             # seconds between looks at the cluster while a step runs


def _lost(exc) -> bool:
    """Is ``exc`` what Dask raises when it cannot reach a worker (``CommClosedError`` and
    the other ``OSError``s of its comms), rather than a timeout?"""
    return isinstance(exc, OSError) and not isinstance(exc, TimeoutError)


def _need_dask():
    try:
        import cloudpickle  # noqa: F401
        import distributed
    except ImportError as exc:
        raise ImportError(
            f"numgrad.distributed needs Dask distributed and cloudpickle ({exc}): "
            "pip install 'numgrad[distributed]'") from exc
    return distributed


def _nums(nums, name):
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    if not nums or not all(isinstance(n, int) and n >= 0 for n in nums):
        raise ValueError(f"data_parallel: {name} must be a non-negative int or a non-empty "
                         f"tuple of them, got {nums!r}")
    if len(set(nums)) != len(nums):
        raise ValueError(f"data_parallel: {name} has repeats: {nums!r}")
    return nums


class Shards:
    """Data shards made by tasks on the workers (``dp.shards(load_fn, keys)``): each stays
    in its worker's memory across steps, and is computed again from its task if that
    worker dies. Pass it to a step as ``dp(..., shards=this)``; ``release()`` frees it."""

    def __init__(self, futures, keys):
        self.futures, self.keys = futures, list(keys)

    def __len__(self):
        return len(self.futures)

    def __repr__(self):
        return f"Shards({len(self)} keys)"

    def release(self):
        """Forget the shards (the workers free their memory)."""
        for f in self.futures:
            f.release()
        self.futures = []


class DataParallel:
    """What :func:`data_parallel` returns: call it like ``ng.value_and_grad(loss,
    argnums)``. See :func:`data_parallel`."""

    def __init__(self, loss, argnums, shard_argnums, reduction, client, n_shards, retries,
                 timeout, jit_options):
        self.argnums = _nums(argnums, "argnums")
        self.single = isinstance(argnums, int)
        self.shard_argnums = _nums(shard_argnums, "shard_argnums")
        if set(self.argnums) & set(self.shard_argnums):
            raise ValueError(f"data_parallel: argnums {self.argnums} and shard_argnums "
                             f"{self.shard_argnums} overlap: an argument is either "
                             "differentiated or split into shards")
        if reduction not in ("mean", "sum"):
            raise ValueError(f"data_parallel: reduction must be 'mean' or 'sum' (how the loss "
                             f"combines its rows), got {reduction!r}")
        if n_shards is not None and (not isinstance(n_shards, int) or n_shards < 1):
            raise ValueError(f"data_parallel: n_shards must be a positive int, got {n_shards!r}")
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"data_parallel: retries must be an int >= 0, got {retries!r}")
        self.loss = getattr(loss, "_ng_jit_fn", loss)   # a jitted loss: its Python function
        self.reduction = reduction
        self.n_shards = n_shards
        self.retries = retries
        self.timeout = timeout
        self.jit_options = dict(jit_options or {})
        self.last_step = None        # bytes moved, tasks and tree depth of the last step
        self._client = client
        self._owned = None           # (client, cluster) this object started
        self._ready = set()          # clients whose workers were checked and set up
        self._payloads = {}          # parameter tree structure -> (token, bytes)
        self._warm = set()           # (token, shard shapes) compiled by the client
        self._known = set()          # the workers the last look at the cluster found
        # Fail here, not on the first step, for a loss that cannot travel.
        pickling.payload(jit(shard.ShardGradient(self.loss, 0, (), ()), cache=False))

    # ------------------------------------------------------------ cluster
    @property
    def client(self):
        """The Dask client: the one given, else the current one, else one on a new
        ``LocalCluster`` of worker processes (one per core), closed by ``close()``."""
        if self._client is None:
            distributed = _need_dask()
            try:
                self._client = distributed.get_client()
            except ValueError:
                cluster = distributed.LocalCluster(processes=True, threads_per_worker=1)
                self._client = distributed.Client(cluster)
                self._owned = (self._client, cluster)
        return self._client

    def close(self):
        """Close the client and cluster this object started (none if it was given one)."""
        if self._owned is not None:
            client, cluster = self._owned
            client.close()
            cluster.close()
            self._owned = self._client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _workers(self, client):
        if client in self._ready:
            return
        from numgrad.distributed.worker import NumgradSetup

        client.wait_for_workers(1, timeout=self.timeout)
        seen = set()
        for attempt in range(self.retries + 1):
            seen |= self._alive(client, seen)
            # A worker lost while asked answers with a comm error: not a failed import.
            found = {address: answer for address, answer in
                     client.run(eval, _PROBE, on_error="return").items() if not _lost(answer)}
            for address, answer in found.items():
                if isinstance(answer, BaseException):
                    raise errors.cannot_import(address, f"{type(answer).__name__}: {answer}")
            per_host = {}
            for address in found:
                host = address.rsplit(":", 1)[0]
                per_host[host] = per_host.get(host, 0) + 1
            try:
                # Stored by the scheduler first, so a replacement worker gets it too; the
                # broadcast to the running ones fails if one of them dies meanwhile.
                client.register_plugin(NumgradSetup(per_host, config.get("NUMGRAD_CACHE_DIR"),
                                                    socket.gethostname()))
            except Exception as exc:
                if not _lost(exc):
                    raise
                if attempt == self.retries:
                    raise errors.workers_lost(self._gone(client, seen), attempt + 1,
                                              "setting up the workers") from None
                continue
            self._ready.add(client)
            return

    def _alive(self, client, seen) -> set:
        """The addresses of the running workers. When there are none, waits up to
        ``timeout`` (``NO_WORKER_WAIT`` if None) for one to join, then raises a
        ``DistributedError`` naming the workers seen before (``seen``, and those of the
        last look), now lost."""
        wait = NO_WORKER_WAIT if self.timeout is None else self.timeout
        end = time.monotonic() + wait
        while not (workers := set(client.scheduler_info()["workers"])):
            if time.monotonic() >= end:
                raise errors.no_worker_left(sorted(set(seen) | self._known), wait)
            time.sleep(0.1)
        self._known = workers
        return workers

    def _gone(self, client, seen) -> list:
        """The workers in ``seen`` that are no longer in the cluster."""
        return sorted(set(seen) - set(client.scheduler_info()["workers"]))

    def _result(self, client, total, seen):
        """``total.result()``, looking at the cluster every ``POLL`` s meanwhile: with no
        worker left, the step's tasks would wait for one forever."""
        from distributed import wait

        end = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            left = POLL if end is None else min(POLL, end - time.monotonic())
            if left <= 0:
                raise TimeoutError
            try:
                wait([total], timeout=left)   # returns as soon as the step is done
                return total.result()
            except TimeoutError:
                seen |= self._alive(client, seen)

    def worker_stats(self) -> dict:
        """``{worker address: [counters, ...]}``: the compiled shard functions on each
        worker, one per argument signature it has run (shards of one size share one): the
        ``ng.jit`` stats plus ``compiled``, plans compiled on that worker rather than
        loaded from the disk cache."""
        import numgrad.distributed.worker as worker

        out = {}
        for token, _ in self._payloads.values():
            for address, rows in self.client.run(worker.stats, token).items():
                out.setdefault(address, []).extend(rows)
        return out

    # ------------------------------------------------------------ data and steps
    def shards(self, load_fn, keys) -> Shards:
        """Data shards made by tasks on the workers, one per key: ``load_fn(key)`` returns
        the sharded arguments' rows for that shard (a tuple in ``shard_argnums`` order, or
        one array), as NumPy arrays or CPU tensors. A shard lost with its worker is loaded
        again from its task; shards are added in the order of ``keys``.

        >>> data = dp.shards(load_part, range(4))        # doctest: +SKIP
        >>> value, grads = dp(W, b, shards=data)         # doctest: +SKIP
        """
        import numgrad.distributed.worker as worker

        keys = list(keys)
        if not keys:
            raise ValueError("data_parallel.shards: keys is empty; give one key per shard")
        data = pickling.dumps(load_fn, load_fn)
        client = self.client
        self._workers(client)
        tag = uuid.uuid4().hex[:8]
        return Shards([client.submit(worker.load_task, data, k, key=f"ng-data-{i}-{tag}",
                                     retries=self.retries, pure=False)
                       for i, k in enumerate(keys)], keys)

    def backward(self, *args, shards: Shards | None = None) -> Tensor:
        """A step whose gradients are accumulated into ``.grad`` of every parameter (each
        leaf of the ``argnums`` arguments), as ``loss.backward()`` does, so that an
        optimizer's ``step()`` can follow; returns the value.

        >>> loss = dp.backward(list(model.parameters()), X, Y)   # doctest: +SKIP
        >>> opt.step(); opt.zero_grad()                          # doctest: +SKIP
        """
        value, grads = self(*args, shards=shards)
        seated = self._seat(args, shards)
        grads = [grads] if self.single else grads
        for n, g in zip(self.argnums, grads):
            for p, gp in zip(pytree.flatten(seated[n])[1], pytree.flatten(g)[1]):
                p.grad = gp if p.grad is None else p.grad + gp
        return value

    def _seat(self, args, shards):
        if shards is None:
            return args
        if not isinstance(shards, Shards):
            raise TypeError(f"data_parallel: shards= takes what dp.shards(load_fn, keys) "
                            f"returns, got {type(shards).__name__}")
        # The sharded arguments come from the workers: placeholders take their seats.
        rest = iter(args)
        return tuple(None if i in self.shard_argnums else next(rest, None)
                     for i in range(len(args) + len(self.shard_argnums)))

    def _payload(self, n_args, trees):
        key = (n_args, trees)
        if key not in self._payloads:
            fn = jit(shard.ShardGradient(self.loss, n_args, self.argnums, trees),
                     **self.jit_options)
            self._payloads[key] = pickling.payload(fn)
        return self._payloads[key]

    def _params(self, args):
        leaves, trees = [], []
        for n in self.argnums:
            tree, xs = pytree.flatten(args[n])
            for x in xs:
                if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
                    raise TypeError(
                        f"data_parallel: argument {n} must be a floating point Tensor or a "
                        f"pytree (dict, list, tuple) of them, found {type(x).__name__}"
                        + (f" of dtype {x.dtype}" if isinstance(x, Tensor) else ""))
                # A copy: the step never shares memory with what the caller holds.
                leaves.append(np.array(shard.as_array(x, f"argument {n}"), copy=True))
            trees.append(tree)
        return leaves, tuple(trees)

    def _layout(self, n_args):
        positions, consts = [], []
        for i in range(n_args):
            if i in self.argnums:
                continue
            if i in self.shard_argnums:
                positions.append(("shard", self.shard_argnums.index(i)))
            else:
                positions.append(("const", len(consts)))
                consts.append(i)
        return positions, consts

    def _split(self, args, n_workers):
        arrays = [shard.as_array(args[i], f"argument {i} (sharded)") for i in self.shard_argnums]
        rows = {len(a) if a.ndim else None for a in arrays}
        if None in rows:
            raise ValueError("data_parallel: sharded arguments need an axis 0 to split, got a "
                             "0-d one")
        if len(rows) != 1:
            sizes = ", ".join(f"argument {i}: {len(a)}" for i, a in
                              zip(self.shard_argnums, arrays))
            raise ValueError(f"data_parallel: sharded arguments must have the same length "
                             f"along axis 0 ({sizes})")
        (n_rows,) = rows
        if self.n_shards is None:
            self.n_shards = n_workers   # fixed from now on: the bits must not follow churn
        k = min(self.n_shards, n_rows)
        if k < 1:
            raise ValueError("data_parallel: the batch is empty (0 rows along axis 0)")
        return [tuple(np.ascontiguousarray(a[s:e]) for a in arrays)
                for s, e in shard.bounds(n_rows, k)]

    def _warm_up(self, token, data, params, pieces, consts, positions):
        # Compile here first, into the disk cache the workers share, so N workers load the
        # kernels instead of compiling the same ones at once. One call per distinct shard
        # shape; twice, so that a second-call tier is compiled too.
        for piece in {tuple(a.shape for a in p): p for p in pieces}.values():
            variant = shard.signature(params, piece, consts)
            if (token, variant) not in self._warm:
                fn = pickling.rebuild(token, data, variant)
                for _ in range(2):
                    shard.run(fn, params, piece, consts, positions, self.reduction)
                self._warm.add((token, variant))

    def __call__(self, *args, shards: Shards | None = None):
        """``(value, grads)`` of the loss over the whole batch, as
        ``ng.value_and_grad(loss, argnums)(*args)`` gives."""
        import numgrad.distributed.worker as worker

        client = self.client
        args = self._seat(args, shards)
        n_args = len(args)
        if max(self.argnums + self.shard_argnums) >= n_args:
            raise TypeError(f"data_parallel: argnums {self.argnums} and shard_argnums "
                            f"{self.shard_argnums} need more than the {n_args} positional "
                            "argument(s) given")
        self._workers(client)
        params, trees = self._params(args)
        positions, const_seats = self._layout(n_args)
        consts = [shard.as_array(args[i], f"argument {i}") if isinstance(args[i], Tensor)
                  else args[i] for i in const_seats]
        token, data = self._payload(n_args, trees)
        if shards is None:
            pieces = self._split(args, len(client.scheduler_info()["workers"]))
            self._warm_up(token, data, params, pieces, consts, positions)
        else:
            pieces = shards.futures
        total = self._run(client, worker, token, data, params, consts, positions, pieces,
                          first=shards is not None and token not in self._warm)
        if shards is not None:
            self._warm.add(token)
        value, grads = shard.finish(total, self.reduction)
        grads = [from_numpy(np.asarray(g)) for g in grads]
        out, k = [], 0
        for tree in trees:
            n = shard.count_leaves(tree)
            out.append(pytree.unflatten(tree, grads[k:k + n]))
            k += n
        return from_numpy(np.asarray(value)), (out[0] if self.single else tuple(out))

    def _run(self, client, worker, token, data, params, consts, positions, pieces, first):
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError, FuturesCancelledError

        cancelled = (FutureCancelledError, FuturesCancelledError)  # result() and wait()
        seen = self._alive(client, set())
        n_workers = len(seen)
        for attempt in range(self.retries + 1):
            step = f"{next(_steps)}-{uuid.uuid4().hex[:8]}"
            made = []

            def submit(fn, *a, key):
                made.append(client.submit(fn, *a, key=f"ng-{key}-{step}",
                                          retries=self.retries, pure=False))
                return made[-1]

            try:
                blob = client.scatter([(params, consts)], hash=False)[0]
                made.append(blob)
                tasks = []
                for i, piece in enumerate(pieces):
                    tasks.append(submit(worker.shard_task, i, token, data, blob, piece,
                                        positions, self.reduction, key=f"shard-{i}"))
                    if first and i == 0:
                        # Data made on the workers: the client could not warm the disk
                        # cache, so one worker compiles first and the others load.
                        self._result(client, tasks[0], seen)
                ids = itertools.count()
                total = shard.tree_sum(
                    tasks, lambda a, b: submit(shard.add, a, b, key=f"sum-{next(ids)}"))
                result = self._result(client, total, seen)
            except TimeoutError:
                client.cancel(made)
                raise errors.DistributedError(
                    f"data_parallel: the step did not finish within timeout={self.timeout} s "
                    f"({len(pieces)} shard(s), {n_workers} worker(s)); the parameters you "
                    "passed are unchanged. What to do: check the workers are alive and not "
                    "swapping (the dashboard), or pass a larger timeout=") from None
            except (*cancelled, OSError):
                # (TimeoutError, the one OSError that is no lost worker, is caught above.)
                # A worker was lost while the parameters were sent to it (the scatter's
                # comm error) or with every copy of them (their future is cancelled):
                # send them again, to the workers there are now.
                client.cancel(made)
                if attempt < self.retries:
                    seen |= self._alive(client, seen)
                    continue
                raise errors.workers_lost(self._gone(client, seen), attempt + 1,
                                          "running the step") from None
            except errors.DistributedError:   # no worker left
                client.cancel(made)
                raise
            except errors.ShardFailed as exc:
                client.cancel(made)
                raise errors.retries_exhausted(exc, self.retries + 1, len(pieces)) from None
            except KilledWorker as exc:
                client.cancel(made)
                raise errors.worker_died(_task_name(exc.task),
                                         getattr(exc.last_worker, "address", exc.last_worker),
                                         exc.allowed_failures) from None
            break
        sent = sum(a.nbytes for a in params) + sum(getattr(c, "nbytes", 0) for c in consts)
        self.last_step = dict(
            workers=n_workers, shards=len(pieces), tasks=len(pieces) + len(pieces) - 1,
            tree_depth=len(shard.tree_levels(len(pieces))), param_bytes=sent,
            broadcast_bytes=sent * min(n_workers, len(pieces)),
            shard_bytes=sum(a.nbytes for p in pieces if isinstance(p, tuple) for a in p),
            result_bytes=sum(np.asarray(g).nbytes for g in result[2]) + np.asarray(
                result[1]).nbytes,
            tree_bytes_max=(len(pieces) - 1) * sum(np.asarray(g).nbytes for g in result[2]))
        return result


def _task_name(key) -> str:
    parts = str(key).split("-")
    if len(parts) > 2 and parts[1] == "shard":
        return f"shard {parts[2]}"
    if len(parts) > 2 and parts[1] == "data":
        return f"data shard {parts[2]}"
    return f"the task adding shard results ({key})"


def data_parallel(loss, argnums=0, shard_argnums=1, reduction: str = "mean", client=None, *,
                  n_shards: int | None = None, retries: int = 2, timeout: float | None = None,
                  jit_options: dict | None = None) -> DataParallel:
    """``ng.value_and_grad(loss, argnums)`` computed over the workers of a Dask cluster:
    the ``shard_argnums`` arguments are split along axis 0 into shards, each worker runs
    the compiled ``value_and_grad`` of its shards, and the results are added in a fixed
    tree order (by shard index), so a step gives the same bits whichever worker finishes
    first, after a retry or a lost worker; they equal the full batch's within rounding.

    >>> dp = ng.distributed.data_parallel(loss, argnums=(0, 1),
    ...                                   shard_argnums=(2, 3))  # doctest: +SKIP
    >>> value, (gW, gb) = dp(W, b, X, Y)                         # doctest: +SKIP

    - ``argnums``: the arguments to differentiate: tensors or pytrees (dicts, lists,
      tuples) of tensors; they are broadcast to every worker once per step.
    - ``shard_argnums``: the arguments split into shards (all the same length on axis 0).
      Other arguments are sent to every worker whole.
    - ``reduction``: ``"mean"`` if the loss averages over axis 0 (shards weigh by their
      rows), ``"sum"`` if it adds.
    - ``client``: a ``distributed.Client``; None uses the current client, or starts a
      ``LocalCluster`` of worker processes on this machine (``dp.close()`` stops it).
    - ``n_shards``: how many shards (default: the number of workers at the first step,
      then fixed, so later steps' bits do not depend on workers coming and going).
    - ``retries``: how many times a failing shard task runs again (a dead worker's tasks
      are rescheduled by Dask up to ``distributed.scheduler.allowed-failures`` times), and
      how many times a step is sent again after a lost worker took the parameters with it
      (while they were being sent, or every copy of them).
    - ``timeout``: seconds a step may take before it raises, and how long it waits for a
      worker to join when none is left (10 s when None) before it raises a
      ``DistributedError`` naming the lost workers.
    - ``jit_options``: keyword arguments for ``ng.jit`` on the workers.

    Raises ``TypeError`` at once if ``loss`` cannot be pickled, and
    ``ng.distributed.DistributedError`` (naming the shard, the worker and what to do) for
    a step that cannot finish; the caller's tensors are never changed by a failed step.
    """
    return DataParallel(loss, argnums, shard_argnums, reduction, client, n_shards, retries,
                        timeout, jit_options)

"""distributed.shard: how a batch is cut into shards and how shard results are added back.

Room: distributed. Pure NumPy and numgrad, no Dask: the workers run these functions, and
so can a test or a single process that wants the same bits without a cluster.

The combination is the whole contract of ``data_parallel``:

- A shard's result is ``(n, value, grads)`` for its ``n`` rows. For ``reduction="mean"``
  the worker scales value and grads by ``n`` (a shard's *sum*), so the results add up to
  the full batch's sum, which is divided by the total row count once at the end.
- Results are added in a fixed binary tree over shard *indices*:
  ``((r0 + r1) + (r2 + r3)) + r4``, level by level, an odd last one carried up. Addition
  is commutative bit for bit, so only this association matters, and it depends on the
  shard count alone: never on which worker finished first or which task was retried.
"""
from __future__ import annotations

import numpy as np

from numgrad.compiler import value_and_grad
from numgrad.compiler import pytree


def as_array(x, what: str) -> np.ndarray:
    """``x`` (a CPU Tensor or a NumPy array) as the NumPy array that travels."""
    from numgrad.tensor import Tensor

    if isinstance(x, Tensor):
        if str(x.device) != "cpu":
            raise TypeError(f"data_parallel: {what} is on {x.device}; shards travel as NumPy "
                            "arrays, so pass CPU tensors (x.cpu())")
        return x.detach().numpy()
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"data_parallel: {what} must be a Tensor or a NumPy array, got "
                    f"{type(x).__name__}")


def bounds(n_rows: int, n_shards: int) -> list[tuple[int, int]]:
    """Row ranges ``[(start, stop), ...]`` of ``n_shards`` contiguous shards, the first
    ``n_rows % n_shards`` one row longer (``np.array_split``'s sizes)."""
    base, extra = divmod(n_rows, n_shards)
    out, start = [], 0
    for i in range(n_shards):
        stop = start + base + (i < extra)
        out.append((start, stop))
        start = stop
    return out


def add(a, b):
    """One node of the tree: two shard results (``n, value, grads``) added."""
    return (a[0] + b[0], a[1] + b[1], [x + y for x, y in zip(a[2], b[2])])


def tree_levels(n: int) -> list[list[tuple[int, int]]]:
    """The pairs added at each level of the tree over ``n`` results (indices into that
    level's list); an odd last result is carried to the next level unchanged."""
    levels = []
    while n > 1:
        levels.append([(i, i + 1) for i in range(0, n - 1, 2)])
        n = (n + 1) // 2
    return levels


def tree_sum(results: list, combine=add):
    """``results`` added in the fixed tree order of :func:`tree_levels`. ``combine`` adds
    two of them (the cluster passes one that submits a task)."""
    level = list(results)
    for pairs in tree_levels(len(level)):
        carried = [level[-1]] if len(level) % 2 else []
        level = [combine(level[i], level[j]) for i, j in pairs] + carried
    return level[0]


def finish(total, reduction: str):
    """``(value, grads)`` from the tree's total: divided by the row count for a mean."""
    n, value, grads = total
    if reduction == "mean":
        return value / n, [g / n for g in grads]
    return value, grads


class ShardGradient:
    """The function each worker compiles: ``value_and_grad`` of the loss over the
    parameters' leaves.

    Parameters may be tensors or pytrees of tensors (dicts, lists, tuples); the compiled
    function takes their leaves first, then every other argument in its position, and
    rebuilds the loss's arguments from them. A class, not a closure, so it pickles by
    reference with its loss as its only state.
    """

    def __init__(self, loss, n_args: int, argnums: tuple, trees: tuple):
        self.loss = loss
        self.n_args = n_args
        self.argnums = argnums
        self.trees = trees          # one pytree.TreeDef per parameter argument
        self.__name__ = getattr(loss, "__name__", type(loss).__name__)

    def __repr__(self):
        return f"ShardGradient({self.__name__}, argnums={self.argnums})"

    @property
    def n_params(self) -> int:
        return sum(count_leaves(t) for t in self.trees)

    def arguments(self, leaves):
        """The loss's positional arguments, rebuilt from the flat leaves."""
        it = iter(leaves)
        args = [None] * self.n_args
        for n, tree in zip(self.argnums, self.trees):
            args[n] = pytree.unflatten(tree, [next(it) for _ in range(count_leaves(tree))])
        for i in range(self.n_args):
            if i not in self.argnums:
                args[i] = next(it)
        return args

    def objective(self, *leaves):
        return self.loss(*self.arguments(leaves))

    def __call__(self, *leaves):
        return value_and_grad(self.objective, tuple(range(self.n_params)))(*leaves)


def count_leaves(tree) -> int:
    """How many leaves a ``pytree.TreeDef`` holds."""
    return 1 if tree.kind == "leaf" else sum(count_leaves(c) for c in tree.children)


def signature(params, arrays, consts) -> tuple:
    """The shapes and dtypes of one shard's arguments: each gets a compiled function of
    its own (``pickling.rebuild``'s variant), so its bits never depend on the shapes a
    worker met before."""
    return tuple((a.shape, a.dtype.str) if isinstance(a, np.ndarray) else (type(a).__name__,)
                 for a in (*params, *arrays, *consts))


def run(fn, params, shard, consts, positions, reduction: str):
    """One shard's ``(n, value, grads)`` as arrays: ``fn`` (the compiled
    :class:`ShardGradient`) called on tensors made from NumPy arrays. ``positions`` say,
    for each non-parameter argument in order, whether it is ``("shard", k)``, the shard's
    k-th array, or ``("const", k)``, the k-th argument every shard shares."""
    from numgrad.creation import from_numpy
    from numgrad.tensor import Tensor

    def tensor(x):
        # NOTE: arrays that arrive over the network may be read-only or unaligned views of
        # the message; Numba types those apart and would run (and round) other machine code.
        return from_numpy(np.require(x, requirements="CAW"))

    n = len(shard[0])
    rest = []
    for kind, k in positions:
        x = shard[k] if kind == "shard" else consts[k]
        rest.append(tensor(x) if isinstance(x, np.ndarray) else x)
    value, grads = fn(*[tensor(p) for p in params], *rest)
    value = np.array(value.detach().numpy(), copy=True)
    grads = [np.array(g.detach().numpy(), copy=True) if isinstance(g, Tensor) else g
             for g in grads]
    if reduction == "mean":
        # A shard's sum, so that shards of different sizes weigh by their rows.
        value = value * n
        grads = [g * n for g in grads]
    return (n, value, grads)

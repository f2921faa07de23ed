"""Pieces of ng.distributed that need no cluster: the shard cuts, the fixed tree, the
pickling of compiled functions within one process and in a fresh one, and the lazy
import of Dask."""
from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

cloudpickle = pytest.importorskip("cloudpickle")

import numgrad as ng  # noqa: E402
from numgrad.distributed import pickling, shard  # noqa: E402


@pytest.mark.parametrize("rows,k", [(50, 3), (7, 7), (8, 3), (5, 1)])
def test_bounds_cover_the_rows_once_like_array_split(rows, k):
    cuts = shard.bounds(rows, k)
    want = [len(p) for p in np.array_split(np.arange(rows), k)]
    assert [e - s for s, e in cuts] == want
    assert cuts[0][0] == 0 and cuts[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_tree_sum_is_one_fixed_association(n):
    # Strings "add" by concatenation with brackets: the association is visible.
    leaves = [str(i) for i in range(n)]
    got = shard.tree_sum(leaves, lambda a, b: f"({a}+{b})")
    level = leaves
    while len(level) > 1:  # the written-out rule: neighbours pair up, an odd last one waits
        level = [f"({level[i]}+{level[i + 1]})" for i in range(0, len(level) - 1, 2)] + (
            level[-1:] if len(level) % 2 else [])
    assert got == level[0]
    assert len(shard.tree_levels(n)) == (n - 1).bit_length()


def test_tree_sum_rounds_as_its_tree_not_left_to_right():
    # 1e16 + 1 rounds back to 1e16 (the spacing there is 2), so the association shows.
    parts = [(1, np.float64(v), [np.array([v, -v])]) for v in (1e16, 1.0, -1e16, 1.0)]
    n, value, (g,) = shard.tree_sum(parts)
    assert n == 4 and value == (1e16 + 1.0) + (-1e16 + 1.0) == 0.0
    assert g.tolist() == [0.0, 0.0]
    left = parts[0]
    for p in parts[1:]:
        left = shard.add(left, p)
    assert left[1] == 1.0   # the order a streaming sum would take: other bits


def double(x):
    return (x * 2.0).sum()


def test_pickle_in_this_process_returns_the_same_function():
    f = ng.jit(double, parallel=False)
    assert pickle.loads(pickle.dumps(f)) is f
    assert cloudpickle.loads(cloudpickle.dumps(f)) is f
    token, data = pickling.payload(f)
    assert pickling.rebuild(token, data) is f


def test_a_fresh_process_rebuilds_it_once_with_its_options(tmp_path):
    # By value: a function defined in __main__-like code (here: exec'd into a module that
    # is registered by value), so the fresh process has no source to import it from.
    ns = {"ng": ng}
    exec("def cube(x):\n    return (x * x * x).sum()\n", ns)
    ns["cube"].__module__ = "__main__"
    f = ng.jit(ns["cube"], parallel=False, fastmath=False, max_plans=7)
    x = np.linspace(-1, 1, 5)
    want = f(ng.tensor(x)).numpy()
    path = tmp_path / "f.pkl"
    path.write_bytes(pickle.dumps((f, f, x)))
    code = (
        "import pickle, sys, numgrad as ng, numgrad.distributed\n"
        "from numgrad.distributed import pickling\n"
        f"f, g, x = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "assert f is g\n"
        "out = [f(ng.tensor(x)).numpy() for _ in range(2)]\n"
        "print(repr(out[0].tobytes()), f.stats.traces, pickling.jit_options(f))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith(repr(want.tobytes()) + " 1 "), line
    assert repr(pickling.jit_options(f)) in line


def test_importing_numgrad_distributed_does_not_import_dask():
    code = ("import sys, numgrad, numgrad.distributed as d\n"
            "assert callable(numgrad.distributed.data_parallel)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"

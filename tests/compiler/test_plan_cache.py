"""Bounded caches: the in-memory plans of one jitted function (LRU, ``max_plans``), its
retrace accounting and warning, and the disk cache's size cap and command line.

The plan tests use the NumPy reference backend: what is under test is which plans are
kept and when a call traces, not the kernels.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np
import pytest

import numgrad as ng
from numgrad.__main__ import main
from numgrad.compiler.backends import disk_cache as cache
from numgrad.compiler.plan_cache import RETRACE_WARNING


def _double_sum(x, w):
    return (x * w).sum()


def _t(n):
    return ng.tensor(np.arange(n, dtype=np.float64))


def test_plans_are_kept_least_recently_used_first():
    f = ng.jit(_double_sum, backend="numpy", max_plans=2)
    a, b, c = _t(2), _t(3), _t(4)
    assert f(a, a).item() == 1.0
    f(b, b)
    f(a, a)          # a is now the most recently used (found through the fast path)
    f(c, c)          # evicts b
    assert f.stats.traces == 3 and len(f._plans) == 2
    f(a, a)
    f(c, c)
    assert f.stats.traces == 3  # both still there
    assert f(b, b).item() == 5.0  # b comes back: traced again
    assert f.stats.traces == 4 and len(f._plans) == 2 and len(f._fast) <= 2


def test_max_plans_must_be_positive():
    with pytest.raises(ValueError, match="max_plans"):
        ng.jit(_double_sum, max_plans=0)(_t(2), _t(2))


def test_stats_count_retraces_and_compile_seconds():
    f = ng.jit(_double_sum, backend="numpy")
    f(_t(2), _t(2))
    assert f.stats.retraces == 0 and isinstance(f.stats.compile_seconds, float)
    first = f.stats.compile_seconds
    assert first > 0
    f(_t(3), _t(3))
    f(_t(3), _t(3))
    assert f.stats.retraces == 1 and f.stats.traces == 2
    assert f.stats.compile_seconds > first


def _scaled(x, k):
    return (x * k).sum()


def test_many_retraces_warn_once_naming_the_argument():
    f = ng.jit(_scaled, backend="numpy")
    x = _t(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(RETRACE_WARNING + 3):   # an int: a constant of each plan
            assert f(x, k).item() == pytest.approx(3.0 * k)
    msgs = [str(w.message) for w in caught if "traced" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert "argument 'k'" in msgs[0] and "_scaled" in msgs[0]
    assert "ng.tensor(v)" in msgs[0] and "static_argnames" in msgs[0]
    assert f.stats.retraces == RETRACE_WARNING + 2


def test_a_varying_float_does_not_warn():
    f = ng.jit(_scaled, backend="numpy")
    x = _t(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(RETRACE_WARNING + 3):   # traced as a value from the second on
            assert f(x, float(k)).item() == pytest.approx(3.0 * k)
    assert not [w for w in caught if "traced" in str(w.message)]
    assert f.stats.traces == 2 and f.stats.retraces == 1


# ------------------------------------------------------------------- disk size cap
def _entry(d, name, size, age):
    files = [os.path.join(d, name + ".py"), os.path.join(d, name + ".manifest"),
             os.path.join(d, "__pycache__", name + ".f-1.py311.nbi")]
    for p in files:
        with open(p, "wb") as f:
            f.write(b"x" * size)
        t = time.time() - age
        os.utime(p, (t, t))


def test_disk_cache_evicts_least_recently_used_entries_over_the_cap(tmp_path):
    d = str(tmp_path)
    os.mkdir(os.path.join(d, "__pycache__"), 0o700)
    for i, age in enumerate((300, 100, 200, 50)):
        _entry(d, f"{cache.PREFIX}{i}", 1000, age)
    dc = cache.DiskCache(d, "rw")
    assert sum(e[0] for e in cache.entries(dc).values()) == 12000
    removed = cache.evict(dc, keep={f"{cache.PREFIX}0"}, limit=7000)
    assert removed == 2  # entry 0 is kept (loaded in this process); 2 then 1 are oldest
    assert sorted(cache.entries(dc)) == [f"{cache.PREFIX}0", f"{cache.PREFIX}3"]


def test_cache_command_line_info_and_clear(tmp_path, monkeypatch, capsys):
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    (d / "__pycache__").mkdir(mode=0o700)
    _entry(str(d), f"{cache.PREFIX}a", 2048, 0)
    (d / "keep.txt").write_text("not ours")
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(d))
    monkeypatch.setenv("NUMGRAD_CACHE_MAX_MB", "3")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(d) in out and "trusted" in out and "entries: 1" in out and "3 MiB" in out
    assert main(["cache", "clear"]) == 0
    assert sorted(os.listdir(d)) == ["__pycache__", "keep.txt"]
    assert os.listdir(d / "__pycache__") == []
    os.chmod(d, 0o777)
    assert main(["cache", "clear"]) == 1  # a directory numgrad does not trust: untouched
    assert "writable by group and others" in capsys.readouterr().err

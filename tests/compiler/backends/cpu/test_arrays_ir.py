"""The kernels' inline array helpers (backends.cpu.arrays_ir) against NumPy.

``alloc``/``view``/``full`` replace ``np.empty``/``reshape``/``np.full`` in generated
kernels, so a kernel loaded from the disk cache does not import ``numba.np.arrayobj``.
They must mean what those mean: shapes, dtypes, shared memory, reference counts, and
what Numba's parallel passes may assume about them.
"""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit, prange
from numba.core.runtime import _nrt_python

from numgrad.compiler.backends.cpu.arrays_ir import alloc, full, view


@njit(cache=False)
def _alloc_2x3_f32():
    return alloc((2, 3), np.float32)


@njit(cache=False)
def _alloc_like(n, value):
    return alloc(n, value)


@njit(cache=False)
def _views(a):
    flat = view(a, a.size)
    return flat, view(flat, (3, 2)), view(a, 6)


@njit(cache=False)
def _write_through(a):
    flat = view(a, a.size)
    for i in range(flat.size):
        flat[i] = i * 10.0


@njit(cache=False)
def _bad_view(a):
    return view(a, 5)


@njit(cache=False)
def _fulls():
    return (full((2, 2), np.float32(1.5)), full(3, np.int64(-7)), full(4, True),
            full(1, np.float64(0.25)))


@njit(parallel=True, cache=False)
def _prange_writes_only_a_view(x):
    out = alloc((x.size,), np.float64)
    flat = view(out, x.size)
    for i in prange(x.size):
        flat[i] = x[i] * 2.0 + 1.0
    return out


@njit(cache=False)
def _churn(a):
    o = alloc((2, 2), np.float64)
    f = view(o, 4)
    g = view(a, a.size)
    f[:] = g[0]
    t = full(3, np.float32(1.0))
    return view(o, (4,)), view(g, (3, 2)), t


def test_alloc_gives_c_arrays_of_the_asked_shape_and_dtype():
    a = _alloc_2x3_f32()
    assert a.shape == (2, 3) and a.dtype == np.float32 and a.flags.c_contiguous
    assert a.flags.writeable
    b = _alloc_like(5, np.int64(0))
    assert b.shape == (5,) and b.dtype == np.int64
    c = _alloc_like(4, True)
    assert c.shape == (4,) and c.dtype == np.bool_


def test_view_is_reshape_and_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    flat, nd, again = _views(a)
    np.testing.assert_array_equal(flat, a.reshape(6))
    np.testing.assert_array_equal(nd, a.reshape(3, 2))
    np.testing.assert_array_equal(again, a.reshape(6))
    assert np.shares_memory(flat, a) and np.shares_memory(nd, a)
    _write_through(a)
    np.testing.assert_array_equal(a, (np.arange(6.0) * 10).reshape(2, 3))


def test_view_of_the_wrong_size_raises_instead_of_reading_past_the_end():
    with pytest.raises(ValueError, match="view's size differs"):
        _bad_view(np.zeros(6))


def test_full_is_np_full():
    got = _fulls()
    want = (np.full((2, 2), np.float32(1.5)), np.full(3, np.int64(-7)), np.full(4, True),
            np.full(1, 0.25))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype and g.shape == w.shape


def test_a_prange_loop_that_writes_only_a_view_is_kept():
    # Numba's alias analysis must know view() aliases its array (arrays_ir registers
    # it); without that, parfors drops the loop as dead and returns garbage.
    x = np.linspace(-1, 1, 5000)
    np.testing.assert_array_equal(_prange_writes_only_a_view(x), x * 2.0 + 1.0)


def test_every_allocation_is_freed():
    a = np.arange(6.0) + 1
    _churn(a)  # compile outside the count
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = (_nrt_python.memsys_get_stats_alloc(), _nrt_python.memsys_get_stats_free())
        for _ in range(200):
            out = _churn(a)
        del out
        after = (_nrt_python.memsys_get_stats_alloc(), _nrt_python.memsys_get_stats_free())
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()
    allocs, frees = after[0] - before[0], after[1] - before[1]
    assert allocs >= 400 and allocs == frees

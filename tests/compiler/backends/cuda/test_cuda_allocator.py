"""numgrad's caching allocator for CUDA memory (Numba's simulator without a GPU): sizes
rounded into small and large pools, blocks given back when the tensor holding them dies
and handed out again, the cap, flush-and-retry on out-of-memory, ``ng.cuda.memory_stats``
/ ``empty_cache``, and every device allocation numgrad makes going through it."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import numgrad as ng
from cuda_cases import require_simulator
import numgrad.cuda.allocator as allocator

MiB = 1 << 20


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def _pool(monkeypatch, cap=None):
    if cap is None:
        monkeypatch.delenv("NUMGRAD_CUDA_CACHE_MAX_BYTES", raising=False)
    else:
        monkeypatch.setenv("NUMGRAD_CUDA_CACHE_MAX_BYTES", str(cap))
    return allocator.Pool(0, simulated=True)


@pytest.mark.parametrize("n", [1, 511, 512, 513, 4000, MiB - 1, MiB, MiB + 1, 3 * MiB + 5,
                               16 * MiB + 1, 100 * MiB + 3, 3 * 10 ** 9])
def test_round_size_pools_and_slack(n):
    r = allocator.round_size(n)
    assert r >= n
    if n <= MiB:   # small pool: multiples of 512 bytes
        assert r % 512 == 0 and r - n < 512
    else:          # large pool: 2 MiB granules, at most 1/8 of the size above 16 MiB
        assert r % (2 * MiB) == 0
        assert r - n < max(2 * MiB, n / 8)
    assert allocator.round_size(r) == r  # a rounded size is its own block size


def test_a_dead_block_is_cached_and_handed_out_again(monkeypatch):
    p = _pool(monkeypatch)
    a = p.alloc(1000)
    ptr = a.ptr
    assert p.stats["device_mallocs"] == 1 and p.stats["allocated_bytes"] == 1024
    del a
    assert p.stats["cached_bytes"] == 1024 and p.stats["allocated_bytes"] == 0
    b = p.alloc(900)             # the same rounded size: the cached block, no new malloc
    assert b.ptr == ptr
    assert p.stats["device_mallocs"] == 1 and p.stats["cache_hits"] == 1
    c = p.alloc(3000)            # another size: its own block
    assert c.ptr != ptr and p.stats["device_mallocs"] == 2
    assert p.stats["peak_allocated_bytes"] == 1024 + 3072


def test_a_view_keeps_its_block_out_of_the_cache(monkeypatch):
    p = _pool(monkeypatch)
    blk = p.alloc(80)
    buf = allocator.view(blk, 10, np.float64)
    buf.copy_to_device(np.arange(10.0))
    del blk
    assert p.stats["cached_bytes"] == 0   # still in use through the view
    other = p.alloc(80)
    assert other.ptr != buf._ng_block.ptr
    np.testing.assert_array_equal(buf.copy_to_host(), np.arange(10.0))
    del buf
    gc.collect()
    assert p.stats["cached_bytes"] == 512


def test_the_cap_frees_what_would_overflow_it(monkeypatch):
    p = _pool(monkeypatch, cap=1024)
    blocks = [p.alloc(1024) for _ in range(2)]
    del blocks
    assert p.stats["cached_bytes"] == 1024
    assert p.stats["device_frees"] == 1


def test_a_bad_cap_says_what_is_wrong(monkeypatch):
    p = _pool(monkeypatch, cap="lots")
    b = p.alloc(10)
    with pytest.raises(ValueError, match="NUMGRAD_CUDA_CACHE_MAX_BYTES='lots'"):
        p.give_back(b.size, b.mem, b.ptr)
    b.pool = _pool(monkeypatch)  # (its own death must not raise again)


def test_out_of_memory_flushes_the_cache_and_retries(monkeypatch):
    p = _pool(monkeypatch)
    raw = p._raw_malloc
    held = []   # a device with room for 4 KiB in all: the cache's blocks count

    def small_device(size):
        live = sum(len(v) for v in p.free.values()) * 2048 + p.stats["allocated_bytes"]
        if live + size > 4096:
            raise MemoryError("out of memory")
        return raw(size)
    monkeypatch.setattr(p, "_raw_malloc", small_device)
    held = [p.alloc(2048) for _ in range(2)]
    del held
    assert p.stats["cached_bytes"] == 4096
    big = p.alloc(4096)            # needs the cached blocks freed first
    assert big.size == 4096
    assert p.stats["oom_flushes"] == 1 and p.stats["cached_bytes"] == 0
    with pytest.raises(MemoryError):  # still too big after the flush: the error stands
        p.alloc(8192)


def test_tensors_give_their_memory_back_and_empty_cache_frees_it():
    ng.cuda.empty_cache()
    s0 = ng.cuda.memory_stats()
    for key in ("device_mallocs", "cached_bytes", "allocated_bytes", "frees", "cache_hits",
                "peak_allocated_bytes"):
        assert key in s0
    x = ng.ones(1000, dtype=ng.float64, device="cuda")
    s1 = ng.cuda.memory_stats()
    assert s1["allocated_bytes"] - s0["allocated_bytes"] == 8192
    del x
    s2 = ng.cuda.memory_stats()
    assert s2["allocated_bytes"] == s0["allocated_bytes"]
    assert s2["cached_bytes"] == 8192
    y = ng.zeros(1000, dtype=ng.float64, device="cuda")  # the same block again
    assert ng.cuda.memory_stats()["device_mallocs"] == s1["device_mallocs"]
    del y
    ng.cuda.empty_cache()
    assert ng.cuda.memory_stats()["cached_bytes"] == 0


def test_every_device_allocation_goes_through_the_allocator(monkeypatch):
    from numba import cuda

    def refuse(*a, **k):
        raise AssertionError("numgrad allocated device memory outside its allocator")
    monkeypatch.setattr(cuda, "device_array", refuse)
    monkeypatch.setattr(cuda, "to_device", refuse)
    before = ng.cuda.memory_stats()["allocs"]
    x = ng.tensor(np.arange(6.0).reshape(2, 3), device="cuda", requires_grad=True)
    y = ng.tensor(np.ones((2, 3))).to("cuda")
    z = (x * y + 2.0).sum(dim=1)                       # eager kernels
    f = ng.jit(lambda a, b: (a * b).exp().sum())        # a plan: outputs and scratch
    w = f(x, y)
    w.backward()
    np.testing.assert_allclose(z.detach().cpu().numpy(), [9.0, 18.0])
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(np.arange(6.0)).reshape(2, 3))
    assert ng.cuda.memory_stats()["allocs"] - before >= 6

"""Host time per call of numgrad's CUDA paths with the kernel launches stubbed out: the
Python numgrad itself runs around each launch (plan dispatch, the caching allocator,
pointer swapping, eager op dispatch), which is what decides small-workload speed on a
real GPU. It runs under Numba's simulator on any machine: each kernel's first launch
runs in the simulator (and is checked), then the prepared launch path that a real GPU
takes is used with ``cuda.core.launch`` replaced by a no-op, so only numgrad's own host
work is timed (not the driver's launch cost, ~5-10 us per kernel on a real GPU).

    NUMBA_ENABLE_CUDASIM=1 python bench/gpu_host_overhead.py [--calls N]

Prints µs per call (min and median of batches) for W1 (``(x**2 + x**3).sum()`` on 10
float64) through ``jit(value_and_grad)`` and jit call + ``.backward()`` (``.grad`` reset
to None first, as ``zero_grad`` does; from the second call the joint program runs and
the backward launches nothing), per op of a small eager loop, an eager in-place
``y.add_(x)`` (computed out of place, then copied into ``y``'s memory), an SGD-style
``jit(w - lr * g)`` called with a new Python float each time (taken by value), with the
budget ratio for W1 v&g (40 µs).
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import numgrad as ng  # noqa: E402
import numgrad.cuda.launch as launch  # noqa: E402

BUDGET_W1_VG_US = 40.0


def article(x):
    return (x ** 2 + x ** 3).sum()


def stub_launches():
    """After a kernel's first (simulated) launch, use the direct path with no-op launches."""
    launch._handle = lambda disp, grid, block: ("kernel", "config", "stream")
    launch._core_launch = lambda *args: None


def per_call_us(fn, calls, batches=15):
    for _ in range(max(20, calls // 10)):
        fn()
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return min(out), statistics.median(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args(argv)
    if not ng.cuda.is_available():
        print("no CUDA device or simulator (set NUMBA_ENABLE_CUDASIM=1)")
        return 1
    stub_launches()
    x0 = np.linspace(-1.0, 1.5, 10)
    x = ng.tensor(x0, device="cuda")
    xg = ng.tensor(x0, device="cuda", requires_grad=True)
    vg = ng.jit(ng.value_and_grad(article))
    f = ng.jit(article)
    v, g = vg(x)  # first call, simulated: check it before timing stubs
    np.testing.assert_allclose(g.cpu().numpy(), 2 * x0 + 3 * x0 ** 2, rtol=1e-12)

    def call_backward():
        xg.grad = None
        f(xg).backward()

    def eager_step():  # 5 ops: mul, pow, add, sum, and a scalar mul
        return ((x * 2.0) ** 2 + x).sum() * 0.5

    y = ng.tensor(x0, device="cuda")
    sgd = ng.jit(lambda w, lr, g: w - lr * g)
    lrs = itertools.cycle(np.linspace(1e-3, 1e-1, 97).tolist())  # (per_call_us warms up)

    def sgd_step():
        return sgd(y, next(lrs), x)

    rows = {"W1 jit(value_and_grad)": per_call_us(lambda: vg(x), args.calls),
            "W1 jit + .backward()": per_call_us(call_backward, args.calls)}
    lo, med = per_call_us(eager_step, args.calls)
    rows["eager, per op (5-op loop / 5)"] = (lo / 5, med / 5)
    rows["eager in-place y.add_(x)"] = per_call_us(lambda: y.add_(x), args.calls)
    rows["jit w - lr * g, a new lr per call"] = per_call_us(sgd_step, args.calls)
    stats = ng.cuda.memory_stats()
    for name, (lo, med) in rows.items():
        print(f"{name:34s} min {lo:7.1f} us  median {med:7.1f} us")
    ratio = rows["W1 jit(value_and_grad)"][0] / BUDGET_W1_VG_US
    print(f"W1 v&g host time / {BUDGET_W1_VG_US:.0f} us budget: {ratio:.2f}")
    print(f"allocator: {stats['device_mallocs']} raw device allocations for "
          f"{stats['allocs']} blocks ({stats['cache_hits']} from the cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

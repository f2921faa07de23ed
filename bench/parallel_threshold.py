"""Where does prange start to pay? Serial vs parallel fused elementwise+sum kernels.

Run: python bench/parallel_threshold.py
Prints, per size, the median time of the same generated kernel compiled with
parallel=False and parallel=True; numgrad's PARALLEL_MIN_WORK (backends/cpu/renderer.py) is
set from the crossovers this prints on the target machine (elements x op weight,
where a transcendental weighs 8).
"""
from __future__ import annotations

import statistics
import time


import numgrad as ng
from numgrad.compiler import schedule as cpu  # the parallel thresholds (compiler.schedule)


def cheap(x, y):
    return (x * y + x * x - y).sum()  # 4 simple ops per element


def w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()  # 3 transcendentals


def median_time(fn, *args, repeat=15):
    fn(*args)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    for kernel in (cheap, w2):
        sweep(kernel)


def sweep(kernel):
    saved = cpu.PARALLEL_MIN_WORK
    print(f"{kernel.__name__}:")
    print(f"{'elements':>10s} {'serial':>10s} {'parallel':>10s} {'speedup':>8s}")
    try:
        for n in (1 << 12, 1 << 14, 1 << 16, 1 << 17, 1 << 18, 1 << 20, 1 << 22):
            x = ng.randn(n, dtype=ng.float64)
            y = ng.randn(n, dtype=ng.float64)
            cpu.PARALLEL_MIN_WORK = 1 << 62
            ser = ng.jit(kernel)
            ser(x, y)  # compiles now, serial
            cpu.PARALLEL_MIN_WORK = 1
            par = ng.jit(kernel)
            par(x, y)  # compiles now, with prange
            ts, tp = [], []
            for _ in range(3):  # interleaved, so machine drift hits both alike
                ts.append(median_time(ser, x, y))
                tp.append(median_time(par, x, y))
            ts, tp = statistics.median(ts), statistics.median(tp)
            print(f"{n:>10d} {ts * 1e6:>8.1f}us {tp * 1e6:>8.1f}us {ts / tp:>7.2f}x")
    finally:
        cpu.PARALLEL_MIN_WORK = saved


if __name__ == "__main__":
    main()

"""A jitted function with a boolean mask (a graph break: compiled segments around an eager
step) against eager mode and against the same value written with ng.where (one graph).

Run from a checkout root: python -m bench.graph_break
Each time is the median of 15 calls of ``f(x).backward()`` on float64 vectors, three inputs
taken in turn (so the mask's count changes from call to call), after a warm-up that compiles.
"""
from __future__ import annotations

import time

import numpy as np


def main():
    import numgrad as ng

    def f(x):
        y = (x.tanh() * 2 + x.sin()) * x.cos()
        z = y[y > 0]
        return (z.exp() * z).sum() + (y * y).mean()

    def g(x):  # the same value: exp(0) * 0 is 0 where the mask drops an entry
        y = (x.tanh() * 2 + x.sin()) * x.cos()
        z = ng.where(y > 0, y, 0.0)
        return (z.exp() * z).sum() + (y * y).mean()

    rng = np.random.default_rng(0)

    def median_ms(fn, n, reps=15):
        xs = [ng.tensor(rng.standard_normal(n), requires_grad=True) for _ in range(3)]
        for x in xs:
            fn(x).backward()
        times = []
        for r in range(reps):
            x = xs[r % 3]
            x.grad = None
            t0 = time.perf_counter()
            fn(x).backward()
            times.append(time.perf_counter() - t0)
        return np.median(times) * 1e3

    for n in (10_000, 1_000_000):
        eager, broken, where = (median_ms(fn, n) for fn in (f, ng.jit(f), ng.jit(g)))
        print(f"n={n:>9,}: eager {eager:7.2f} ms   jit, graph break {broken:7.2f} ms   "
              f"jit, ng.where form {where:7.2f} ms")


if __name__ == "__main__":
    main()

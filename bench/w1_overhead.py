"""W1's fixed cost per compiled call: the article example through @ng.jit, input reused.

Run: python bench/w1_overhead.py
Unlike bench/w1_article.py (which, like every system there, also creates the input
tensor each step), this times only `f(x).backward()` and `ng.jit(ng.value_and_grad(f))(x)`
on an existing x: the runtime's and the engine's own overhead around two kernel calls.
"""
from __future__ import annotations

import statistics
import time

import numgrad as ng


def article(x):
    return (x ** 2 + x ** 3).sum()


def per_call_us(fn, inner=20000, rounds=9):
    for _ in range(1000):
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times) * 1e6


def main():
    f = ng.jit(article)
    vg = ng.jit(ng.value_and_grad(article))
    x = ng.ones(10, requires_grad=True)
    xd = ng.ones(10)

    def call_backward():
        x.grad = None
        f(x).backward()

    print(f"f(x).backward():          {per_call_us(call_backward):6.2f} us")
    print(f"value_and_grad(f)(x):     {per_call_us(lambda: vg(xd)):6.2f} us")
    assert x.grad.tolist() == [5.0] * 10


if __name__ == "__main__":
    main()

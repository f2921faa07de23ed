"""Per-call cost of @ng.jit's guard for an nn model, and what a call costs around it.

Run from a checkout root: python -m bench.guard_overhead
The model: nn.Sequential(Linear(16, 32), ReLU, Linear(32, 32), ReLU, Linear(32, 4)),
float32, batch 8, one thread. Prints the guard's term count, the time of one guard
evaluation alone (best of 7 batches of 20,000), and of a whole compiled call: the
forward under no_grad, and ``ng.jit(model)(x)`` then ``.backward()`` (best of 7 batches).
"""
from __future__ import annotations

import time

from bench.common import pin_threads


def best(fn, n, reps=7):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return min(times) * 1e6


def main():
    pin_threads(1, libs=("numba",))
    import numgrad as ng
    from numgrad import nn

    ng.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 4))
    compiled = ng.jit(model)
    x = ng.randn(8, 16)
    compiled(x)
    guard = next(iter(compiled._plans.values())).guard
    terms = 0 if guard is None else guard.source.count("\n                and ") + 1

    def step():
        compiled(x).sum().backward()

    with ng.no_grad():
        compiled(x)
        forward = best(lambda: compiled(x), 5000)
    step()
    print(f"guard: {terms} terms, {best(guard, 20000) if guard else 0.0:.3f} us a call")
    print(f"no_grad forward call: {forward:.2f} us")
    print(f"call + backward: {best(step, 2000):.2f} us")
    print(f"traces: {compiled.stats.traces} (one per grad mode)")


if __name__ == "__main__":
    main()

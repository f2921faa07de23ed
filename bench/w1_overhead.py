"""W1 per-call overhead of the compiled paths: ng.jit(f) called then .backward(), and
ng.jit(ng.value_and_grad(f)), on ones(10) float32. Prints min and median of 41 batches of
500 calls. Run from a checkout root: python bench/w1_overhead.py"""
import statistics
import time

import numgrad as ng


def article(x):
    return (x ** 2 + x ** 3).sum()


f = ng.jit(article)
vg = ng.jit(ng.value_and_grad(article))


def step():
    x = ng.ones(10, requires_grad=True)
    r = f(x)
    r.backward()
    return x.grad


def step_vg():
    return vg(ng.ones(10))


for s in (step, step_vg):
    for _ in range(300):
        s()
res = {}
for name, s in (("call+backward", step), ("jit(value_and_grad)", step_vg)):
    per = []
    for _ in range(41):
        t0 = time.perf_counter()
        for _ in range(500):
            s()
        per.append((time.perf_counter() - t0) / 500 * 1e6)
    res[name] = (min(per), statistics.median(per))
print(ng.__file__, {k: f"min {a:.2f} us, median {b:.2f} us" for k, (a, b) in res.items()})

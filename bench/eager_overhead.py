"""Eager overhead: numgrad eager vs torch eager on many tiny ops.

Run: python bench/eager_overhead.py [--repeat 50]
Prints the median forward+backward time of (a) a chain of 100 small ops on
1,000 float32 elements and (b) the article's first example, and the ratio
numgrad/torch (the goal: within 2x per op).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import numgrad as ng


def chain(lib, x):
    y = x
    for i in range(25):  # 4 ops per step: 100 ops in all
        y = lib.tanh(y * 0.9 + 0.1)
        y = y - 0.01
    return y.sum()


def article(lib, x):
    return (x ** 2 + x ** 3).sum()


def _time(fn, repeat, inner):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times)


def run(repeat=30):
    import torch
    torch.set_num_threads(1)
    rows = []
    data = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    for name, work, n, n_ops in (("chain of 100 ops, 1e3 elements", chain, 1000, 101),
                                 ("article example 1 (x=ones(10))", article, 10, 5)):
        def ng_step():
            x = ng.tensor(data[:n], requires_grad=True)
            work(ng, x).backward()

        def torch_step():
            x = torch.tensor(data[:n], requires_grad=True)
            work(torch, x).backward()

        inner = 20 if n_ops > 10 else 200
        t_ng, t_torch = [], []
        for _ in range(3):  # interleave so machine drift hits both alike
            t_ng.append(_time(ng_step, repeat // 3 or 1, inner))
            t_torch.append(_time(torch_step, repeat // 3 or 1, inner))
        a, b = statistics.median(t_ng), statistics.median(t_torch)
        rows.append((name, a, b, n_ops))
    print(f"{'workload':34s} {'numgrad':>11s} {'torch':>11s} {'ratio':>6s} {'per op':>14s}")
    for name, a, b, n_ops in rows:
        print(f"{name:34s} {a * 1e6:9.1f}us {b * 1e6:9.1f}us {a / b:6.2f} "
              f"{a / n_ops * 1e6:5.1f} vs {b / n_ops * 1e6:4.1f}us")
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=30)
    run(p.parse_args().repeat)

"""What the class-index check of ``cross_entropy`` costs under ``@ng.jit``: the compiled
call with the check and with it taken out (same inputs, medians of 300 calls), and the
check's own NumPy pass over the targets.

    python bench/target_check_cost.py
"""
from __future__ import annotations

import time

import numpy as np

import numgrad as ng
import numgrad.nn.functional as F
from numgrad.ops import index_check


def _median_us(fn, *args, n=300):
    for _ in range(5):
        fn(*args)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e6


def main(sizes=((256, 10), (4096, 100))):
    """Print the per-call cost with and without the check for each ``(batch, classes)``."""
    rng = np.random.default_rng(0)
    for n, c in sizes:
        x = ng.tensor(rng.standard_normal((n, c)).astype(np.float32))
        t = ng.tensor(rng.integers(0, c, n))
        checked = _median_us(ng.jit(lambda x, t: F.cross_entropy(x, t)), x, t)
        keep = F._check_targets
        F._check_targets = lambda target, classes, ignore_index: target
        try:
            unchecked = _median_us(ng.jit(lambda x, t: F.cross_entropy(x, t)), x, t)
        finally:
            F._check_targets = keep
        alone = _median_us(index_check._check, t.numpy(), c, -100, n=2000)
        print(f"batch {n}, {c} classes: jit cross_entropy {checked:.1f} us checked, "
              f"{unchecked:.1f} us unchecked; the check's own pass {alone:.2f} us")


if __name__ == "__main__":
    main()

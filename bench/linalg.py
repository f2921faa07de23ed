"""numgrad.linalg against torch.linalg, eager, one thread: the median time of one forward +
backward of a scalar loss over each decomposition, on a batch of small matrices and on one
larger one (float64). Both run LAPACK; the gap is per-op overhead and the backward formulas
(numgrad's are numgrad ops, each its own NumPy call). Gradients are checked against torch's
before timing (sign-invariant losses, so LAPACK's choices of sign do not matter)::

    python bench/linalg.py                  # batch (16, 4, 4) and (64, 64), 200 rounds
    python bench/linalg.py --rounds 50
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import pin_threads  # noqa: E402

LOSSES = {
    "det": lambda m, a: m.linalg.det(a).sum(),
    "inv": lambda m, a: m.linalg.inv(a).sum(),
    "solve": lambda m, a: m.linalg.solve(a, a[..., :1]).sum(),
    "cholesky": lambda m, a: m.linalg.cholesky(a @ a.mT).sum(),
    "qr": lambda m, a: (m.linalg.qr(a).R ** 2).sum(),
    "eigh": lambda m, a: (m.linalg.eigh(a + a.mT).eigenvectors ** 4).sum(),
    "svd": lambda m, a: (m.linalg.svd(a, full_matrices=False).U ** 4).sum(),
    "matrix_norm nuc": lambda m, a: m.linalg.matrix_norm(a, "nuc").sum(),
}


def _median(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=200)
    args = p.parse_args(argv)
    pin_threads(1)
    import numpy as np
    import torch

    import numgrad as ng
    rng = np.random.default_rng(0)
    shapes = [(16, 4, 4), (64, 64)]
    print(f"{'loss':16} {'shape':12} {'numgrad us':>11} {'torch us':>9} {'ratio':>6}")
    for name, loss in LOSSES.items():
        for shape in shapes:
            a = rng.standard_normal(shape) + 2 * np.eye(shape[-1])
            x = ng.tensor(a, requires_grad=True)
            t = torch.tensor(a, requires_grad=True)

            def run_ng():
                x.grad = None
                loss(ng, x).backward()

            def run_torch():
                t.grad = None
                loss(torch, t).backward()

            run_ng()
            run_torch()
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-8)
            tn, tt = _median(run_ng, args.rounds), _median(run_torch, args.rounds)
            print(f"{name:16} {str(shape):12} {tn * 1e6:11.0f} {tt * 1e6:9.0f} {tn / tt:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Minor page faults and time per call of W2's ``jit(value_and_grad)``, with numgrad's
malloc settings and without (``NUMGRAD_MALLOC_TUNING=0``), each in a fresh process.

    python bench/page_faults.py 1e6 1e7 3e7
"""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r'''
import resource, statistics, sys, time
import numpy as np
import numgrad as ng
n = int(float(sys.argv[1]))
w2 = lambda x, y: ((x * y + ng.sin(x)).tanh() * ng.exp(-y * y)).sum()
vg = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)))
x = ng.tensor(np.random.default_rng(0).standard_normal(n))
y = ng.tensor(np.random.default_rng(1).standard_normal(n))
for _ in range(3):
    vg(x, y)
ts, pfs = [], []
for _ in range(15):
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    vg(x, y)
    ts.append(time.perf_counter() - t0)
    pfs.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
print(f"{statistics.median(ts) * 1e3:.1f} {statistics.median(pfs):.0f} "
      f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
'''


def main(sizes):
    print("| elements | malloc | ms/call (median of 15) | minor faults/call | max RSS MB |")
    print("|---|---|---|---|---|")
    for n in sizes:
        for tuned in ("1", "0"):
            env = dict(os.environ, NUMGRAD_MALLOC_TUNING=tuned,
                       PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            out = subprocess.run([sys.executable, "-c", CHILD, n], env=env, cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.split()
            print(f"| {n} | {'numgrad' if tuned == '1' else 'glibc default'} | {out[0]} | "
                  f"{out[1]} | {out[2]} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["1e6", "1e7"])

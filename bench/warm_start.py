"""Cold compile vs warm start (new process, disk cache) for W2's call + backward.

Run: python bench/warm_start.py
Runs a tiny W2 script three times in fresh processes sharing one empty kernel
cache: the first run traces and compiles, the next ones load from disk. Prints
the time from after `import numgrad` to the first result, for each run, and the
second and third calls: with parallel="auto" a cold cache compiles the prange
tier at the second call (see numgrad/compiler/backends/cpu/renderer.py), so that one is
slow once; parallel=True compiles it before the first result.

Last, Numba on its own: a process that imports numba, loads one cached parallel
W2-like kernel through Numba's own cache path and runs it once on the same data.
numgrad loads its kernels without Numba's registry refresh
(numgrad/compiler/backends/cpu/numba_load.py), which is most of the difference.

The child processes may write bytecode caches (PYTHONDONTWRITEBYTECODE is dropped),
as an installed package has them: without, each process also spends tens of
milliseconds compiling numgrad's own sources.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SCRIPT = r"""
import time
t0 = time.perf_counter()
import numgrad as ng
t1 = time.perf_counter()
def w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()
f = ng.jit(w2, parallel=PARALLEL)
x = ng.randn(1000000, dtype=ng.float64, requires_grad=True)
y = ng.randn(1000000, dtype=ng.float64, requires_grad=True)
t2 = time.perf_counter()
f(x, y).backward()
t3 = time.perf_counter()
f(x, y).backward()
t4 = time.perf_counter()
f(x, y).backward()
t5 = time.perf_counter()
print(f"import {t1 - t0:.2f}s, first result after import {t3 - t2:.2f}s, "
      f"call 2 {t4 - t3:.3f}s, call 3 {t5 - t4:.3f}s, disk hits {f.stats.disk_hits}")
"""

FLOOR_MODULE = """
import numpy as np
from numba import njit, prange

@njit("(float64[::1], float64[::1])", cache=True, parallel=True, fastmath=True)
def k(x, y):
    s = 0.0
    for i in prange(x.size):
        s += np.tanh(x[i] * y[i] + np.sin(x[i])) * np.exp(-y[i] * y[i])
    return s
"""

FLOOR_SCRIPT = r"""
import sys, time
import numpy as np
x = np.random.randn(1000000)
y = np.random.randn(1000000)
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import floor_kernel
floor_kernel.k(x, y)
print(f"import numba + load the cached kernel + run it: {time.perf_counter() - t0:.2f}s")
"""


def _env():
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main():
    for parallel in ("False", '"auto"', "True"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(_env(), NUMGRAD_CACHE_DIR=cache)
            print(f"parallel={parallel}:")
            for run in ("cold", "warm", "warm"):
                out = subprocess.run([sys.executable, "-c", SCRIPT.replace("PARALLEL", parallel)],
                                     env=env, capture_output=True, text=True, check=True)
                print(f"  {run}: {out.stdout.strip()}")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "floor_kernel.py"), "w") as f:
            f.write(FLOOR_MODULE)
        print("Numba alone (its own cache loading):")
        for run in ("cold", "warm", "warm"):
            out = subprocess.run([sys.executable, "-c", FLOOR_SCRIPT, d], env=_env(),
                                 capture_output=True, text=True, check=True)
            print(f"  {run}: {out.stdout.strip()}")


if __name__ == "__main__":
    main()

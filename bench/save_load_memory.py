"""Peak memory of saving and loading one big float32 tensor, beyond the tensor itself:
``ng.save``/``ng.load`` and ``torch.save``/``torch.load``, each in a fresh process (peak
resident set from ``ru_maxrss``, and for numgrad also tracemalloc's peak of NumPy's
allocations). The file lands in a temporary directory and is removed.

    python bench/save_load_memory.py 256     # MiB
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r'''
import resource, sys, tracemalloc
import numpy as np
lib, what, path, mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
n = mib * 2 ** 20 // 4
if lib == "numgrad":
    import numgrad as m
else:
    import torch as m
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if what == "save":
    x = m.from_numpy(np.ones(n, np.float32))  # touched: resident before the baseline
    base = rss()
    tracemalloc.start()
    m.save({"x": x}, path)
else:
    base = rss()
    tracemalloc.start()
    got = m.load(path)
    assert got["x"].shape == (n,)
peak_py = tracemalloc.get_traced_memory()[1]
extra = rss() - base - (n * 4 if what == "load" else 0)
print(max(extra, 0) / 2 ** 20, peak_py / 2 ** 20 - (mib if what == "load" else 0))
'''


def measure(lib, what, path, mib):
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", CHILD, lib, what, path, str(mib)], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def main(mib=256):
    """Print each library's extra peak memory (MiB) for saving and loading ``mib`` MiB."""
    with tempfile.TemporaryDirectory() as d:
        print(f"{mib} MiB float32 tensor: extra peak memory beyond the tensor (MiB)")
        for lib in ("numgrad", "torch"):
            path = os.path.join(d, "x." + lib)
            for what in ("save", "load"):
                rss, traced = measure(lib, what, path, mib)
                note = f", tracemalloc {traced:7.1f}" if lib == "numgrad" else ""
                print(f"  {lib:8s} {what}: ru_maxrss {rss:7.1f}{note}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)

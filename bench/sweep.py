"""W2 from 1e3 to 1e8 elements: time per element against the memory-bandwidth floor.

Each (system, size, dtype) runs in a fresh process, so peak memory is the system's own:
two warm-up calls, then the median of timed calls, the minor page faults per call and
the process's peak RSS. The floor reads x and y and writes both gradients once at the
STREAM-like triad rate measured here with the same threads (``bench.runner``'s triad).

    python bench/sweep.py                         # every system, 1e3 .. 1e8, both dtypes
    python bench/sweep.py --sizes 1e5 1e7 --dtypes float64 --systems "numgrad jit v&g"

Systems: numgrad ``jit(value_and_grad)``, numgrad ``jit`` + ``.backward()`` (the PyTorch
habit), ``torch.compile`` of a function returning value and grads, ``torch.compile(f)``
+ ``.backward()``, and JAX ``jit(value_and_grad)``, where installed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYSTEMS = ("numgrad jit v&g", "numgrad jit", "torch.compile", "torch.compile+backward", "jax jit")

CHILD = r'''
import json, resource, statistics, sys, time
import numpy as np
system, n, dtype, threads, reps = sys.argv[1], int(float(sys.argv[2])), sys.argv[3], \
    int(sys.argv[4]), int(sys.argv[5])
from bench import common, w2_elementwise as w2
common.pin_threads(threads)
case = common.Case("W2", "", n, dtype, {"n": n})
data = w2.make_data(case)
if system == "numgrad jit v&g":
    step = w2.numgrad_jit_vg(case, data)
elif system == "numgrad jit":
    step = w2.numgrad_jit(case, data)
elif system == "torch.compile":
    step = w2.torch_compile(case, data)
elif system == "jax jit":
    step = w2.jax_jit(case, data)
else:
    torch = common.import_torch()
    f = common.torch_compile_fresh(lambda x, y: w2.f(torch, x, y))
    x = torch.from_numpy(data["x"]).requires_grad_(True)
    y = torch.from_numpy(data["y"]).requires_grad_(True)
    def step():
        x.grad = y.grad = None
        out = f(x, y)
        out.backward()
        return out.detach(), x.grad, y.grad
for _ in range(3):
    step()
ts, pfs = [], []
for _ in range(reps):
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    step()
    ts.append(time.perf_counter() - t0)
    pfs.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
print(json.dumps({"time_s": statistics.median(ts), "faults": statistics.median(pfs),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

TRIAD = r'''
import json, sys
from bench import common
from bench.runner import triad_bandwidth
common.pin_threads(int(sys.argv[1]))
print(json.dumps(triad_bandwidth(False)))
'''


def _env():
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def available(system):
    import importlib.util
    mod = system.split()[0].split(".")[0]
    return importlib.util.find_spec(mod) is not None


def measure(system, n, dtype, threads, reps):
    out = subprocess.run([sys.executable, "-c", CHILD, system, str(n), dtype, str(threads),
                          str(reps)], env=_env(), cwd=ROOT, capture_output=True, text=True,
                         timeout=3600)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(sizes, dtypes, systems, threads, verbose=True):
    triad = json.loads(subprocess.run([sys.executable, "-c", TRIAD, str(threads)], env=_env(),
                                      cwd=ROOT, capture_output=True, text=True,
                                      check=True).stdout)
    if verbose:
        print(f"triad: {triad['GBps']:.1f} GB/s on {triad['threads']} threads", flush=True)
    rows = []
    for dtype in dtypes:
        item = 8 if dtype == "float64" else 4
        for n in sizes:
            floor = 4 * item * n / (triad["GBps"] * 1e9)   # read x, y; write dx, dy
            reps = 5 if n >= 10 ** 7 else 15
            for system in systems:
                if not available(system):
                    continue
                r = measure(system, n, dtype, threads, reps)
                r.update(system=system, n=n, dtype=dtype, floor_s=floor)
                rows.append(r)
                if verbose:
                    print(_line(r), flush=True)
    return rows, triad


def _line(r):
    if "error" in r:
        return f"{r['dtype']} {r['n']:.0e} {r['system']}: {r['error']}"
    return (f"{r['dtype']} {r['n']:.0e} {r['system']:24s} {r['time_s'] * 1e3:9.3f} ms "
            f"{r['time_s'] / r['floor_s']:6.2f}x floor  {r['faults']:8.0f} faults/call "
            f"{r['peak_mb']:7.0f} MB peak")


def table(rows):
    out = ["| dtype | n | system | ms/call | x floor | faults/call | peak RSS MB |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['dtype']} | {r['n']:.0e} | {r['system']} | error | | | |")
            continue
        out.append(f"| {r['dtype']} | {r['n']:.0e} | {r['system']} | {r['time_s'] * 1e3:.3f} | "
                   f"{r['time_s'] / r['floor_s']:.2f} | {r['faults']:.0f} | {r['peak_mb']:.0f} |")
    return "\n".join(out)


def plot(rows, triad, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    dtypes = sorted({r["dtype"] for r in rows})
    fig, axes = plt.subplots(1, len(dtypes), figsize=(7 * len(dtypes), 5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        mine = [r for r in rows if r["dtype"] == dtype and "error" not in r]
        for system in dict.fromkeys(r["system"] for r in mine):
            pts = sorted((r["n"], r["time_s"] / r["n"] * 1e9) for r in mine
                         if r["system"] == system)
            ax.plot(*zip(*pts), "o-", label=system)
        floor = sorted({(r["n"], r["floor_s"] / r["n"] * 1e9) for r in mine})
        if floor:
            ax.plot(*zip(*floor), "k--", label=f"bandwidth floor ({triad['GBps']:.1f} GB/s)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("elements n")
        ax.set_ylabel("ns per element (value + both gradients)")
        ax.set_title(f"W2 {dtype}, {triad['threads']} threads")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["1e3", "1e4", "1e5", "1e6", "1e7", "1e8"])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out-dir", help="where JSON and PNG go (default: a new scratch folder)")
    a = p.parse_args(argv)
    out_dir = a.out_dir or tempfile.mkdtemp(prefix="numgrad-sweep-")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    rows, triad = run([int(float(s)) for s in a.sizes], a.dtypes, a.systems, a.threads)
    with open(os.path.join(out_dir, "sweep.json"), "w") as fh:
        json.dump({"triad": triad, "rows": rows}, fh, indent=1)
    print(table(rows))
    png = plot(rows, triad, os.path.join(out_dir, "sweep.png"))
    print(f"wrote {out_dir} ({png or 'no plot'}) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

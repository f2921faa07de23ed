"""Compile latency: time to the first result of a traced chain, against its length.

The chain is W4's step, repeated N times on 1,000 float64 elements:
``x = (x.sin() * 1.01 + 0.1 * x).tanh()``, then ``.sum()``, gradient w.r.t. x.
Every measurement runs in a fresh process (imports excluded from the time) with an
empty compile cache: what the first call of a session pays, Numba's (or XLA's) own
start-up included. A Jupyter user who edits the function pays a cold compile in a
process that has compiled before: the ``session`` column (numgrad, JAX) first compiles
a 2-step chain with another constant, then times the N-step one.

- numgrad ``f(x).backward()`` and ``ng.jit(ng.value_and_grad(f))``, cold (empty kernel
  cache) and warm (the cache the cold run left, in a new process);
- JAX ``jax.jit(jax.value_and_grad(f))`` and ``torch.compile`` of the function followed by
  ``.backward()``, cold (their on-disk caches pointed at empty folders), where installed.

    python bench/compile_latency.py                  # N = 5 20 50 100 200 400, plot
    python bench/compile_latency.py --n 5 20 --systems numgrad --repeat 1
    python bench/compile_latency.py --out-dir bench/results/compile_latency   # the README's
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = (5, 20, 50, 100, 200, 400)
SYSTEMS = ("numgrad", "jax", "torch")

# One measurement, run as `python -c CHILD system mode n`: prints the seconds to the first
# result (value and gradient computed), imports excluded, then the process CPU seconds in
# that time (on a shared machine the wall time also counts waiting for a core).
CHILD = r'''
import sys, time
import numpy as np
system, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
session = len(sys.argv) > 4 and sys.argv[4] == "session"
x0 = np.random.default_rng(0).standard_normal(1000)

def chain(lib, x, n=n, c=1.01):
    for _ in range(n):
        x = lib.tanh(lib.sin(x) * c + 0.1 * x)
    return x.sum()

if session:  # an earlier compile in this process: an edit, not a first use
    if system == "numgrad":
        import numgrad as ng
        ng.jit(ng.value_and_grad(lambda x: chain(ng, x, 2, 1.02)))(ng.tensor(x0))
    elif system == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        jax.jit(jax.value_and_grad(lambda x: chain(jnp, x, 2, 1.02)))(jnp.asarray(x0))

if system == "numgrad":
    import numgrad as ng
    f = lambda x: chain(ng, x)
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "backward":
        x = ng.tensor(x0, requires_grad=True)
        ng.jit(f)(x).backward()
        g = x.grad.numpy()
    else:
        v, g = ng.jit(ng.value_and_grad(f))(ng.tensor(x0))
        g = g.numpy()
elif system == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    t0, c0 = time.perf_counter(), time.process_time()
    v, g = jax.jit(jax.value_and_grad(lambda x: chain(jnp, x)))(jnp.asarray(x0))
    g = np.asarray(g)
else:
    import torch
    f = torch.compile(lambda x: chain(torch, x), dynamic=False)
    t0, c0 = time.perf_counter(), time.process_time()
    x = torch.tensor(x0, requires_grad=True)
    f(x).backward()
    g = x.grad.numpy()
print(time.perf_counter() - t0, time.process_time() - c0, float(np.abs(g).sum()))
'''


def measure(system, mode, n, env, session=False):
    """(wall seconds, CPU seconds) to the first result, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", CHILD, system, mode, str(n)]
                         + (["session"] if session else []), env=env,
                         capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    wall, cpu = out.stdout.split()[:2]
    return float(wall), float(cpu)


def available(system):
    if system == "numgrad":
        return True
    import importlib.util
    return importlib.util.find_spec(system) is not None


def run(sizes, systems, repeat=3, torch_repeat=1, verbose=True):
    """Each point ``repeat`` times (a fresh process and an empty cache each), interleaved
    by system; rows hold the median and the range."""
    rows = []
    for n in sizes:
        for system in systems:
            if not available(system):
                continue
            modes = ("backward", "value_and_grad") if system == "numgrad" else (
                "value_and_grad" if system == "jax" else "backward",)
            for mode in modes:
                if verbose:
                    print(f"N={n:4d} {system:8s} {mode:15s} ...", end="", flush=True)
                cold, warm, sess = [], [], []
                for _ in range(torch_repeat if system == "torch" else repeat):
                    with tempfile.TemporaryDirectory(prefix="ng-latency-") as tmp:
                        env = dict(os.environ, NUMGRAD_CACHE_DIR=os.path.join(tmp, "numgrad"),
                                   TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"),
                                   JAX_COMPILATION_CACHE_DIR=os.path.join(tmp, "jax"),
                                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
                        cold.append(measure(system, mode, n, env))
                        if system == "numgrad":
                            warm.append(measure(system, mode, n, env))
                    if system in ("numgrad", "jax"):
                        with tempfile.TemporaryDirectory(prefix="ng-latency-") as tmp:
                            env = dict(env, NUMGRAD_CACHE_DIR=os.path.join(tmp, "numgrad"),
                                       JAX_COMPILATION_CACHE_DIR=os.path.join(tmp, "jax"))
                            sess.append(measure(system, mode, n, env, session=True))
                row = {"n": n, "system": system, "mode": mode, "repeat": len(cold)}
                for key, runs in (("cold", cold), ("warm", warm), ("session", sess)):
                    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
                    row[key + "_s"] = statistics.median(walls) if runs else None
                    row[key + "_range"] = [min(walls), max(walls)] if runs else None
                    row[key + "_cpu_s"] = statistics.median(cpus) if runs else None
                if verbose:
                    print(f" cold {row['cold_s']:7.2f} s ({row['cold_range'][0]:.2f}-"
                          f"{row['cold_range'][1]:.2f}, cpu {row['cold_cpu_s']:.2f})"
                          + (f"   warm {row['warm_s']:5.2f} s" if warm else "")
                          + (f"   session {row['session_s']:5.2f} s" if sess else ""))
                rows.append(row)
    return rows


def table(rows):
    head = ("| N | system | path | cold (s), median | cold range | cold CPU (s) | "
            "session (s) | warm (s) |")
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        warm = f"{r['warm_s']:.2f}" if r["warm_s"] is not None else "—"
        sess = f"{r['session_s']:.2f}" if r.get("session_s") is not None else "—"
        lo, hi = r["cold_range"]
        lines.append(f"| {r['n']} | {r['system']} | {r['mode']} | {r['cold_s']:.2f} | "
                     f"{lo:.2f}-{hi:.2f} | {r['cold_cpu_s']:.2f} | {sess} | {warm} |")
    return "\n".join(lines)


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    keys = sorted({(r["system"], r["mode"]) for r in rows})
    for system, mode in keys:
        pts = [r for r in rows if (r["system"], r["mode"]) == (system, mode)]
        ns = [r["n"] for r in pts]
        ax.plot(ns, [r["cold_s"] for r in pts], "o-", label=f"{system} {mode}, cold")
        if system == "numgrad":
            ax.plot(ns, [r["warm_s"] for r in pts], "s--", label=f"{system} {mode}, warm cache")
        if pts[0].get("session_s") is not None:
            ax.plot(ns, [r["session_s"] for r in pts], "^:",
                    label=f"{system} {mode}, cold, in a session")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="1 s goal at N=100")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("steps N (3 ops each)")
    ax.set_ylabel("seconds to first value and gradient")
    ax.set_title("Compile latency of a traced chain (fresh process each)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=list(SIZES), help="chain lengths")
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--repeat", type=int, default=3,
                   help="fresh processes per point (median and range reported)")
    p.add_argument("--torch-repeat", type=int, default=1,
                   help="runs per point for torch.compile (its cold compiles are long)")
    p.add_argument("--out-dir", default=None,
                   help="where the JSON and PNG go (default: a new scratch folder)")
    a = p.parse_args(argv)
    out_dir = a.out_dir or tempfile.mkdtemp(prefix="numgrad-compile-latency-")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    rows = run(a.n, a.systems, a.repeat, a.torch_repeat)
    with open(os.path.join(out_dir, "compile_latency.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    print(table(rows))
    png = plot(rows, os.path.join(out_dir, "compile_latency.png"))
    print(f"wrote {out_dir} ({png or 'no plot'}) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""W2 from 1e3 to 1e8 elements against the memory-bandwidth floor, W3 beside it, and
the performance goals checked on the result.

Each (workload, system, size, dtype) runs in a fresh process, so peak memory is the
system's own (a process sets only its own library's threads: importing torch alone
costs ~250 MB of RSS): three warm-up calls, then the median of timed calls, the minor
page faults per call and the process's peak RSS. With ``--rounds R`` the whole sweep
runs R times, interleaved, and each point is the median of its rounds (this box is
shared; a point of one round can be 1.5x off). The floor reads x and y and writes both
gradients once at the STREAM-like triad rate measured here with the same threads
(``bench.runner``'s triad, median of the rounds).

    python bench/sweep.py                         # every system, 1e3 .. 1e8, both dtypes
    python bench/sweep.py --sizes 1e5 1e7 --dtypes float64 --systems "numgrad jit v&g"
    python bench/sweep.py --rounds 3 --out-dir bench/results/sweep    # the README's run

Systems: numgrad ``jit(value_and_grad)``, numgrad ``jit`` + ``.backward()`` (the PyTorch
habit), ``torch.compile`` of a function returning value and grads, ``torch.compile(f)``
+ ``.backward()``, and JAX ``jit(value_and_grad)``, where installed. W3 (the MLP step,
``bench/w3_mlp.py``) runs for the same systems but the habit-path torch one.
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
if ROOT not in sys.path:  # run as a script (python bench/sweep.py): bench/ is on the path, not ROOT
    sys.path.insert(0, ROOT)
from bench.runner import cpu_model  # noqa: E402  (light: numba and numpy load on use)
SYSTEMS = ("numgrad jit v&g", "numgrad jit", "torch.compile", "torch.compile+backward", "jax jit")
W3_SYSTEMS = ("numgrad jit v&g", "numgrad jit", "torch.compile", "torch eager", "jax jit")
WORKLOADS = {"W2": "bench.w2_elementwise", "W3": "bench.w3_mlp"}
W3_N = 256 * 784   # the element count of bench/w3_mlp.py's one case (its row key here)

CHILD = r'''
import importlib, json, resource, statistics, sys, time
import numpy as np
workload, system, n, dtype, threads, reps = sys.argv[1], sys.argv[2], int(float(sys.argv[3])), \
    sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
from bench import common
common.pin_threads(threads, libs=sys.argv[8].split(",") if sys.argv[8] else ())
mod = importlib.import_module(sys.argv[7])
case = (common.Case(workload, "", n, dtype, {"n": n}) if workload == "W2"
        else mod.cases(True)[0])
builders = dict(mod.IMPLS, **getattr(mod, "EXTRA_IMPLS", {}))
step = builders[system](case, mod.make_data(case))
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
common.pin_threads(int(sys.argv[1]), libs=())
print(json.dumps(triad_bandwidth(False)))
'''


def _env():
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _package(system):
    """The package a system is (``numgrad jit`` -> numgrad, ``torch.compile`` -> torch)."""
    return system.split()[0].split(".")[0]


# The thread pools a system's child sets by a call (bench.common.pin_threads): only its
# own, so that it imports no one else's library (torch alone is ~250 MB of RSS).
PINNED = {"numgrad": "numba", "torch": "torch"}


def available(system):
    import importlib.util
    return importlib.util.find_spec(_package(system)) is not None


def measure(workload, system, n, dtype, threads, reps):
    out = subprocess.run([sys.executable, "-c", CHILD, workload, system, str(n), dtype,
                          str(threads), str(reps), WORKLOADS[workload],
                          PINNED.get(_package(system), "")], env=_env(), cwd=ROOT,
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _triad(threads):
    return json.loads(subprocess.run([sys.executable, "-c", TRIAD, str(threads)], env=_env(),
                                     cwd=ROOT, capture_output=True, text=True,
                                     check=True).stdout)


def _points(sizes, dtypes, systems, w3):
    pts = [("W2", s, n, d) for d in dtypes for n in sizes for s in systems if available(s)]
    if w3:
        pts += [("W3", s, W3_N, "float32") for s in W3_SYSTEMS if available(s)]
    return pts


def _median_rows(runs):
    """One row per point: the median over rounds of time, faults and peak RSS."""
    out = []
    for rows in zip(*runs):
        ok = [r for r in rows if "error" not in r]
        row = dict(rows[0]) if not ok else dict(ok[0])
        if ok:
            for k in ("time_s", "faults", "peak_mb"):
                row[k] = statistics.median(r[k] for r in ok)
            row["rounds"] = [r["time_s"] for r in ok]
        out.append(row)
    return out


def run(sizes, dtypes, systems, threads, rounds=1, w3=True, verbose=True):
    pts = _points(sizes, dtypes, systems, w3)
    triads, runs = [], []
    for k in range(rounds):
        triads.append(_triad(threads))
        if verbose:
            print(f"round {k + 1}/{rounds}: triad {triads[-1]['GBps']:.1f} GB/s on "
                  f"{threads} threads", flush=True)
        rows = []
        for workload, system, n, dtype in pts:
            reps = 5 if n >= 10 ** 7 else 15
            r = measure(workload, system, n, dtype, threads, reps)
            r.update(workload=workload, system=system, n=n, dtype=dtype,
                     label=f"{n:.0e}" if workload == "W2" else "B=256 784-512-10")
            rows.append(r)
            if verbose:
                print("  " + _line(r, triads[-1]), flush=True)
        runs.append(rows)
    triad = dict(triads[0], GBps=statistics.median(t["GBps"] for t in triads),
                 rounds=[t["GBps"] for t in triads])
    rows = _median_rows(runs)
    for r in rows:
        if r["workload"] == "W2":
            r["floor_s"] = _floor(r, triad)
    return rows, triad


def _revision():
    """numgrad's git revision (with "+edits" when the tree has uncommitted changes)."""
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+edits" if dirty else "")


def _floor(r, triad):
    item = 8 if r["dtype"] == "float64" else 4
    return 4 * item * r["n"] / (triad["GBps"] * 1e9)   # read x, y; write dx, dy


def _line(r, triad):
    head = f"{r['workload']} {r['dtype']} {r['label']} {r['system']:24s}"
    if "error" in r:
        return f"{head} {r['error']}"
    floor = (f"{r['time_s'] / _floor(r, triad):6.2f}x floor" if r["workload"] == "W2"
             else " " * 13)
    return (f"{head} {r['time_s'] * 1e3:9.3f} ms {floor} {r['faults']:8.0f} faults/call "
            f"{r['peak_mb']:7.0f} MB peak")


def _find(rows, workload, system, dtype, n):
    for r in rows:
        if (r["workload"], r["system"], r["dtype"], r["n"]) == (workload, system, dtype, n) \
                and "error" not in r:
            return r
    return None


def table(rows):
    out = [("| workload | dtype | size | system | ms/call | x floor | x torch.compile | "
            "faults/call | peak RSS MB |"), "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['workload']} | {r['dtype']} | {r['label']} | {r['system']} |"
        if "error" in r:
            out.append(f"{head} error: {r['error'][:60]} | | | | |")
            continue
        tc = _find(rows, r["workload"], "torch.compile", r["dtype"], r["n"])
        floor = f"{r['time_s'] / r['floor_s']:.2f}" if "floor_s" in r else ""
        vs = f"{r['time_s'] / tc['time_s']:.2f}" if tc else ""
        out.append(f"{head} {r['time_s'] * 1e3:.3f} | {floor} | {vs} | {r['faults']:.0f} | "
                   f"{r['peak_mb']:.0f} |")
    return "\n".join(out)


def goals(rows):
    """The goals 1-4 of docs/performance.md as (goal, measured, met) on this run's rows (None: not run)."""
    out = []
    vg = [r for r in rows if r["workload"] == "W2" and r["system"] == "numgrad jit v&g"
          and 10 ** 5 <= r["n"] <= 10 ** 8]
    if vg:
        worst = max(vg, key=lambda r: r["time_s"] / r["floor_s"] if "error" not in r else 1e9)
        ok = all("error" not in r for r in vg)
        x = worst["time_s"] / worst["floor_s"] if "error" not in worst else float("inf")
        out.append(("1a. W2 jit v&g <= 2.5x floor, 1e5-1e8",
                    f"worst {x:.2f}x ({worst['dtype']} {worst['n']:.0e})", ok and x <= 2.5))
    for dtype in ("float64", "float32"):
        a = _find(rows, "W2", "numgrad jit v&g", dtype, 10 ** 7)
        b = _find(rows, "W2", "torch.compile", dtype, 10 ** 7)
        if a and b:
            s = b["time_s"] / a["time_s"]
            out.append((f"1b. W2 jit v&g >= 2x faster than torch.compile, 1e7 {dtype}",
                        f"{s:.1f}x faster", s >= 2))
    habit = []
    for r in rows:
        if r["workload"] == "W2" and r["system"] == "numgrad jit" and "error" not in r:
            v = _find(rows, "W2", "numgrad jit v&g", r["dtype"], r["n"])
            t = _find(rows, "W2", "torch.compile+backward", r["dtype"], r["n"])
            habit.append((r, v, t))
    mid = [r["time_s"] / v["time_s"] for r, v, _ in habit if v and 10 ** 6 <= r["n"] <= 10 ** 7]
    if mid:
        out.append(("2a. W2 jit + .backward() <= 1.6x jit v&g, 1e6-1e7",
                    f"worst {max(mid):.2f}x", max(mid) <= 1.6))
    vs_t = [r["time_s"] / t["time_s"] for r, _, t in habit if t]
    if vs_t:
        out.append(("2b. W2 jit + .backward() faster than torch.compile(f) + .backward()",
                    f"worst {max(vs_t):.2f}x its time", max(vs_t) < 1))
    for dtype in ("float64", "float32"):
        a = _find(rows, "W2", "numgrad jit", dtype, 10 ** 7)
        b = _find(rows, "W2", "torch.compile+backward", dtype, 10 ** 7)
        if a and b:
            out.append((f"3a. peak RSS, call + .backward() at 1e7 {dtype}",
                        f"{a['peak_mb']:.0f} vs torch.compile {b['peak_mb']:.0f} MB",
                        a["peak_mb"] <= b["peak_mb"]))
    big = [r for r in rows if r["workload"] == "W2" and r["system"].startswith("numgrad")
           and r["n"] == 10 ** 8 and r["dtype"] == "float64"]
    if big:
        ok = [r for r in big if "error" not in r]
        out.append(("3b. W2 1e8 float64 runs (no swap on this box)",
                    ", ".join(f"{r['system']} {r['peak_mb'] / 1024:.1f} GB peak" for r in ok)
                    or "failed", len(ok) == len(big)))
    a = _find(rows, "W3", "numgrad jit v&g", "float32", W3_N)
    b = _find(rows, "W3", "torch.compile", "float32", W3_N)
    if a and b:
        out.append(("4. W3 jit v&g no slower than torch.compile",
                    f"{a['time_s'] * 1e3:.2f} vs {b['time_s'] * 1e3:.2f} ms",
                    a["time_s"] <= b["time_s"]))
    return out


def goals_table(gs):
    out = ["| goal | this run | met |", "|---|---|---|"]
    out += [f"| {g} | {m} | {'yes' if ok else '**no**'} |" for g, m, ok in gs]
    return "\n".join(out)


def plot(rows, triad, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    w2 = [r for r in rows if r["workload"] == "W2"]
    dtypes = sorted({r["dtype"] for r in w2})
    fig, axes = plt.subplots(1, len(dtypes), figsize=(7 * len(dtypes), 5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        mine = [r for r in w2 if r["dtype"] == dtype and "error" not in r]
        for system in dict.fromkeys(r["system"] for r in mine):
            pts = sorted((r["n"], r["time_s"] / r["n"] * 1e9) for r in mine
                         if r["system"] == system)
            ax.plot(*zip(*pts), "o-", label=system)
        floor = sorted({(r["n"], r["floor_s"] / r["n"] * 1e9) for r in mine})
        if floor:
            ax.plot(*zip(*floor), "k--", label=f"bandwidth floor ({triad['GBps']:.1f} GB/s)")
            ax.plot([n for n, _ in floor], [2.5 * t for _, t in floor], "k:", alpha=0.6,
                    label="2.5x floor (goal, 1e5-1e8)")
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
    p.add_argument("--sizes", nargs="+", default=["1e3", "1e4", "1e5", "1e6", "1e7", "1e8"],
                   help="W2 sizes (default 1e3 .. 1e8)")
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS,
                   help="W2 systems (default: all installed)")
    p.add_argument("--no-w3", action="store_true", help="skip the W3 points")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1,
                   help="whole sweeps, interleaved; each point is the median of its rounds")
    p.add_argument("--out-dir", help="where JSON, table and PNG go (default: a new scratch "
                                     "folder)")
    a = p.parse_args(argv)
    out_dir = a.out_dir or tempfile.mkdtemp(prefix="numgrad-sweep-")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    rows, triad = run([int(float(s)) for s in a.sizes], a.dtypes, a.systems, a.threads,
                      a.rounds, not a.no_w3)
    gs = goals(rows)
    machine = {"cpu": cpu_model(), "cpus": os.cpu_count(), "revision": _revision()}
    text = (f"{table(rows)}\n\ntriad {triad['GBps']:.1f} GB/s (rounds: "
            f"{', '.join(f'{g:.1f}' for g in triad['rounds'])}), {a.threads} threads, "
            f"{a.rounds} round(s); {machine['cpu']}, {machine['cpus']} CPUs, numgrad at "
            f"{machine['revision']}\n\n{goals_table(gs)}\n")
    with open(os.path.join(out_dir, "sweep.json"), "w") as fh:
        json.dump({"triad": triad, "rows": rows, "threads": a.threads, "rounds": a.rounds,
                   "machine": machine, "goals": gs}, fh, indent=1)
    with open(os.path.join(out_dir, "sweep.md"), "w") as fh:
        fh.write(text)
    print(text)
    png = plot(rows, triad, os.path.join(out_dir, "sweep.png"))
    print(f"wrote {out_dir} ({png or 'no plot'}) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the benchmark suite: ``python -m numgrad bench [--quick] [--workload W2] [--plot out.png]``
or ``python -m bench.runner --quick``.

For every case of every workload it builds each system's step, times the first call
(compile time), checks the outputs against torch eager (float64: relative error 1e-8,
float32: 1e-4; a mismatch makes the exit code 1), warms up, then takes the median of
interleaved rounds (the systems run in rotating order within each round, so drift
hits all alike).  Peak memory is measured on one more call.  Results go to
``bench/results/bench[_quick].{json,csv,png}``.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import math
import os
import platform
import statistics
import sys
import time

WORKLOADS = {
    "W1": "bench.w1_article",
    "W2": "bench.w2_elementwise",
    "W3": "bench.w3_mlp",
    "W4": "bench.w4_chain",
    "W5": "bench.w5_hvp",
    "W6": "bench.w6_digits",
}
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# ----------------------------------------------------------------------------- progress
class Progress:
    """A plain-text progress bar on stderr (redrawn in place on a terminal)."""

    def __init__(self, total: int, stream=sys.stderr, width: int = 28):
        self.total, self.done, self.stream, self.width = max(total, 1), 0, stream, width
        self.t0 = time.perf_counter()
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.last = ""

    def update(self, advance: int = 0, msg: str = ""):
        self.done = min(self.total, self.done + advance)
        frac = self.done / self.total
        bar = "#" * int(frac * self.width) + "-" * (self.width - int(frac * self.width))
        line = (f"[{bar}] {frac * 100:3.0f}% {time.perf_counter() - self.t0:6.1f}s  "
                f"{msg}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
        elif msg != self.last:
            self.stream.write(line + "\n")
        self.last = msg
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ----------------------------------------------------------------------------- helpers
def _flatten(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flatten(o))
        return res
    return [out]


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip()


def _fmt_time(t):
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def _fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def _fmt_mb(m):
    return "-" if m is None else f"{m:.1f}"


def triad_bandwidth(quick: bool) -> dict:
    """A STREAM-like triad ``a = b + s*c`` in a parallel Numba loop (float64, pinned
    threads); returns the best-of-k bandwidth with STREAM's byte count (3 x 8 bytes per
    element: two reads and a write)."""
    import numba
    import numpy as np

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def triad(a, b, c, s):
        for i in numba.prange(a.size):
            a[i] = b[i] + s * c[i]

    n = 5_000_000 if quick else 20_000_000
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    triad(a, b, c, 3.0)
    best = float("inf")
    for _ in range(5 if quick else 10):
        t0 = time.perf_counter()
        triad(a, b, c, 3.0)
        best = min(best, time.perf_counter() - t0)
    return {"n": n, "best_s": best, "GBps": 3 * 8 * n / best / 1e9,
            "threads": numba.get_num_threads()}


def _versions() -> dict:
    v = {"python": platform.python_version(), "platform": platform.platform()}
    for mod in ("numgrad", "numpy", "numba", "torch", "jax", "jaxlib", "sklearn", "matplotlib"):
        try:
            v[mod] = importlib.import_module(mod).__version__
        except Exception:  # noqa: BLE001
            v[mod] = None
    cpu = cpu_model()
    if cpu:
        v["cpu"] = cpu
    return v


def cpu_model() -> str | None:
    """The CPU's model name (Linux), for a result to say which machine made it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


# ----------------------------------------------------------------------------- one case
def run_case(mod, case, systems, skipped, cfg, progress) -> list[dict]:
    from bench import common
    from numgrad.compiler import plan_cache

    title = f"{case.workload} {case.label}"
    base = dict(workload=case.workload, title=mod.TITLE, case=case.label, size=case.size,
                dtype=case.dtype, headline=case.headline)
    rows = {s: dict(base, system=s, status="ok", error=None, time_s=None, time_min_s=None,
                    time_iqr_s=None, samples=None, inner=None, first_call_s=None,
                    first_call=None,
                    ratio_torch=None, ratio_numgrad_eager=None, rss_peak_mb=None,
                    traced_peak_mb=None, max_rel_err=None, tolerance=None, reference=None)
            for s in systems}
    progress.update(0, f"{title}: preparing data")
    try:
        data = mod.make_data(case)
    except ImportError as e:
        for r in rows.values():
            r.update(status="skipped", error=f"needs {e.name or 'a missing module'} "
                                             f"({_first_line(e)})")
        progress.update(len(systems) + cfg["rounds"] + 1)
        return list(rows.values())
    except Exception as e:  # noqa: BLE001
        for r in rows.values():
            r.update(status="error", error=_first_line(e))
        progress.update(len(systems) + cfg["rounds"] + 1)
        return list(rows.values())

    steps, outputs = {}, {}
    for s in systems:
        progress.update(0, f"{title}: {s} (build + first call)")
        r = rows[s]
        if s in skipped:
            r.update(status="skipped", error=skipped[s])
        elif s not in mod.IMPLS:
            r.update(status="unsupported", error="no implementation for this workload")
        else:
            try:
                before = dict(plan_cache.TOTALS)
                t0 = time.perf_counter()
                step = mod.IMPLS[s](case, data)
                out = step()
                r["first_call_s"] = time.perf_counter() - t0
                if s.startswith("numgrad jit"):
                    r["first_call"] = _first_call_kind(before, plan_cache.TOTALS)
                outputs[s] = [common.to_numpy(o) for o in _flatten(out)]
                steps[s] = step
            except common.Unsupported as e:
                r.update(status="unsupported", error=str(e))
            except ImportError as e:
                r.update(status="skipped", error=f"{e.name or 'module'} not installed")
            except Exception as e:  # noqa: BLE001 - a system that cannot do it says why
                r.update(status="error", error=_first_line(e))
        progress.update(1)

    # ------------------------------------------------------------ check vs reference
    ref = next((s for s in (common.REFERENCE, common.FALLBACK_REFERENCE) if s in outputs), None)
    tol = getattr(mod, "TOLERANCE", common.TOLERANCE).get(case.dtype, 1e-8)
    for s in list(steps):
        r = rows[s]
        r["tolerance"], r["reference"] = tol, ref
        if ref is None:
            r["status"] = "unchecked"
            continue
        a, b = outputs[s], outputs[ref]
        if len(a) != len(b):
            err = float("inf")
        else:
            err = max(common.rel_err(x, y) for x, y in zip(a, b))
        r["max_rel_err"] = err
        if not err <= tol:
            r.update(status="MISMATCH", error=f"max relative error {err:.3g} vs {ref} "
                                              f"(tolerance {tol:g})")
            del steps[s]
    outputs.clear()

    # ------------------------------------------------------------ warm-up + calibration
    order = list(steps)
    inner = {}
    for s in order:
        progress.update(0, f"{title}: warm-up")
        times = []
        for _ in range(cfg["warmup"]):
            t0 = time.perf_counter()
            steps[s]()
            times.append(time.perf_counter() - t0)
        est = max(min(times), 1e-7)
        inner[s] = max(1, min(cfg["max_inner"], math.ceil(cfg["target_s"] / est)))

    # ------------------------------------------------------------ interleaved rounds
    samples = {s: [] for s in order}
    for k in range(cfg["rounds"]):
        progress.update(0, f"{title}: timing round {k + 1}/{cfg['rounds']}")
        rot = order[k % len(order):] + order[:k % len(order)] if order else []
        for s in rot:
            step, n = steps[s], inner[s]
            t0 = time.perf_counter()
            for _ in range(n):
                step()
            samples[s].append((time.perf_counter() - t0) / n)
        progress.update(1)
    for s in order:
        xs = sorted(samples[s])
        q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
        rows[s].update(time_s=statistics.median(xs), time_min_s=xs[0],
                       time_iqr_s=q[2] - q[0], samples=xs, inner=inner[s])

    # ------------------------------------------------------------ memory
    progress.update(0, f"{title}: peak memory")
    for s in order:
        rows[s]["rss_peak_mb"] = common.peak_rss_delta_mb(steps[s])
        if s in common.NUMPY_BASED:
            rows[s]["traced_peak_mb"] = common.traced_peak_mb(steps[s])
    progress.update(1)

    t_torch = rows.get("torch eager", {}).get("time_s")
    t_ng = rows.get("numgrad eager", {}).get("time_s")
    for r in rows.values():
        if r["time_s"] is not None:
            r["ratio_torch"] = r["time_s"] / t_torch if t_torch else None
            r["ratio_numgrad_eager"] = r["time_s"] / t_ng if t_ng else None
    steps.clear()
    return list(rows.values())


# ----------------------------------------------------------------------------- output
COLUMNS = ("workload", "case", "system", "status", "time_s", "time_min_s", "time_iqr_s",
           "inner", "first_call_s", "first_call", "ratio_torch", "ratio_numgrad_eager",
           "rss_peak_mb",
           "traced_peak_mb", "max_rel_err", "tolerance", "reference", "size", "dtype",
           "error")


# How a numgrad jit row's first call was spent, beyond the call itself: compiled new
# kernels (no mark), traced only (a shape-generic plan's kernels reused), or neither.
_FIRST_MARK = {"trace": " (t)", "cached": " (c)"}


def _first_call_kind(before, after):
    if after["compiles"] > before["compiles"]:
        return "compile"
    return "trace" if after["traces"] > before["traces"] else "cached"


def format_table(rows) -> str:
    head = ("workload", "case", "system", "time", "t/torch", "t/ng-eager", "first call",
            "peak MB", "status")
    lines = []
    for r in rows:
        if r["status"] in ("ok", "unchecked"):
            status = r["status"]
            if r["max_rel_err"] is not None:
                status += f" (err {r['max_rel_err']:.0e})"
        else:
            status = f"{r['status']}: {r['error'] or ''}"
            status = status if len(status) <= 110 else status[:107] + "..."
        mem = r["rss_peak_mb"]
        mem_s = _fmt_mb(mem)
        if r["traced_peak_mb"] is not None:
            mem_s += f" ({r['traced_peak_mb']:.1f}t)"
        lines.append((r["workload"], r["case"], r["system"], _fmt_time(r["time_s"]),
                      _fmt_ratio(r["ratio_torch"]), _fmt_ratio(r["ratio_numgrad_eager"]),
                      _fmt_time(r["first_call_s"]) + _FIRST_MARK.get(r.get("first_call"), ""),
                      mem_s, status))
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head) - 1)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)) + "  " + head[-1]]
    out.append("-" * (sum(widths) + 2 * len(widths) + 6))
    prev = None
    for x in lines:
        if prev is not None and (x[0], x[1]) != prev:
            out.append("")
        prev = (x[0], x[1])
        out.append("  ".join(str(v).ljust(w) for v, w in zip(x, widths)) + "  " + x[-1])
    return "\n".join(out)


def write_outputs(rows, meta, out_dir, stem):
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, stem + ".json")
    cpath = os.path.join(out_dir, stem + ".csv")
    with open(jpath + ".tmp", "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1, default=str)
    os.replace(jpath + ".tmp", jpath)
    with open(cpath + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in COLUMNS})
    os.replace(cpath + ".tmp", cpath)
    return jpath, cpath


# ----------------------------------------------------------------------------- main
def main(quick=False, workloads=None, plot=None, out_dir=None, systems=None, threads=None,
         max_size=None, rounds=None, cold_cache=False) -> int:
    """Run the suite; returns the exit code (1 on any gradient mismatch, 2 on bad args).

    quick      small sizes, few repeats, no 1e7 (under 2 minutes on 2 cores)
    workloads  e.g. ["W2"] or ["W1,W3"] (default: all)
    plot       PNG path; None: ``<out_dir>/<stem>.png``; False or "": no plot
    out_dir    where the JSON/CSV (and default PNG) go (default ``bench/results``)
    systems    subset of bench.common.SYSTEMS (default: all; missing ones are skipped)
    threads    threads for every system (default 1; see common.pin_threads)
    max_size   drop cases larger than this (the smallest case of a workload is kept)
    rounds     timing rounds (default 3 quick, 9 full)
    cold_cache fresh, empty numgrad kernel and torch inductor caches, so that
               "first call" is a cold compile (by default their disk caches may hit)
    """
    t_start = time.perf_counter()
    from bench import common
    pinned = common.pin_threads(threads)
    if cold_cache:
        import tempfile
        tmp = tempfile.mkdtemp(prefix="numgrad-bench-cache-")
        os.environ["NUMGRAD_CACHE_DIR"] = os.path.join(tmp, "numgrad")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
    # Numba's internal pedantic checks warn thousands of times while numgrad compiles
    # long chains (W4); they say nothing about the benchmark, so keep the output readable.
    import warnings
    try:
        from numba.core.errors import NumbaWarning
        warnings.filterwarnings("ignore", category=NumbaWarning)
    except ImportError:
        pass

    wanted = []
    for w in workloads or WORKLOADS:
        wanted += [x.strip().upper() for x in str(w).split(",") if x.strip()]
    unknown = [w for w in wanted if w not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}", file=sys.stderr)
        return 2
    systems = list(systems or common.SYSTEMS)
    bad = [s for s in systems if s not in common.SYSTEMS]
    if bad:
        print(f"unknown system(s) {bad}; choose from {list(common.SYSTEMS)}", file=sys.stderr)
        return 2
    skipped = {s: why for s in systems if (why := common.system_available(s))}
    # Two warm-up calls at least: numgrad compiles its prange tier at a plan's second call
    # (the calibration takes the fastest warm-up call).
    cfg = dict(warmup=2 if quick else 3, rounds=rounds or (3 if quick else 9),
               target_s=0.02 if quick else 0.1, max_inner=2000)

    print(f"numgrad bench ({'quick' if quick else 'full'}): threads {pinned['threads']} "
          f"(torch {pinned['torch']}, numba {pinned['numba']}, BLAS {pinned['blas']}, "
          f"XLA_FLAGS {pinned['XLA_FLAGS']})", file=sys.stderr)
    for s, why in skipped.items():
        print(f"  {s}: skipped, {why}", file=sys.stderr)

    mods, plan, rows = {}, [], []
    for w in wanted:
        try:
            mods[w] = importlib.import_module(WORKLOADS[w])
        except Exception as e:  # noqa: BLE001 - report, and go on with the others
            rows += [dict(workload=w, title="", case="(import)", size=None, dtype=None,
                          system=s, status="error", error=_first_line(e), time_s=None,
                          ratio_torch=None, ratio_numgrad_eager=None, first_call_s=None,
                          rss_peak_mb=None, traced_peak_mb=None, max_rel_err=None)
                     for s in systems]
            continue
        cs = mods[w].cases(quick)
        if max_size:
            small = [c for c in cs if c.size <= max_size]
            cs = small or [min(cs, key=lambda c: c.size)]
        plan += [(mods[w], c) for c in cs]

    progress = Progress(sum(len(systems) + cfg["rounds"] + 1 for _ in plan) + 1)
    triad = None
    if "W2" in mods:
        progress.update(0, "STREAM-like triad")
        try:
            triad = triad_bandwidth(quick)
        except Exception as e:  # noqa: BLE001
            triad = {"error": _first_line(e)}
    progress.update(1)
    for mod, case in plan:
        rows += run_case(mod, case, systems, skipped, cfg, progress)
    progress.close()

    elapsed = time.perf_counter() - t_start
    meta = dict(mode="quick" if quick else "full", threads=pinned, versions=_versions(),
                cold_cache=bool(cold_cache),
                numgrad_cache_dir=os.environ.get("NUMGRAD_CACHE_DIR", "(default)"),
                triad=triad, config=cfg, systems=systems, skipped=skipped,
                reference=common.REFERENCE, tolerance=common.TOLERANCE,
                elapsed_s=elapsed, time=time.strftime("%Y-%m-%d %H:%M:%S"))
    out_dir = out_dir or RESULTS_DIR
    stem = "bench_quick" if quick else "bench"
    jpath, cpath = write_outputs(rows, meta, out_dir, stem)

    print(format_table(rows))
    print()
    print(f"time: median of {cfg['rounds']} interleaved rounds; t/torch, t/ng-eager: time "
          f"ratios (<1 is faster); first call: build + first call (for the jit systems: "
          f"trace + compile, or '{_FIRST_MARK['trace']}' traced but reused kernels compiled "
          f"for an earlier size, '{_FIRST_MARK['cached']}' neither); peak MB: RSS "
          f"high-water delta, (t) = tracemalloc peak")
    if triad and "GBps" in triad:
        print(f"triad bandwidth: {triad['GBps']:.1f} GB/s ({triad['threads']} threads)")
    print(f"threads: {pinned}")
    png = None
    if plot is None:
        plot = os.path.join(out_dir, stem + ".png")
    if plot:
        try:
            from bench.plot import plot_results
            png = plot_results(rows, meta, plot)
        except ImportError as e:
            print(f"plot skipped: {e.name or 'matplotlib'} not installed", file=sys.stderr)
    mismatches = [r for r in rows if r["status"] == "MISMATCH"]
    elapsed = time.perf_counter() - t_start
    print(f"wrote {jpath}, {cpath}" + (f", {png}" if png else "") + f" in {elapsed:.1f} s")
    if mismatches:
        for r in mismatches:
            print(f"GRADIENT MISMATCH: {r['workload']} {r['case']} {r['system']}: {r['error']}",
                  file=sys.stderr)
        return 1
    return 0


def add_arguments(p):
    """The runner's options, shared by ``python -m bench.runner`` and
    ``python -m numgrad bench`` (so the two never drift apart)."""
    p.add_argument("--quick", action="store_true",
                   help="small sizes and few repeats (about 2 minutes on 2 cores)")
    p.add_argument("--workload", action="append", metavar="W",
                   help=f"only these workloads, {'/'.join(WORKLOADS)} (repeatable, or a "
                        "comma list; default: all)")
    p.add_argument("--system", action="append", metavar="S",
                   help="only these systems (repeatable; default: every one installed): "
                        "numgrad eager, numgrad jit, numgrad jit v&g, torch eager, "
                        "torch.compile, jax jit, numpy")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads for every system (default 1)")
    p.add_argument("--max-size", type=int, metavar="N",
                   help="drop cases with more elements (the smallest case of a workload "
                        "is kept)")
    p.add_argument("--rounds", type=int, metavar="N",
                   help="interleaved timing rounds (default 3 with --quick, else 9)")
    p.add_argument("--cold-cache", action="store_true",
                   help="empty numgrad and inductor kernel caches, so 'first call' is a "
                        "cold compile")
    p.add_argument("--out-dir", metavar="DIR",
                   help="where the JSON, CSV and PNG go (default: a new scratch folder; "
                        "pass bench/results to update the committed results)")
    p.add_argument("--plot", metavar="PNG", help="PNG path (default: <out-dir>/bench.png)")
    p.add_argument("--no-plot", action="store_true", help="draw no figure")
    return p


def run_args(a) -> int:
    """Run with parsed ``add_arguments`` options."""
    out_dir = a.out_dir
    if out_dir is None:
        import tempfile
        out_dir = tempfile.mkdtemp(prefix="numgrad-bench-")
    return main(quick=a.quick, workloads=a.workload, plot=False if a.no_plot else a.plot,
                out_dir=out_dir, systems=a.system, threads=a.threads, max_size=a.max_size,
                rounds=a.rounds, cold_cache=a.cold_cache)


def _cli(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.runner", description=__doc__.split("\n")[0])
    return run_args(add_arguments(p).parse_args(argv))


if __name__ == "__main__":
    sys.exit(_cli())

"""The results file of ``bench/gpu_check.py --peers``: one JSON (everything measured) and
one Markdown table (µs per fwd+bwd call, one row per workload case, one column per
system and variant; numgrad's call + ``.backward()`` over its ``jit v&g``; the copy-
bandwidth floor of W2; whether the systems' values agree; the first calls, cold and
with numgrad's disk cache warm; which matmul path numgrad took, per workload), both
named after the device and stamped with the revision."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

KERNEL_VARIANT = "numgrad jit v&g, matmul kernel"   # W3 where cuBLAS ran: on the kernel
COLUMNS = ("torch eager", "torch.compile", "jax jit v&g", "numgrad jit v&g",
           KERNEL_VARIANT, "numgrad jit + .backward()", "numgrad eager")
# First calls: the same, and numgrad's jit variants in a process whose disk cache is warm
# (gpu_peers.py --warm-cache names them with WARM).
WARM = " (disk cache warm)"
FIRST_COLUMNS = COLUMNS + tuple(c + WARM for c in COLUMNS[3:6])
OPTIONAL = {KERNEL_VARIANT, KERNEL_VARIANT + WARM}   # shown only where some row has it
WORKLOADS = ("W1", "W2", "W3", "W4")


def revision(root):
    """The checkout's commit, with ``+dirty`` when tracked files differ from it."""
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (rev or "unknown") + ("+dirty" if dirty else "")


def slug(name):
    return re.sub(r"[^A-Za-z0-9]+", "-", name or "unknown-device").strip("-").lower()


def _n_bytes(case):
    # W2 reads x and y and writes both gradients: 4 arrays of n elements at the least.
    m = re.match(r"(\d+)e(\d+) (float\d+)", case)
    if not m:
        return None
    n = int(m.group(1)) * 10 ** int(m.group(2))
    return 4 * n * (8 if m.group(3) == "float64" else 4)


def _agree(values, case):
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return "-"
    ref = vals[0]
    worst = max(abs(v - ref) / max(abs(ref), 1e-30) for v in vals)
    tol = 1e-3 if "float32" in case else 1e-8
    return "yes" if worst <= tol else f"NO (rel {worst:.1e})"


def build(children, meta):
    """``children``: the JSON objects the per-system processes wrote (or error stubs)."""
    rows, errors, bw, devices, versions, matmul = {}, [], {}, {}, {}, {}
    for c in children:
        if c.get("matmul"):   # the workload's first numgrad child (the cold one)
            matmul.setdefault(c["workload"], c["matmul"])
        errors += [f"[{c.get('system')} {c.get('workload')}] {e}" for e in c.get("errors", [])]
        if c.get("device"):
            devices[c["system"]] = c["device"]
        if c.get("versions"):
            versions[c["system"]] = c["versions"]
        if "copy_bytes_per_s" in c:
            bw[c["system"]] = c["copy_bytes_per_s"]
        for r in c.get("rows", []):
            rows.setdefault((c["workload"], r["case"]), {})[r["variant"]] = r
    return {**meta, "devices": devices, "versions": versions, "copy_bytes_per_s": bw,
            "matmul": matmul,
            "rows": [{"workload": w, "case": case, "results": res}
                     for (w, case), res in sorted(rows.items(), key=lambda kv: (
                         WORKLOADS.index(kv[0][0]), kv[0][1]))],
            "errors": errors}


def matmul_line(workload, m):
    """One line saying which matmul path numgrad's plans took in ``workload``'s process."""
    steps = m.get("steps", {})
    if m.get("cublas"):
        path = (f"cuBLAS through nvmath-python {m.get('nvmath')} (cuBLAS "
                f"{m.get('cublas_version')})")
    else:
        path = f"numgrad's matmul kernel (no cuBLAS: {m.get('why_not')})"
    return (f"- numgrad matmul, {workload}: {path}; `NUMGRAD_CUDA_MATMUL={m.get('mode')}`; "
            f"{steps.get('cublas', 0)} cuBLAS and {steps.get('kernel', 0)} kernel steps "
            "rendered")


def markdown(report):
    bw = report["copy_bytes_per_s"]
    columns, first_columns = ([c for c in cols if c not in OPTIONAL
                               or any(c in row["results"] for row in report["rows"])]
                              for cols in (COLUMNS, FIRST_COLUMNS))
    floor_bw = max(bw.values()) if bw else None
    lines = [f"# numgrad on {report['device']}: `gpu_check --peers`", "",
             f"- revision `{report['revision']}`, {report['date']}, "
             + ("DRY RUN (simulator / CPU, tiny shapes: no timing meaning)" if report["dry_run"]
              else "inputs on the device, median of synchronised calls"),
             f"- whole run {report['wall_s']:.0f} s; " + ", ".join(
                 f"{k} copy {v / 1e9:.0f} GB/s" for k, v in sorted(bw.items())) +
             (" (the W2 floor is bytes / the faster copy)" if bw else ""),
             ]
    if report.get("shim"):
        lines.append("- NumPy here has no `row_stack`: the child processes ran with the "
                     "script's `sitecustomize` shim (`numpy.row_stack = numpy.vstack`) so "
                     "that numba-cuda 0.30 can compile kernels")
    for system, v in sorted(report["versions"].items()):
        lines.append(f"- {system}: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    for workload, m in sorted(report.get("matmul", {}).items()):
        lines.append(matmul_line(workload, m))
    lines += ["", "| µs per fwd+bwd call | " + " | ".join(columns) +
              " | numgrad .backward() / v&g | W2 floor | values agree |",
              "|---|" + "---|" * (len(columns) + 3)]
    vg, cb = "numgrad jit v&g", "numgrad jit + .backward()"
    for row in report["rows"]:
        res = row["results"]
        cells = [f"{res[c]['median_us']:,.0f}" if c in res else "—" for c in columns]
        ratio = (f"{res[cb]['median_us'] / res[vg]['median_us']:.2f}"
                 if vg in res and cb in res else "—")
        nb = _n_bytes(row["case"]) if row["workload"] == "W2" else None
        floor = f"{nb / floor_bw * 1e6:,.0f}" if nb and floor_bw else "—"
        agree = _agree([res[c]["value"] for c in first_columns if c in res], row["case"])
        lines.append(f"| {row['workload']} {row['case']} | " + " | ".join(cells) +
                     f" | {ratio} | {floor} | {agree} |")
    first = "First call in a fresh process (s; compile included, except where numgrad's disk "
    lines += ["", first + "cache is warm):", "",
              "| case | " + " | ".join(first_columns) + " |",
              "|---|" + "---|" * len(first_columns)]
    for row in report["rows"]:
        res = row["results"]
        lines.append(f"| {row['workload']} {row['case']} | " + " | ".join(
            f"{res[c]['first_s']:.2f}" if c in res else "—" for c in first_columns) + " |")
    if report["errors"]:
        lines += ["", "Errors and timeouts:", ""] + [f"- {e}" for e in report["errors"]]
    return "\n".join(lines) + "\n"


def write(report, out_dir):
    """``<device>.md`` and ``<device>.json`` under ``out_dir``; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, slug(report["device"]))
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(markdown(report))
    return base + ".md", base + ".json"


def meta(root, device, dry_run, shim, wall_s):
    return {"device": device, "revision": revision(root), "dry_run": dry_run, "shim": shim,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "wall_s": wall_s}

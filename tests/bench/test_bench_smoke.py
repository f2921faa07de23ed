"""Smoke test of the benchmark runner (bench/runner.py): the smallest W1 and W2 cases,
numgrad's systems, NumPy and (if installed) torch eager; the JSON and CSV must be
written.  The runner runs in a subprocess, so its thread pinning (1 thread, CPU
affinity) does not leak into the rest of the test session."""
from __future__ import annotations

import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_runner_writes_json_and_csv(tmp_path):
    systems = ["numgrad eager", "numgrad jit", "numgrad jit v&g", "numpy"]
    if importlib.util.find_spec("torch") is not None:
        systems.append("torch eager")
    cmd = [sys.executable, "-m", "bench.runner", "--quick", "--workload", "W1,W2",
           "--max-size", "1000", "--rounds", "1", "--no-plot", "--out-dir", str(tmp_path)]
    for s in systems:
        cmd += ["--system", s]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    with open(tmp_path / "bench_quick.json") as f:
        doc = json.load(f)
    rows = doc["rows"]
    assert {(r["workload"], r["case"]) for r in rows} == {("W1", "n=10 float32"),
                                                          ("W2", "n=1e3 float64")}
    assert {r["system"] for r in rows} == set(systems)
    for r in rows:
        assert r["status"] == "ok", r
        assert r["time_s"] > 0 and r["first_call_s"] > 0
        assert r["max_rel_err"] <= r["tolerance"]
    assert doc["meta"]["threads"]["threads"] == 1
    # each jit row says how its first call was spent: W1's first trace compiles
    jit = {(r["workload"], r["system"]): r["first_call"] for r in rows
           if r["system"].startswith("numgrad jit")}
    assert set(jit.values()) <= {"compile", "trace", "cached"} and jit
    assert "first call: build + first call (for the jit systems" in proc.stdout

    with open(tmp_path / "bench_quick.csv", newline="") as f:
        csv_rows = list(csv.DictReader(f))
    assert len(csv_rows) == len(rows)
    assert {"workload", "system", "time_s", "ratio_torch", "first_call_s"} <= set(csv_rows[0])
    assert "numgrad eager" in proc.stdout  # the table was printed


def test_sweep_measures_in_fresh_processes_and_checks_goals(tmp_path):
    """bench/sweep.py at one small size, two rounds: each point a median of its rounds, the
    floor from the triad, a table, a plot's worth of JSON and the goals table."""
    cmd = [sys.executable, os.path.join("bench", "sweep.py"), "--sizes", "1e3", "--dtypes",
           "float64", "--systems", "numgrad jit v&g", "numgrad jit", "--no-w3", "--rounds",
           "2", "--threads", "1", "--out-dir", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert [r["system"] for r in doc["rows"]] == ["numgrad jit v&g", "numgrad jit"]
    assert len(doc["triad"]["rounds"]) == 2
    for r in doc["rows"]:
        assert "error" not in r, r
        assert len(r["rounds"]) == 2 and r["time_s"] == statistics.median(r["rounds"])
        assert r["floor_s"] == 4 * 8 * 1000 / (doc["triad"]["GBps"] * 1e9)
        assert r["time_s"] > r["floor_s"] and r["peak_mb"] > 0 and r["faults"] >= 0
    assert "| W2 | float64 | 1e+03 | numgrad jit v&g |" in (tmp_path / "sweep.md").read_text()


def _row(workload, system, dtype, n, t, peak=100.0, floor=None):
    r = dict(workload=workload, system=system, dtype=dtype, n=n, time_s=t, peak_mb=peak,
             faults=0, label="")
    if floor is not None:
        r["floor_s"] = floor
    return r


def test_sweep_goals_are_read_off_the_rows():
    """Each of the sweep's goals is judged from the right rows, with the right inequality."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import sweep
    finally:
        sys.path.pop(0)
    rows = [
        _row("W2", "numgrad jit v&g", "float64", 10 ** 5, 2.4, floor=1.0),
        _row("W2", "numgrad jit v&g", "float64", 10 ** 7, 2.6, floor=1.0),  # worst: 2.6x
        _row("W2", "numgrad jit v&g", "float64", 10 ** 4, 9.0, floor=1.0),  # not judged
        _row("W2", "torch.compile", "float64", 10 ** 7, 5.0, floor=1.0),    # 1.9x: not met
        _row("W2", "numgrad jit", "float64", 10 ** 7, 4.0, peak=500, floor=1.0),  # 1.54x v&g
        _row("W2", "torch.compile+backward", "float64", 10 ** 7, 4.5, peak=600, floor=1.0),
        _row("W3", "numgrad jit v&g", "float32", 256 * 784, 1.0),
        _row("W3", "torch.compile", "float32", 256 * 784, 0.9),
    ]
    got = {g.split(".")[0]: (m, ok) for g, m, ok in sweep.goals(rows)}
    assert got["1a"] == ("worst 2.60x (float64 1e+07)", False)
    assert got["1b"] == ("1.9x faster", False)
    assert got["2a"] == ("worst 1.54x", True)
    assert got["2b"] == ("worst 0.89x its time", True)
    assert got["3a"] == ("500 vs torch.compile 600 MB", True)
    assert got["4"] == ("1000.00 vs 900.00 ms", False)

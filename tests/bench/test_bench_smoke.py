"""Smoke test of the benchmark runner (bench/runner.py): the smallest W1 and W2 cases,
numgrad's systems, NumPy and (if installed) torch eager; the JSON and CSV must be
written.  The runner runs in a subprocess, so its thread pinning (1 thread, CPU
affinity) does not leak into the rest of the test session."""
from __future__ import annotations

import csv
import importlib.util
import json
import os
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

    with open(tmp_path / "bench_quick.csv", newline="") as f:
        csv_rows = list(csv.DictReader(f))
    assert len(csv_rows) == len(rows)
    assert {"workload", "system", "time_s", "ratio_torch", "first_call_s"} <= set(csv_rows[0])
    assert "numgrad eager" in proc.stdout  # the table was printed

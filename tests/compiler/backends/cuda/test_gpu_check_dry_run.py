"""``bench/gpu_check.py --peers`` without a GPU: its dry run (numgrad under Numba's
simulator, torch on the CPU, tiny shapes) goes through the same children, timeouts and
report as on a device, and writes the Markdown and JSON results with the revision, each
system's values agreeing. Also the NumPy-2.5 shim it would hand its children."""
from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

ROOT = str(Path(__file__).resolve().parents[4])
sys.path.insert(0, os.path.abspath(ROOT))

from bench import gpu_check, gpu_report  # noqa: E402


def test_dry_run_writes_the_report(tmp_path):
    pytest.importorskip("torch")
    plan = [("numgrad", "copy", 60), ("numgrad", "W1", 120),
            ("numgrad", "W1", 120, "--warm-cache"),
            ("torch", "W1", 120),
            ("numgrad", "W9", 30)]  # an unknown workload: reported as an error, not fatal
    md, js = gpu_check.peers(dry_run=True, out_dir=str(tmp_path), plan=plan, log=lambda m: None)
    assert os.path.basename(md) == "cuda-simulator.md"
    report = json.load(open(js))
    assert report["dry_run"] is True and report["device"] == "CUDA simulator"
    assert report["revision"] == gpu_report.revision(ROOT) != "unknown"
    (row,) = [r for r in report["rows"] if r["workload"] == "W1"]
    assert {"numgrad jit v&g", "numgrad jit + .backward()", "numgrad eager",
            "torch eager"} <= set(row["results"])
    # The second numgrad child found the first one's kernels in the run's disk cache.
    res = row["results"]
    for variant in ("numgrad jit v&g", "numgrad jit + .backward()"):
        assert res[variant]["disk_hits"] == 0
        assert res[variant + gpu_report.WARM]["disk_hits"] >= 1
    values = [r["value"] for r in row["results"].values()]
    assert max(values) - min(values) <= 1e-9 * abs(values[0])
    assert report["copy_bytes_per_s"]["numgrad"] > 0
    assert any("W9" in e for e in report["errors"])
    text = open(md).read()
    assert "DRY RUN" in text and "| W1 10 float64 |" in text and "| yes |" in text
    assert "numgrad .backward() / v&g" in text and gpu_report.WARM in text


def test_the_shim_gives_a_numpy_without_row_stack_one(monkeypatch):
    import types
    fake = types.ModuleType("numpy")
    fake.vstack = object()
    monkeypatch.setitem(sys.modules, "numpy", fake)
    monkeypatch.setenv("NUMGRAD_GPU_CHECK_SHIM", "")
    exec(compile(gpu_check.SHIM, "sitecustomize.py", "exec"), {})  # noqa: S102
    assert fake.row_stack is fake.vstack
    assert os.environ["NUMGRAD_GPU_CHECK_SHIM"] == "1"


def test_the_shim_reaches_children_only(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(gpu_check.SHIM)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    probe = ("import numpy, os; print(hasattr(numpy, 'row_stack'), "
             "os.environ.get('NUMGRAD_GPU_CHECK_SHIM'))")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, timeout=60).stdout.split()
    assert out == ["True", "1"]
    env_child = gpu_check.child_env(dry_run=True, shim_dir=str(tmp_path))
    assert env_child["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)
    assert env_child["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "NUMGRAD_GPU_CHECK_SHIM" not in os.environ  # this process untouched

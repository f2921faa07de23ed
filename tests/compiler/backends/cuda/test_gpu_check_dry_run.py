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
    matmul = report["matmul"]["W1"]   # numgrad's matmul path in that process, and why
    assert matmul["cublas"] is False and "simulator" in matmul["why_not"]
    assert matmul["mode"] == "auto" and set(matmul["steps"]) == {"cublas", "kernel"}
    text = open(md).read()
    assert "DRY RUN" in text and "| W1 10 float64 |" in text and "| yes |" in text
    assert "numgrad matmul, W1: numgrad's matmul kernel (no cuBLAS: Numba's CUDA simulator" \
        in text and "matmul kernel |" not in text   # no kernel-only column without cuBLAS
    assert "numgrad .backward() / v&g" in text and gpu_report.WARM in text


def test_beside_cublas_w3_is_also_timed_on_the_kernel(monkeypatch):
    """Where the child's plans take cuBLAS (a stand-in library here), W3 gets a variant
    whose plan is rendered with NUMGRAD_CUDA_MATMUL=kernel, the flag set around its
    first call only; both agree."""
    from blas_stand_in import stand_in_nvmath
    from bench import gpu_peers
    from numgrad.compiler.backends.cuda import blas
    monkeypatch.delenv(blas.FLAG, raising=False)
    monkeypatch.setattr(blas, "_simulated", lambda: False)
    blas.reset()
    stand_in_nvmath(monkeypatch)
    try:
        params = gpu_peers.DRY["W3"][0][1]
        variants, _, value, _ = gpu_peers.numgrad_variants(
            "W3", params, gpu_peers._case_data("W3", params))
        assert gpu_peers.KERNEL_VARIANT in variants
        v_cublas = value(variants["numgrad jit v&g"]())
        assert blas.STATS["cublas"] >= 2 and blas.STATS["kernel"] == 0
        v_kernel = value(variants[gpu_peers.KERNEL_VARIANT]())
        assert blas.STATS["kernel"] == blas.STATS["cublas"]   # the same matmuls, the kernel
        assert blas.FLAG not in os.environ
        value(variants[gpu_peers.KERNEL_VARIANT]())   # a later call: its plan, no render
        assert blas.STATS["kernel"] == blas.STATS["cublas"]
        assert abs(v_cublas - v_kernel) <= 1e-5 * abs(v_cublas)
        # The warm-cache child times the first calls of the same jit variants, this one too.
        warm, _, _, jitted = gpu_peers.numgrad_variants(
            "W3", params, gpu_peers._case_data("W3", params), warm=True)
        names = ("numgrad jit v&g", gpu_peers.KERNEL_VARIANT, "numgrad jit + .backward()")
        assert set(warm) == set(jitted) == {v + gpu_report.WARM for v in names}
    finally:
        blas.reset()


def _row(us, first, value=2.0):
    return {"median_us": us, "first_s": first, "value": value}


def test_the_report_finds_numgrads_columns_by_name():
    """With the kernel-matmul column beside cuBLAS and the warm-cache first calls, the
    .backward()/v&g ratio divides those two columns' times (not a neighbour's), and the
    first-call table has each warm variant."""
    vg, cb, kern = "numgrad jit v&g", "numgrad jit + .backward()", gpu_report.KERNEL_VARIANT
    warm = gpu_report.WARM
    results = {"torch eager": _row(400, 3.0), vg: _row(100, 2.0), kern: _row(300, 4.0),
               cb: _row(125, 2.5), vg + warm: _row(100, 0.4), kern + warm: _row(300, 0.6),
               cb + warm: _row(125, 0.5)}
    report = {"device": "GPU", "revision": "abc", "date": "today", "dry_run": False,
              "wall_s": 200.0, "shim": False, "versions": {}, "copy_bytes_per_s": {},
              "errors": [], "rows": [{"workload": "W3", "case": "256 float32",
                                      "results": results}],
              "matmul": {"W3": {"cublas": True, "mode": "auto", "nvmath": "1.0",
                                "cublas_version": "12.9.1",
                                "steps": {"cublas": 8, "kernel": 8}}}}
    lines = gpu_report.markdown(report).splitlines()
    head, first_head = [line for line in lines if line.startswith(("| µs per", "| case |"))]
    cells = [c.strip() for c in head.split("|")[1:-1]]
    (row, first_row) = [line for line in lines if line.startswith("| W3 256 float32 |")]
    values = dict(zip(cells, [c.strip() for c in row.split("|")[1:-1]]))
    assert values[vg] == "100" and values[kern] == "300" and values[cb] == "125"
    assert values["numgrad .backward() / v&g"] == "1.25" and values["values agree"] == "yes"
    firsts = dict(zip([c.strip() for c in first_head.split("|")[1:-1]],
                      [c.strip() for c in first_row.split("|")[1:-1]]))
    assert (firsts[kern], firsts[kern + warm], firsts[cb + warm]) == ("4.00", "0.60", "0.50")
    assert any(line.startswith("- numgrad matmul, W3: cuBLAS through nvmath-python 1.0")
               for line in lines)


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

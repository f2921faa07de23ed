"""Without a GPU and without the simulator: a clear error for "cuda", and the GPU check
script exits cleanly saying there is nothing to check."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


def _run(args, sim):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM=sim)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def _no_gpu():
    proc = _run(["-c", "import numgrad.cuda.device as d; "
                       "print(d.available())"],
                "0")
    return proc.stdout.strip() == "False"


def test_cuda_without_a_device_says_how_to_simulate():
    if not _no_gpu():
        pytest.skip("a CUDA GPU is present")
    code = ("import numgrad as ng\n"
            "for make in (lambda: ng.ones(2, device='cuda'), lambda: ng.ones(2).cuda()):\n"
            "    try:\n"
            "        make()\n"
            "    except RuntimeError as e:\n"
            "        print('ERR', e)\n"
            "print('available', ng.devices.cuda_is_available())\n")
    proc = _run(["-c", code], "0")
    assert proc.returncode == 0, proc.stderr
    errs = [line for line in proc.stdout.splitlines() if line.startswith("ERR")]
    assert len(errs) == 2
    for e in errs:
        assert "no CUDA device" in e and "NUMBA_ENABLE_CUDASIM=1" in e, e
    assert "available False" in proc.stdout


@pytest.mark.parametrize("sim", ["0", "1"])
def test_gpu_check_exits_cleanly_without_a_gpu(sim):
    if sim == "0" and not _no_gpu():
        pytest.skip("a CUDA GPU is present: the check would run for real")
    proc = _run(["bench/gpu_check.py"], sim)
    assert proc.returncode == 0, proc.stderr
    assert "no GPU to check" in proc.stdout and "Nothing was run" in proc.stdout
    assert "Traceback" not in proc.stderr

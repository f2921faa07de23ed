"""Dependencies that cannot break the CUDA backend: the ``cuda`` extra excludes the
NumPy/numba-cuda pair that cannot compile a kernel (numba-cuda 0.30 registers an
overload of ``np.row_stack``, which NumPy 2.5 removed), and an environment that has the
pair anyway gets one clear error from ``device="cuda"`` (the version probe is
monkeypatched here: nothing is installed)."""
from __future__ import annotations

import os
from pathlib import Path
import re

import pytest

import numgrad as ng
import numgrad.cuda.device as cuda_device

ROOT = str(Path(__file__).resolve().parents[4])


def _cuda_extra():
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]["cuda"]


def _upper(reqs, name):
    for r in reqs:
        if re.match(rf"{name}(\[.*\])?[<>=!~ ]", r):
            m = re.search(r"<\s*([\d.]+)", r)
            return tuple(int(p) for p in m.group(1).split(".")) if m else None
    raise AssertionError(f"{name} is not in the cuda extra: {reqs}")


def test_the_cuda_extra_excludes_the_broken_pair():
    reqs = _cuda_extra()
    numpy_max = _upper(reqs, "numpy")
    nc_max = _upper(reqs, "numba-cuda")
    # Either NumPy stays below 2.5, or numba-cuda is bounded to releases past 0.30.
    assert (numpy_max is not None and numpy_max <= (2, 5)) or \
        (nc_max is None and any(re.search(r"numba-cuda.*>=\s*0\.(3[1-9]|[4-9]\d)", r)
                                for r in reqs)), reqs


@pytest.fixture
def _real_device_path(monkeypatch):
    """As on a machine with a GPU: the version check runs (the simulator skips it)."""
    monkeypatch.setattr(cuda_device, "simulated", lambda: False)
    monkeypatch.setattr(cuda_device, "_VERSIONS_OK", False)


def test_the_broken_pair_raises_one_clear_error(monkeypatch, _real_device_path):
    monkeypatch.setattr(cuda_device, "_versions", lambda: ("2.5.2", "0.30.4", False))
    with pytest.raises(RuntimeError) as info:
        ng.zeros(3, device="cuda")
    msg = str(info.value)
    assert "NumPy 2.5.2" in msg and "numba-cuda 0.30.4" in msg
    assert "row_stack" in msg and "numpy<2.5" in msg
    assert info.value.__cause__ is None and info.value.__context__ is None
    with pytest.raises(RuntimeError, match="NumPy 2.5.2"):  # every time, not only once
        ng.tensor([1.0]).to("cuda")


@pytest.mark.parametrize("versions", [("2.4.1", "0.30.4", True),   # NumPy with row_stack
                                      ("2.5.2", "0.31.0", False),  # a later numba-cuda
                                      ("2.5.2", None, False)])     # no numba-cuda metadata
def test_working_pairs_pass_the_check(monkeypatch, _real_device_path, versions):
    monkeypatch.setattr(cuda_device, "_versions", lambda: versions)
    cuda_device.check_versions()


def test_the_probe_reads_this_environment():
    import numpy as np
    numpy_v, nc_v, has_row_stack = cuda_device._versions()
    assert numpy_v == np.__version__ and has_row_stack == hasattr(np, "row_stack")
    assert nc_v is None or re.match(r"\d+\.\d+", nc_v)

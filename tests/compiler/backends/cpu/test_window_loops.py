"""The ops' window loops (``ops.window_kernels``) load through the verified disk cache.

A fresh process compiles the float32 loops into a private cache; a second one loads them
from it (Numba's cache hits, no compile). A pickle planted as one of their Numba index
files is refused (never unpickled: its marker file stays absent) and the loop is compiled
again. Each child runs a conv -> relu -> max pool forward and backward, checked against
torch. Without the slot filled the loops compile in memory.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from cache_attacks import plant_index

from numgrad.compiler.backends.cpu import cache as cpu_cache
from numgrad.ops import window_kernels

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))

SCRIPT = r"""
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numpy as np
    import numgrad as ng
    import numgrad.nn.functional as F
    from numgrad.compiler.backends.disk_cache import compile_counts
    from numgrad.ops import window_kernels
    x = ng.tensor(np.arange(2 * 8 * 8, dtype=np.float32).reshape(2, 1, 8, 8) % 7 - 3,
                  requires_grad=True)
    w = ng.tensor(np.linspace(-1, 1, 18, dtype=np.float32).reshape(2, 1, 3, 3),
                  requires_grad=True)
    F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2).sum().backward()
    hits, compiled = compile_counts(window_kernels.module(np.float32))
print("NUMGRAD_RESULT " + json.dumps({
    "dx": x.grad.numpy().tolist(), "dw": w.grad.numpy().tolist(),
    "hits": hits, "compiled": compiled,
    "warnings": [str(m.message) for m in caught if "numgrad" in str(m.message)]}))
"""


def _torch_grads():
    x = torch.tensor(np.arange(2 * 8 * 8, dtype=np.float32).reshape(2, 1, 8, 8) % 7 - 3,
                     requires_grad=True)
    w = torch.tensor(np.linspace(-1, 1, 18, dtype=np.float32).reshape(2, 1, 3, 3),
                     requires_grad=True)
    torch.nn.functional.max_pool2d(torch.relu(torch.nn.functional.conv2d(x, w, padding=1)),
                                   2).sum().backward()
    return x.grad.numpy(), w.grad.numpy()


def run(cache_dir, marker=None):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(cache_dir),
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("NUMGRAD_RESULT ")]
    res = json.loads(line.split(" ", 1)[1])
    dx, dw = _torch_grads()
    np.testing.assert_allclose(res["dx"], dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res["dw"], dw, rtol=1e-5, atol=1e-5)
    if marker is not None:
        assert not os.path.exists(marker), "planted code ran"
    return res


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    d = tmp_path_factory.mktemp("windows") / "cache"
    first = run(d)
    assert first["hits"] == 0 and first["compiled"] > 0 and not first["warnings"]
    return d


def test_a_second_process_loads_the_loops_from_disk(warm):
    res = run(warm)
    assert res["hits"] >= 3 and res["compiled"] == 0 and not res["warnings"]


def test_a_planted_index_is_refused_and_the_loop_compiled_again(warm, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(warm, d)
    name = cpu_cache.module_name(window_kernels.source("float32"))
    (nbi,) = glob.glob(os.path.join(str(d), "__pycache__", f"{name}._windows_add-*.nbi"))
    marker = tmp_path / "ran"
    plant_index(nbi, marker)
    res = run(d, marker=marker)
    assert res["compiled"] == 1 and res["hits"] >= 2
    assert any(os.path.basename(nbi) in w and "content hash does not match" in w
               for w in res["warnings"])


def test_without_the_slot_the_loops_compile_in_memory(monkeypatch):
    # int32: no signature up front, so only the loop called here compiles
    monkeypatch.setattr(window_kernels, "load_module", None)
    monkeypatch.setattr(window_kernels, "_modules", {})
    monkeypatch.setattr(window_kernels, "_compiled", {})
    x = np.array([[[1, 5, 2, 2], [0, 3, 7, 1]]], np.int32)
    g = np.array([[[10, 20]]], np.int32)
    out = window_kernels.kernel("pool_scatter_tiled", x.dtype)(g, x, 2, 2)
    expected = torch.nn.functional.max_unpool2d(
        torch.tensor(g, dtype=torch.float32)[None],
        torch.nn.functional.max_pool2d(torch.tensor(x, dtype=torch.float32)[None], 2,
                                       return_indices=True)[1], 2)[0]
    np.testing.assert_array_equal(out, expected.numpy())
    assert not hasattr(window_kernels.module(np.int32), "__file__")  # never file-backed

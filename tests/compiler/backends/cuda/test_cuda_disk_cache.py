"""The CUDA backend's kernels in the verified disk cache, across fresh processes.

The module side runs under Numba's simulator (which compiles no machine code): a first
process writes each plan's module, a second loads them (``stats.disk_hits``) and
compiles nothing new, a module swapped on disk never runs (one warning, the right
result, the file rewritten), and ``cache=False`` writes nothing.

numba-cuda's own files (the ``.nbi`` index and the ``.nbc`` data holding a kernel's
cubin, both pickles) are written only when a kernel is compiled for a device. Here a
generated module does at load time what ``@cuda.jit(signature, cache=True)`` does on a
GPU, with numba-cuda's real ``CUDACache`` (so its locator and index/data classes, as
numgrad hooks them) and a stand-in payload instead of a compiled kernel, in processes
with the simulator off (no GPU needed to read and write these files). What a GPU adds,
compiling and launching the cached cubin, is not tested here.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from cache_attacks import forge_manifest, plant_data, plant_index

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))

MODULES = r"""
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numpy as np
    import numgrad as ng

    def cache_probe(x, w):
        return (x * w + ng.tanh(x)).sum()

    f = ng.jit(cache_probe, cache="--no-cache" not in sys.argv)
    a = np.linspace(-1.0, 1.0, 6)
    x = ng.tensor(a, device="cuda", requires_grad=True)
    out = f(x, ng.tensor(a * 2.0, device="cuda"))
    out.backward()
print("NUMGRAD_RESULT " + json.dumps({
    "value": out.item(), "grad": x.grad.cpu().numpy().tolist(),
    "disk_hits": f.stats.disk_hits, "compiles": f.stats.compiles,
    "warnings": [str(w.message) for w in caught if "numgrad" in str(w.message)]}))
"""

# What a kernel declared with its signature and cache=True does when its module loads
# on a GPU: load its overload from numba-cuda's cache, else compile and save it.
NUMBA_FILES = r"""
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from numgrad.compiler.backends.cuda import cache
    SOURCE = '''
from collections import Counter
from types import SimpleNamespace
from numba.cuda.dispatcher import CUDACache
KEY = (("float64[::1]",), "sm_90")
def probe_kernel(a):
    a[0] = 1
_cache = CUDACache(probe_kernel)
LOADED = _cache._cache_file.load(KEY)
if LOADED is None:
    _cache._cache_file.save(KEY, {"cubin": b"stand-in cubin"})
# counted as numba-cuda's dispatcher counts its loads and compiles
probe_kernel.stats = SimpleNamespace(cache_hits=Counter({KEY: 1} if LOADED else {}),
                                     cache_misses=Counter({} if LOADED else {KEY: 1}))
'''
    module, hit = cache.load_module(SOURCE)
print("NUMGRAD_RESULT " + json.dumps({
    "loaded": None if module.LOADED is None else module.LOADED["cubin"].decode(),
    "hit": hit, "cache_path": module._cache.cache_path,
    "warnings": [str(w.message) for w in caught if "numgrad" in str(w.message)]}))
"""


def _run(script, cache_dir, *args, simulator=True, marker=None):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(cache_dir),
               NUMBA_ENABLE_CUDASIM="1" if simulator else "0",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("NUMGRAD_RESULT ")]
    if marker is not None:
        assert not os.path.exists(marker), "planted code ran"
    return json.loads(line.split(" ", 1)[1])


def _modules(d):
    return sorted(glob.glob(os.path.join(str(d), "numgrad_kernels_cuda_*.py")))


def _text(path):
    with open(path) as f:
        return f.read()


def _check_values(res):
    a = np.linspace(-1.0, 1.0, 6)
    assert res["value"] == pytest.approx(float((2 * a * a + np.tanh(a)).sum()), rel=1e-12)
    np.testing.assert_allclose(res["grad"], 2 * a + 1 - np.tanh(a) ** 2, rtol=1e-12)


# ------------------------------------------------------------------ the modules
@pytest.fixture(scope="module")
def warm_modules(tmp_path_factory):
    d = tmp_path_factory.mktemp("cuda-cache") / "cache"
    first = _run(MODULES, d)
    _check_values(first)
    assert first["disk_hits"] == 0 and not first["warnings"]
    return d, first


def test_modules_are_written_then_loaded_by_the_next_process(warm_modules, tmp_path):
    d, _ = warm_modules
    mods = _modules(d)
    assert len(mods) >= 2  # the plan's forward and backward at least
    assert any("cache_probe_fwd" in _text(p) for p in mods)
    assert oct(os.stat(d).st_mode & 0o777) == "0o700"
    assert all(os.stat(p).st_mode & 0o077 == 0 for p in mods)
    copy = tmp_path / "cache"
    shutil.copytree(d, copy)
    second = _run(MODULES, copy)
    _check_values(second)
    assert second["disk_hits"] >= 2 and not second["warnings"]
    assert _modules(copy) == [p.replace(str(d), str(copy)) for p in mods]  # nothing new


def test_a_swapped_module_never_runs(warm_modules, tmp_path):
    d, _ = warm_modules
    copy = tmp_path / "cache"
    shutil.copytree(d, copy)
    marker = tmp_path / "ran"
    (path,) = [p for p in _modules(copy) if "cache_probe_fwd" in _text(p)]
    text = _text(path)
    with open(path, "w") as f:
        f.write(f"open({str(marker)!r}, 'w').close()\n" + text)
    res = _run(MODULES, copy, marker=marker)
    _check_values(res)
    refused = [w for w in res["warnings"] if os.path.basename(path) in w]
    assert len(refused) == 1 and "does not hold the source" in refused[0]
    assert len(res["warnings"]) == 1
    assert _text(path) == text   # rewritten with what numgrad generated


def test_cache_false_writes_nothing(tmp_path):
    d = tmp_path / "never"
    res = _run(MODULES, d, "--no-cache")
    _check_values(res)
    assert res["disk_hits"] == 0 and not res["warnings"]
    assert not d.exists()


# ------------------------------------------------------ numba-cuda's own files
@pytest.fixture(scope="module")
def warm_numba(tmp_path_factory):
    d = tmp_path_factory.mktemp("cuda-numba-files") / "cache"
    first = _run(NUMBA_FILES, d, simulator=False)
    assert first["loaded"] is None and not first["hit"] and not first["warnings"]
    assert first["cache_path"] == str(d / "__pycache__")  # numgrad's verified folder
    return d


def _numba_file(d, ext):
    (p,) = glob.glob(os.path.join(str(d), "__pycache__", f"numgrad_kernels_cuda_*{ext}"))
    return p


def test_numba_cuda_files_are_verified_then_loaded(warm_numba, tmp_path):
    copy = tmp_path / "cache"
    shutil.copytree(warm_numba, copy)
    (man,) = glob.glob(os.path.join(str(copy), "numgrad_kernels_cuda_*.manifest"))
    files = json.loads(_text(man))["files"]
    for ext in (".nbi", ".nbc"):
        p = _numba_file(copy, ext)
        with open(p, "rb") as f:
            assert files[os.path.basename(p)] == hashlib.sha256(f.read()).hexdigest()
        assert os.stat(p).st_mode & 0o077 == 0
    res = _run(NUMBA_FILES, copy, simulator=False)
    assert res["loaded"] == "stand-in cubin" and res["hit"] and not res["warnings"]


def _plant_index(d, marker):
    return plant_index(_numba_file(d, ".nbi"), marker)


def _plant_data(d, marker):
    return plant_data(_numba_file(d, ".nbc"), marker)


@pytest.mark.parametrize("plant", [_plant_index, _plant_data])
def test_a_vouched_for_payload_is_live(warm_numba, tmp_path, plant):
    """Control: with a manifest forged to match, the planted pickle *is* unpickled, so
    the marker really is what numgrad unpickling it would create."""
    copy = tmp_path / "cache"
    shutil.copytree(warm_numba, copy)
    marker = tmp_path / "ran"
    forge_manifest(copy, plant(copy, marker))
    _run(NUMBA_FILES, copy, simulator=False)
    assert marker.exists()


@pytest.mark.parametrize("plant", [_plant_index, _plant_data])
def test_planted_numba_cuda_pickles_are_never_unpickled(warm_numba, tmp_path, plant):
    copy = tmp_path / "cache"
    shutil.copytree(warm_numba, copy)
    marker = tmp_path / "ran"
    path = plant(copy, marker)
    res = _run(NUMBA_FILES, copy, simulator=False, marker=marker)
    assert res["loaded"] is None and not res["hit"]   # a miss: "compiled" and saved again
    refused = [w for w in res["warnings"] if os.path.basename(path) in w]
    assert len(refused) == 1 and "content hash does not match" in refused[0]
    again = _run(NUMBA_FILES, copy, simulator=False, marker=marker)
    assert again["loaded"] == "stand-in cubin" and again["hit"] and not again["warnings"]

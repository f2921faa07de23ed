"""The on-disk kernel cache, across fresh processes.

A tiny script compiles one small elementwise function and prints its stats as JSON. Run
twice with the same ``NUMGRAD_CACHE_DIR``, the second process loads the kernels from disk
(``stats.disk_hits > 0``) and Numba compiles nothing. A corrupted entry (a garbled generated
module, or junk in Numba's ``__pycache__`` index/data files) is rebuilt, never a crash.
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

torch = pytest.importorskip("torch")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))

SCRIPT = r"""
import json, sys
import numpy as np
import numgrad as ng

def disk_cache_probe(x, w):
    return (x * w + x * x).sum()

f = ng.jit(disk_cache_probe)
x = ng.tensor([[0.5, -1.0, 1.5], [2.0, -0.25, 0.75]], requires_grad=True)
w = ng.tensor([[1.0, 0.5, -0.5], [0.25, -1.5, 2.0]])
out = f(x, w)
out.backward()
# numba.np.linalg is imported by Numba's registry refresh and by nothing numgrad runs:
# its absence says the kernels were loaded without that refresh (backends.cpu.numba_load).
refreshed = "numba.np.linalg" in sys.modules
# and the kernels allocate with backends.cpu.arrays_ir, so nothing needs Numba's array helpers
arrayobj = "numba.np.arrayobj" in sys.modules
user_numba = None
if "--then-user-numba" in sys.argv:  # the user's own Numba code still compiles after it
    import numba

    @numba.njit
    def needs_registries(n):
        d = {"top": np.sort(np.arange(n)[::-1] * 1.5)[-1]}  # dicts, arraymath, unicode
        return d["top"] + len(str(n))
    user_numba = needs_registries(4)
misses = 0
for name, mod in list(sys.modules.items()):
    if name.startswith("numgrad_kernels_"):
        for obj in vars(mod).values():
            st = getattr(obj, "stats", None)
            if st is not None and hasattr(st, "cache_misses"):
                misses += sum(st.cache_misses.values())
s = f.stats
print("NUMGRAD_STATS " + json.dumps({
    "traces": s.traces, "compiles": s.compiles, "cache_hits": s.cache_hits,
    "disk_hits": s.disk_hits, "kernels": s.kernels, "numba_misses": misses,
    "value": float(out.detach().numpy()), "grad": x.grad.numpy().tolist(),
    "refreshed": refreshed, "arrayobj": arrayobj, "user_numba": user_numba}))
"""

X = np.array([[0.5, -1.0, 1.5], [2.0, -0.25, 0.75]], dtype=np.float32)
W = np.array([[1.0, 0.5, -0.5], [0.25, -1.5, 2.0]], dtype=np.float32)


def _expected():
    tx = torch.tensor(X, requires_grad=True)
    out = (tx * torch.tensor(W) + tx * tx).sum()
    out.backward()
    return out.item(), tx.grad.numpy()


def run_script(cache_dir, *args, **env_vars):
    env = dict(os.environ, **env_vars)
    env["NUMGRAD_CACHE_DIR"] = str(cache_dir)
    env["NUMGRAD_VECTOR_MATH"] = "0"
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("NUMGRAD_STATS ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    stats = json.loads(lines[0].split(" ", 1)[1])
    value, grad = _expected()
    np.testing.assert_allclose(stats["value"], value, rtol=1e-5)
    np.testing.assert_allclose(np.array(stats["grad"], np.float32), grad, rtol=1e-5)
    return stats


def _modules(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "numgrad_kernels_*.py")))


def _numba_files(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "__pycache__", "numgrad_kernels_*")))


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache dir filled by one fresh process; returns (dir, that run's stats)."""
    d = tmp_path_factory.mktemp("numgrad-disk-cache") / "not" / "yet" / "there"
    first = run_script(d)  # the cache dir is created on demand
    return d, first


def _copy_of(warm, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(warm, d)
    return d


def test_first_process_compiles_and_writes_the_cache(warm_cache):
    d, first = warm_cache
    assert first["disk_hits"] == 0
    assert first["compiles"] == 1 and first["traces"] == 1
    assert first["kernels"] >= 1
    assert first["numba_misses"] >= 1
    assert _modules(d), os.listdir(d)
    assert any(p.endswith(".nbi") for p in _numba_files(d))
    assert any(p.endswith(".nbc") for p in _numba_files(d))


def test_second_process_loads_kernels_from_disk(warm_cache, tmp_path):
    d = _copy_of(warm_cache[0], tmp_path)
    before = {p: os.path.getmtime(p) for p in _modules(d) + _numba_files(d)}
    second = run_script(d)
    assert second["disk_hits"] > 0
    assert second["numba_misses"] == 0  # nothing compiled
    assert second["traces"] == 1 and second["kernels"] == warm_cache[1]["kernels"]
    after = {p: os.path.getmtime(p) for p in _modules(d) + _numba_files(d)}
    assert after == before  # nothing new written
    assert not second["refreshed"]  # loaded without Numba's registry refresh
    assert not second["arrayobj"]  # nor its compiled array helpers' environments


def test_light_load_leaves_numba_able_to_compile_user_code(warm_cache, tmp_path):
    d = _copy_of(warm_cache[0], tmp_path)
    stats = run_script(d, "--then-user-numba")
    assert stats["disk_hits"] > 0 and not stats["refreshed"]
    assert stats["user_numba"] == pytest.approx(3 * 1.5 + 1)


def test_light_load_can_be_turned_off(warm_cache, tmp_path):
    d = _copy_of(warm_cache[0], tmp_path)
    stats = run_script(d, NUMGRAD_LIGHT_LOAD="0")
    assert stats["disk_hits"] > 0 and stats["refreshed"]


@pytest.mark.parametrize("how", ["truncate_module", "garble_module"])
def test_corrupted_generated_module_is_rebuilt(warm_cache, tmp_path, how):
    d = _copy_of(warm_cache[0], tmp_path)
    mods = _modules(d)
    assert mods
    for p in mods:
        with open(p, "r+", encoding="utf-8") as f:
            text = f.read()
            f.seek(0)
            f.truncate()
            if how == "truncate_module":
                f.write(text[: len(text) // 2])
            else:
                f.write("def broken(:\n    ))) this is not python\n")
    stats = run_script(d)  # values checked inside
    assert stats["traces"] == 1
    for p in _modules(d):  # the entry was rewritten with the real source
        with open(p, encoding="utf-8") as f:
            text = f.read()
        assert "@njit" in text and "this is not python" not in text
    # and the rebuilt entry is a cache hit for the next process
    assert run_script(d)["disk_hits"] > 0


@pytest.mark.parametrize("which", [".nbi", ".nbc"])
def test_junk_in_numba_cache_files_is_recovered(warm_cache, tmp_path, which):
    d = _copy_of(warm_cache[0], tmp_path)
    files = [p for p in _numba_files(d) if p.endswith(which)]
    assert files
    for p in files:
        with open(p, "wb") as f:
            f.write(b"\x80\x04 this is junk, not a pickle \x00\xff" * 4)
    stats = run_script(d)  # no crash, correct values (checked inside)
    assert stats["traces"] == 1 and stats["compiles"] == 1

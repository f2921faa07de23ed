"""The disk cache against a hostile neighbour, and caches numgrad cannot write.

One fresh process fills a kernel cache; each test copies it, plants something in it
the way another user could (a bytecode file, a pickle whose unpickling runs code, a
swapped module, a forged manifest in a directory someone else can write), then runs a
jitted call in a fresh process. The planted payload would create a marker file: it must
not exist afterwards, the result must match NumPy, and a warning must say what was
refused. Unwritable, uncreatable and read-only caches must compile and run (as root,
the child runs without CAP_DAC_OVERRIDE, via ``setpriv``, so file modes bind it).
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
from cache_attacks import forge_manifest, plant_index

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))

SCRIPT = r"""
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numpy as np
    import numgrad as ng

    def cache_probe(x, w):
        return (x * w + ng.tanh(x)).sum()

    f = ng.jit(cache_probe, cache="--no-cache" not in sys.argv)
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    out = f(ng.tensor(x), ng.tensor(x * 2.0)).item()
print("NUMGRAD_RESULT " + json.dumps({
    "value": out, "disk_hits": f.stats.disk_hits,
    "warnings": [str(w.message) for w in caught if "numgrad" in str(w.message)]}))
"""


def _expected():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    return float((x * x * 2.0 + np.tanh(x)).sum())


def _unprivileged():
    """The command prefix under which file modes bind the child (root ignores them)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to run the child without root's file-mode override")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]


def run(cache_dir, *args, unprivileged=False, marker=None):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(cache_dir), NUMGRAD_VECTOR_MATH="0",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    prefix = _unprivileged() if unprivileged else []
    proc = subprocess.run(prefix + [sys.executable, "-c", SCRIPT, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("NUMGRAD_RESULT ")]
    assert len(line) == 1, proc.stdout + proc.stderr
    res = json.loads(line[0].split(" ", 1)[1])
    assert res["value"] == pytest.approx(_expected(), rel=1e-12)
    if marker is not None:
        assert not os.path.exists(marker), "planted code ran"
    return res


def _refusals(res, *words):
    return [w for w in res["warnings"] if all(word in w for word in words)]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    d = tmp_path_factory.mktemp("warm") / "cache"
    first = run(d)
    assert first["disk_hits"] == 0 and not first["warnings"]
    assert run(d)["disk_hits"] > 0
    return d


@pytest.fixture
def cache(warm, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(warm, d)
    return d


def _py(d):
    (p,) = glob.glob(os.path.join(str(d), "numgrad_kernels_*.py"))
    return p


def _nbi(d):
    (p,) = glob.glob(os.path.join(str(d), "__pycache__", "numgrad_kernels_*.nbi"))
    return p


def _plant_index(d, marker):
    return plant_index(_nbi(d), marker)


def test_the_payload_is_live_when_its_owner_vouches_for_it(cache, tmp_path):
    """Control: a planted index with a manifest forged in a directory we trust *is*
    unpickled (the trust boundary is the directory's owner), so the tests below would
    see the marker if numgrad unpickled what they plant."""
    marker = tmp_path / "ran"
    forge_manifest(cache, _plant_index(cache, marker))
    run(cache)
    assert marker.exists()


def test_planted_index_pickle_is_never_unpickled(cache, tmp_path):
    marker = tmp_path / "ran"
    path = _plant_index(cache, marker)
    res = run(cache, marker=marker)
    assert _refusals(res, os.path.basename(path), "content hash does not match")
    assert run(cache, marker=marker)["disk_hits"] > 0  # rebuilt and vouched for again


def test_planted_bytecode_is_never_loaded(cache, tmp_path):
    import importlib._bootstrap_external as bx
    marker = tmp_path / "ran"
    py = _py(cache)
    with open(py) as f:
        evil = f"open({str(marker)!r}, 'w').close()\n" + f.read()
    st = os.stat(py)  # a .pyc whose header matches the module, as Python's import checks
    pyc = os.path.join(str(cache), "__pycache__",
                       f"{os.path.basename(py)[:-3]}.{sys.implementation.cache_tag}.pyc")
    with open(pyc, "wb") as f:
        f.write(bx._code_to_timestamp_pyc(compile(evil, py, "exec"), st.st_mtime, st.st_size))
    res = run(cache, marker=marker)
    assert res["disk_hits"] > 0
    assert _refusals(res, os.path.basename(pyc), "never loads")
    assert not os.path.exists(pyc)


def test_swapped_module_source_never_runs(cache, tmp_path):
    marker = tmp_path / "ran"
    py = _py(cache)
    with open(py) as f:
        text = f.read()
    with open(py, "w") as f:
        f.write(f"open({str(marker)!r}, 'w').close()\n" + text)
    res = run(cache, marker=marker)
    assert _refusals(res, os.path.basename(py), "does not hold the source")
    with open(py) as f:
        assert f.read() == text


@pytest.mark.parametrize("how", ["group_writable", "other_owner"])
def test_a_directory_others_can_write_is_refused(cache, tmp_path, how):
    if how == "other_owner" and os.geteuid() != 0:
        pytest.skip("needs root to chown the cache to another user")
    marker = tmp_path / "ran"
    forge_manifest(cache, _plant_index(cache, marker))
    if how == "group_writable":
        os.chmod(cache, 0o770)
        why = "writable by group"
    else:
        for root, dirs, files in os.walk(cache):
            for n in [root] + [os.path.join(root, x) for x in dirs + files]:
                os.chown(n, 12345, 12345)
        why = "owned by uid 12345"
    res = run(cache, marker=marker)
    assert res["disk_hits"] == 0  # compiled in memory
    refused = [w for w in res["warnings"] if "refused its kernel cache" in w]
    assert len(refused) == 1 and why in refused[0] and "\n" not in refused[0]


# ------------------------------------------------- caches numgrad cannot write
def _one_cache_warning(res, words):
    ws = [w for w in res["warnings"] if "kernel cache" in w]
    assert len(ws) == 1 and words in ws[0] and "\n" not in ws[0], res["warnings"]


def _read_only(d):
    for root, dirs, files in os.walk(d):
        for n in files:
            os.chmod(os.path.join(root, n), 0o444)
    for root, dirs, files in os.walk(d, topdown=False):
        os.chmod(root, 0o555)


def test_unwritable_cache_compiles_in_memory(tmp_path):
    d = tmp_path / "cache"
    d.mkdir()
    _read_only(d)
    res = run(d, unprivileged=True)
    _one_cache_warning(res, "not writable")
    assert os.listdir(d) == []


def test_cache_whose_parent_cannot_be_created_compiles_in_memory(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    res = run(blocker / "cache")
    _one_cache_warning(res, "cannot be created")


def test_read_only_prepared_cache_is_used_for_loading(cache):
    """As baked into a container image: filled in advance, then read-only."""
    _read_only(cache)
    before = {p: os.stat(p).st_mtime_ns for p in glob.glob(f"{cache}/**", recursive=True)}
    res = run(cache, unprivileged=True)
    assert res["disk_hits"] > 0 and not res["warnings"]
    assert {p: os.stat(p).st_mtime_ns
            for p in glob.glob(f"{cache}/**", recursive=True)} == before


def test_cache_false_writes_nothing(tmp_path):
    d = tmp_path / "never"
    res = run(d, "--no-cache")
    assert res["disk_hits"] == 0 and not res["warnings"]
    assert not d.exists()

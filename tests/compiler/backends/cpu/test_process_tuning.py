"""Process settings numgrad makes once: glibc's mmap/trim thresholds at the first
compile or large eager array (malloc_tuning), and libgomp's spin count while Numba loads its
threading layer before the first parallel kernel (backends.cpu.omp). Each has an opt-out variable.
Run in fresh processes, since the settings are per process."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))

SCRIPT = r"""
import numpy as np
import numgrad as ng
import numgrad.malloc_tuning as malloc
before = malloc._done
f = ng.jit(lambda x: (x * 2).sum())
f(ng.tensor(np.ones(3)))
print(before, malloc._done, malloc.tune(), malloc.applied)
"""


def _run(env_value, script=SCRIPT):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMGRAD_MALLOC_TUNING", None)
    if env_value is not None:
        env["NUMGRAD_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_first_compile_tunes_once_and_the_env_var_opts_out():
    # Not at import (eager-only users keep their malloc), done by the first compile,
    # and only once.
    glibc = sys.platform.startswith("linux") and _has_mallopt()
    assert _run(None) == ["False", "True", "False", str(glibc)]
    assert _run("0") == ["False", "True", "False", "False"]  # marked done, nothing set


def _has_mallopt():
    import ctypes
    try:
        ctypes.CDLL(None).mallopt
        return True
    except (OSError, AttributeError):
        return False


EAGER_SCRIPT = r"""
import sys
import numpy as np
import numgrad as ng
import numgrad.malloc_tuning as m
small = ng.tensor(np.ones(10, np.float32), requires_grad=True)
(small * 2).sum().backward()
after_small = m._done
big = ng.tensor(np.ones(m.EAGER_LARGE // 4, np.float32))
(big + 1)
print(after_small, m._done, m.applied, "numgrad.compiler" in sys.modules)
"""


def test_first_large_eager_array_tunes_once_unless_opted_out():
    # Eager mode alone: not for small tensors, at the first array of EAGER_LARGE bytes,
    # without importing the compiler.
    glibc = sys.platform.startswith("linux") and _has_mallopt()
    assert _run(None, EAGER_SCRIPT) == ["False", "True", str(glibc), "False"]
    assert _run("0", EAGER_SCRIPT) == ["False", "True", "False", "False"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_tune_reports_whether_mallopt_took_the_settings(monkeypatch):
    import numgrad.malloc_tuning as malloc
    monkeypatch.setattr(malloc, "_done", False)
    monkeypatch.delenv("NUMGRAD_MALLOC_TUNING", raising=False)
    import ctypes
    try:
        ctypes.CDLL(None).mallopt
    except AttributeError:
        pytest.skip("this C library has no mallopt")
    assert malloc.tune() is True
    assert malloc.tune() is False  # once per process
    monkeypatch.setattr(malloc, "_done", False)
    monkeypatch.setenv("NUMGRAD_MALLOC_TUNING", "0")
    assert malloc.tune() is False


OMP_SCRIPT = r"""
import os
import numpy as np
import numgrad as ng
from numgrad.compiler.backends.cpu import omp
f = ng.jit(lambda x: ng.tanh(x).sum(), parallel=True)
x = ng.tensor(np.linspace(-1, 1, 1 << 16))
assert abs(f(x).item() - np.tanh(x.numpy()).sum()) < 1e-9
import numba
print(omp._done, "GOMP_SPINCOUNT" in os.environ, numba.threading_layer())
"""


def _run_omp(**env_extra):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("NUMGRAD_OMP_TUNING", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        env.pop(k, None)
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", OMP_SCRIPT], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_spin_count_is_set_only_while_numba_loads_its_threads():
    done, left_in_env, layer = _run_omp()
    assert done == "True" and left_in_env == "False"  # the user's environment is untouched
    assert layer in ("omp", "tbb", "workqueue")


def test_spin_count_respects_the_users_settings(monkeypatch):
    from numgrad.compiler.backends.cpu import omp
    monkeypatch.setattr(omp, "_done", False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert omp.tune() is False
    monkeypatch.setattr(omp, "_done", False)
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("NUMGRAD_OMP_TUNING", "0")
    assert omp.tune() is False
    assert "GOMP_SPINCOUNT" not in os.environ or os.environ["GOMP_SPINCOUNT"] != omp.SPINCOUNT

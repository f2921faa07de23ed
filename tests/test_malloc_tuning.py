"""Eager mode sets glibc's malloc thresholds (malloc_tuning.tune) at its first array of
EAGER_LARGE bytes, not at import nor for small tensors, without importing the compiler;
NUMGRAD_MALLOC_TUNING=0 leaves malloc alone. Fresh processes: the settings are per process."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))

SCRIPT = r"""
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


def _run(flag):
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("NUMGRAD_MALLOC_TUNING", None)
    if flag is not None:
        env["NUMGRAD_MALLOC_TUNING"] = flag
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def _glibc():
    try:
        ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return sys.platform.startswith("linux")


@pytest.mark.parametrize("flag", [None, "0"])
def test_first_large_eager_array_tunes_once_unless_opted_out(flag):
    applied = _glibc() and flag is None
    assert _run(flag) == ["False", "True", str(applied), "False"]

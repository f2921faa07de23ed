"""Setup for the ``ng.jit`` compiler tests.

* Vector math stays on (the default users get): since ``llvm.vmath`` emits the
  transcendentals as LLVM IR, it compiles as fast as libm calls.
* ``NUMGRAD_CACHE_DIR``: a private temporary kernel cache for the session (unless
  the caller set one), so tests never read or pollute the user's cache.

The cache directory is set at import, before any test module compiles anything.

pytest imports every ``conftest.py`` under the module name ``conftest``, so this file
replaces ``tests/conftest.py`` in ``sys.modules`` for modules collected after it. It
therefore re-exports every public helper of the root conftest (test modules elsewhere
keep doing ``from conftest import assert_close``), plus a few jit-specific helpers.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import tempfile

if not os.environ.get("NUMGRAD_CACHE_DIR"):
    _CACHE = tempfile.mkdtemp(prefix="numgrad-test-cache-")
    os.environ["NUMGRAD_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "conftest.py")
_spec = importlib.util.spec_from_file_location("_numgrad_tests_root_conftest", _ROOT)
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)
for _name in dir(_root):
    if not _name.startswith(("_", "pytest_")):  # hooks stay the root conftest's own
        globals()[_name] = getattr(_root, _name)

import numpy as np  # noqa: E402

import numgrad as ng  # noqa: E402

# The tiny shapes every compiled test shares, so plans and kernels are reused.
SHAPE = (2, 3)
X_DATA = np.array([[0.5, -1.0, 1.5], [2.0, -0.25, 0.75]], dtype=np.float32)
W_DATA = np.array([[1.0, 0.5, -0.5], [0.25, -1.5, 2.0]], dtype=np.float32)


def pair(data=X_DATA, requires_grad=True):
    """The same values as a fresh numgrad leaf and a fresh torch leaf."""
    import torch

    a = np.array(data, copy=True)
    return (ng.tensor(a.copy(), requires_grad=requires_grad),
            torch.tensor(a.copy(), requires_grad=requires_grad))


def first_line(exc) -> str:
    """An error message without PyTorch's trailing hint."""
    return str(exc).split(" Hint:")[0]

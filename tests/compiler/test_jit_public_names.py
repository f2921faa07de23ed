"""``ng.jit``, ``ng.grad`` and ``ng.value_and_grad`` stay the compiler's functions whatever
numgrad submodules get imported (a submodule or package named like a public function
rebinds the attribute on import, and every later ``ng.jit(fn)`` call then fails).

Checked in a fresh process, so the import cannot disturb the other tests.
"""

from __future__ import annotations

import os
import subprocess
import sys


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))

SCRIPT = r"""
import importlib, os, pkgutil, sys
import numgrad as ng
from numgrad import compiler

pkg = os.path.dirname(ng.__file__)
names = {m.name for m in pkgutil.walk_packages([pkg], "numgrad.")}
for root, dirs, files in os.walk(pkg):   # namespace packages too (no __init__.py)
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    rel = os.path.relpath(root, pkg)
    prefix = "numgrad." + ("" if rel == "." else rel.replace(os.sep, ".") + ".")
    names.update(prefix + f[:-3] for f in files if f.endswith(".py") and f != "__init__.py")
    names.update(prefix + d for d in dirs)
bad = []
for name in sorted(names):
    if name.endswith("__main__"):
        continue
    importlib.import_module(name)
    for attr in ("jit", "grad", "value_and_grad"):
        if getattr(ng, attr) is not getattr(compiler, attr):
            bad.append(f"after import {name}: ng.{attr} is {getattr(ng, attr)!r}")
print("\n".join(sorted(set(bad))) or "OK")
"""


def test_no_submodule_shadows_public_names():
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "OK", proc.stdout

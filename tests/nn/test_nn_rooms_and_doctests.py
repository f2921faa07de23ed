"""The training rooms (nn, optim, utils.data) keep their docstring examples true and load
without the compiler (or Numba): eager training never pays for it."""
from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

import numgrad as ng

MODULES = ["numgrad.nn.parameter", "numgrad.nn.module", "numgrad.nn.containers",
           "numgrad.nn.layers", "numgrad.nn.functional", "numgrad.optim.sgd",
           "numgrad.optim.lr_scheduler", "numgrad.utils.data.dataset",
           "numgrad.utils.data.dataloader"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ng": ng},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_training_rooms_do_not_load_the_compiler():
    code = ("import sys\n"
            "import numgrad as ng\n"
            "m = ng.nn.Sequential(ng.nn.Linear(3, 2), ng.nn.ReLU())\n"
            "opt = ng.optim.Adam(m.parameters())\n"
            "dl = ng.utils.data.DataLoader(ng.utils.data.TensorDataset(ng.ones(4, 3)), 2)\n"
            "for (x,) in dl:\n"
            "    opt.zero_grad(); m(x).sum().backward(); opt.step()\n"
            "bad = sorted(k for k in sys.modules\n"
            "             if k == 'numba' or k.startswith('numgrad.compiler'))\n"
            "print('LOADED=' + ','.join(bad))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "LOADED=\n" in proc.stdout, proc.stdout

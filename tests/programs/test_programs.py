"""Every program in this folder, run as written under PyTorch and with only its import lines
rewritten to numgrad (same initial weights, data from NumPy), prints the same text with the
same numbers to a float32 training tolerance."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from program_harness import _NUMBER, numbers, run_both, to_numgrad

pytest.importorskip("torch")
HERE = pathlib.Path(__file__).parent
PROGRAMS = sorted(p for p in HERE.glob("*.py")
                  if p.name != "program_harness.py" and not p.name.startswith("test_"))


def test_import_rewrite_touches_only_import_lines():
    src = ("import torch\nimport torch.nn as nn\nfrom torch import optim\n"
           "import torch.nn.functional as F\nx = torch.ones(2)  # torch stays\n")
    assert to_numgrad(src) == ("import numgrad as torch\nimport numgrad.nn as nn\n"
                               "from numgrad import optim\nimport numgrad.nn.functional as F\n"
                               "x = torch.ones(2)  # torch stays\n")


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_prints_what_torch_prints(path):
    want, got = run_both(path)
    assert _NUMBER.sub("#", got) == _NUMBER.sub("#", want)
    a, b = numbers(want), numbers(got)
    assert len(a) >= 5 and len(a) == len(b)
    np.testing.assert_allclose(b, a, rtol=2e-4, atol=2e-5, err_msg=f"\n{want}\n---\n{got}")

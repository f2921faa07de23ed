"""setups/optimizer_fit.py under PyTorch and renamed to numgrad, once per optimizer and
learning-rate schedule (PROGRAM_SETUP): every printed loss, learning rate and coefficient
agrees, so each optimizer's update rule and each schedule's rates are PyTorch's."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from program_harness import _NUMBER, numbers, run_both

pytest.importorskip("torch")
PROGRAM = pathlib.Path(__file__).parent / "setups" / "optimizer_fit.py"
SETUPS = re.findall(r'^    "([^"]+)": \(', PROGRAM.read_text(), re.M)


def test_every_optimizer_and_schedule_has_a_setup():
    import torch
    optimizers = {n for n in dir(torch.optim) if n[0].isupper() and n != "Optimizer"}
    text = PROGRAM.read_text()
    used = {n for n in optimizers if f"torch.optim.{n}(" in text}
    assert used == {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
                    "NAdam", "RAdam", "LBFGS"}
    assert len(SETUPS) >= 27


@pytest.mark.parametrize("setup", SETUPS)
def test_setup_prints_what_torch_prints(setup):
    want, got = run_both(PROGRAM, {"PROGRAM_SETUP": setup})
    assert _NUMBER.sub("#", got) == _NUMBER.sub("#", want)
    a, b = numbers(want), numbers(got)
    assert len(a) >= 10 and len(a) == len(b)
    np.testing.assert_allclose(b, a, rtol=2e-4, atol=2e-5, err_msg=f"\n{want}\n---\n{got}")

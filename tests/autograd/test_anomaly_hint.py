"""The "modified by an inplace operation" error ends as PyTorch's does: with anomaly
detection off it says to enable it; with it on, it points at the backtrace above instead."""
from __future__ import annotations

import warnings

import pytest
import torch

import numgrad as ng


def _inplace_error(lib, anomaly, jit=False):
    def f(a):
        b = a.sigmoid()
        b.mul_(2)
        return b.sum()
    if jit:
        f = ng.jit(f, backend="numpy")
    a = lib.ones(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.set_detect_anomaly(anomaly):
            # (a jitted call derives its backward when it traces, and may raise there)
            with pytest.raises(RuntimeError) as err:
                f(a).backward()
    return str(err.value)


@pytest.mark.parametrize("anomaly", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_the_hint_follows_anomaly_mode_as_in_pytorch(anomaly, jit):
    want = _inplace_error(torch, anomaly).split("Hint: ")[1].split(" ")[:4]
    got = _inplace_error(ng, anomaly, jit).split("Hint: ")[1].split(" ")[:4]
    assert got == want

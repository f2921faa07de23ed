"""SGD over a parameter listed twice (``[p, p]``) steps as PyTorch's does: the momentum
buffers are read once per step, so the first step starts two buffers and later steps move
the one buffer twice."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import numgrad as ng
from conftest import assert_close

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kw", [dict(momentum=0.9), dict(momentum=0.9, weight_decay=0.1),
                                dict(momentum=0.9, nesterov=True),
                                dict(momentum=0.5, dampening=0.3), dict()],
                         ids=["momentum", "weight_decay", "nesterov", "dampening", "plain"])
def test_sgd_over_a_repeated_parameter_matches_torch(kw):
    start = np.array([1.0, -2.0, 0.5], np.float32)
    pt, pn = torch.nn.Parameter(torch.tensor(start)), ng.nn.Parameter(ng.tensor(start))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn about the duplicate
        ot = torch.optim.SGD([pt, pt], lr=0.05, **kw)
        on = ng.optim.SGD([pn, pn], lr=0.05, **kw)
    for _ in range(3):
        for p, opt in ((pt, ot), (pn, on)):
            opt.zero_grad()
            (p * p * p).sum().backward()
            opt.step()
        assert_close(pn, pt.detach(), rtol=1e-5, atol=1e-5)

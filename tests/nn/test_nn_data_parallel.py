"""nn.DataParallel as PyTorch's without GPUs: the module runs as is, under ``module.``."""
import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

torch = pytest.importorskip("torch")


def test_data_parallel_wraps_like_torchs():
    inner = nn.Linear(3, 2)
    net = nn.DataParallel(inner)
    t = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert list(net.state_dict()) == list(t.state_dict())
    assert repr(net) == repr(t)
    assert [p is q for p, q in zip(net.parameters(), inner.parameters())] == [True, True]
    x = ng.randn(5, 3)
    np.testing.assert_array_equal(net(x).detach().numpy(), inner(x).detach().numpy())
    net(x).sum().backward()
    assert inner.weight.grad is not None

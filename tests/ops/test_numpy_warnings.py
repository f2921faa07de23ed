"""NumPy's floating-point warnings stay inside numgrad: PyTorch computes log(-1), x / 0 and
the gradient of sqrt at 0 silently (NaN and inf), so numgrad does too; the user's own NumPy
code keeps its warnings."""
from __future__ import annotations

import warnings

import numpy as np
import torch

import numgrad as ng


def _runtime_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        fn()
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_nan_and_inf_are_silent_as_in_pytorch():
    def run():
        a = ng.tensor([-1.0, 0.0]).log()
        b = ng.tensor([1.0]) / 0
        c = ng.tensor([1000.0]).exp()
        x = ng.tensor([0.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
        return a, b, c, x.grad
    assert _runtime_warnings(run) == []
    a, b, c, g = run()
    t = torch.tensor([0.0, 4.0], requires_grad=True)
    t.sqrt().sum().backward()
    np.testing.assert_array_equal(g.numpy(), t.grad.numpy())
    np.testing.assert_array_equal(a.numpy(), torch.tensor([-1.0, 0.0]).log().numpy())


def test_the_users_own_numpy_still_warns():
    assert len(_runtime_warnings(lambda: np.log(np.array([-1.0])))) == 1


def test_mean_of_nothing_is_a_silent_nan():
    empty = ng.zeros(0, 3)
    with warnings.catch_warnings(record=True) as caught:
        out = empty.mean(0)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    np.testing.assert_array_equal(out.numpy(), torch.zeros(0, 3).mean(0).numpy())

"""ng.autograd.gradcheck / gradgradcheck: pass on right gradients, fail on wrong ones with
PyTorch's message shape, in slow and fast mode."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from numgrad.autograd.gradcheck import GradcheckError  # noqa: E402


def wrong(m):
    class Wrong(m.autograd.Function):  # d/dx is 2, the backward says 3
        @staticmethod
        def forward(ctx, x, y):
            return x * 2 + y

        @staticmethod
        def backward(ctx, g):
            return g * 3, g
    return Wrong


def inputs(m, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(m.tensor(rng.standard_normal(2), dtype=m.float64, requires_grad=True)
                 for _ in range(2))


def message(m, **kw):
    from torch.autograd.gradcheck import GradcheckError as TorchError
    with pytest.raises(GradcheckError if m is ng else TorchError) as e:
        m.autograd.gradcheck(wrong(m).apply, inputs(m), **kw)
    return str(e.value).replace("torch.", "").replace("numgrad.", "")


def test_error_class_and_slow_mode_message_match_torch():
    assert issubclass(GradcheckError, RuntimeError)
    assert ng.autograd.gradcheck.GradcheckError is GradcheckError
    assert message(ng) == message(torch)


def test_fast_mode_message_shape_matches_torch():
    import re
    got, want = message(ng, fast_mode=True), message(torch, fast_mode=True)
    # The projections are random and the differences rounded apart: compare the words.
    assert re.sub(r"-?\d+\.\d+", "#", got) == re.sub(r"-?\d+\.\d+", "#", want)


def test_raise_exception_false_returns_false():
    assert ng.autograd.gradcheck(wrong(ng).apply, inputs(ng), raise_exception=False) is False


@pytest.mark.parametrize("fast_mode", [False, True])
def test_right_gradients_pass(fast_mode):
    a = ng.tensor(np.random.default_rng(1).standard_normal((2, 3)), requires_grad=True)
    b = ng.tensor(np.random.default_rng(2).standard_normal((4, 3)), requires_grad=True)
    assert ng.autograd.gradcheck(lambda a, b: (a @ b.T).tanh(), (a, b), fast_mode=fast_mode)
    assert ng.autograd.gradgradcheck(lambda a, b: (a @ b.T).tanh(), (a, b),
                                     fast_mode=fast_mode)


def test_gradgradcheck_catches_a_wrong_second_derivative():
    class Sin(ng.autograd.Function):
        # Right values, wrong derivative: cos(x) kept as a NumPy constant, outside the graph.
        @staticmethod
        def forward(ctx, x):
            ctx.cos = np.cos(x.detach().numpy())
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            return g * ng.tensor(ctx.cos)

    x = ng.tensor([0.3, -1.2], dtype=ng.float64, requires_grad=True)
    assert ng.autograd.gradcheck(Sin.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        ng.autograd.gradgradcheck(Sin.apply, (x,))


def test_input_checks_match_torch():
    for m in (ng, torch):
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            m.autograd.gradcheck(m.sin, (m.ones(2, dtype=m.float64),))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            x = m.tensor([0.5, 1.0], requires_grad=True)
            assert m.autograd.gradcheck(m.sin, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)
        assert any("is not a double precision" in str(i.message) for i in w)
    x = ng.tensor([0.5, 1.0], dtype=ng.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to "
                                             "be zero"):
        ng.autograd.gradcheck(lambda x: (x * 2).detach(), (x,))
    assert ng.autograd.gradcheck(ng.sin, x, nondet_tol=1e-12, check_undefined_grad=False)

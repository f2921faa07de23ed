"""Grad mode: no_grad / enable_grad / set_grad_enabled / is_grad_enabled / inference_mode as
context managers and decorators, nesting, exceptions, thread-locality, and what results look
like under no_grad (API.md: requires_grad=False and grad_fn None for every result, views too)."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import numgrad as ng
from conftest import to_numpy

NO_GRAD_FN_MSG = "element 0 of tensors does not require grad and does not have a grad_fn"


def test_default_enabled():
    assert ng.is_grad_enabled() is True


def test_no_grad_context():
    x = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        assert ng.is_grad_enabled() is False
        y = x * 2
    assert ng.is_grad_enabled() is True
    assert y.requires_grad is False and y.grad_fn is None
    assert (x * 2).requires_grad is True


def test_nested_no_grad_enable_grad():
    x = ng.ones(2, requires_grad=True)
    with ng.no_grad():
        with ng.enable_grad():
            assert ng.is_grad_enabled()
            y = x * 2
            with ng.no_grad():
                assert not ng.is_grad_enabled()
                with ng.no_grad():
                    assert not ng.is_grad_enabled()
                assert not ng.is_grad_enabled()
            assert ng.is_grad_enabled()
        assert not ng.is_grad_enabled()
        z = x * 2
    assert y.requires_grad and y.grad_fn is not None
    assert not z.requires_grad


@pytest.mark.parametrize("mode", [True, False])
def test_set_grad_enabled_context(mode):
    x = ng.ones(2, requires_grad=True)
    with ng.set_grad_enabled(mode):
        assert ng.is_grad_enabled() is mode
        y = x * 2
    assert ng.is_grad_enabled() is True
    assert y.requires_grad is mode


def test_set_grad_enabled_inside_no_grad():
    with ng.no_grad():
        with ng.set_grad_enabled(True):
            assert ng.is_grad_enabled()
        assert not ng.is_grad_enabled()


def test_set_grad_enabled_as_function():
    try:
        ng.set_grad_enabled(False)
        assert ng.is_grad_enabled() is False
        assert (ng.ones(1, requires_grad=True) * 2).requires_grad is False
        ng.set_grad_enabled(True)
        assert ng.is_grad_enabled() is True
    finally:
        ng.set_grad_enabled(True)


def test_exception_restores_mode():
    with pytest.raises(ValueError):
        with ng.no_grad():
            raise ValueError("boom")
    assert ng.is_grad_enabled()
    with ng.no_grad():
        with pytest.raises(KeyError):
            with ng.enable_grad():
                raise KeyError("k")
        assert not ng.is_grad_enabled()


def test_no_grad_decorator_with_parentheses():
    x = ng.ones(2, requires_grad=True)

    @ng.no_grad()
    def f(t):
        """doc"""
        assert not ng.is_grad_enabled()
        return t * 2

    y = f(x)
    assert y.requires_grad is False and y.grad_fn is None
    assert f.__name__ == "f" and f.__doc__ == "doc"
    assert ng.is_grad_enabled()
    np.testing.assert_array_equal(to_numpy(y), [2.0, 2.0])


def test_no_grad_decorator_without_parentheses():
    x = ng.ones(2, requires_grad=True)

    @ng.no_grad
    def f(t):
        assert not ng.is_grad_enabled()
        return t * 2

    y = f(x)
    assert y.requires_grad is False and y.grad_fn is None
    assert f.__name__ == "f"
    assert ng.is_grad_enabled()


def test_decorated_function_restores_mode_on_exception():
    @ng.no_grad()
    def f():
        raise RuntimeError("inner")

    with pytest.raises(RuntimeError, match="inner"):
        f()
    assert ng.is_grad_enabled()


def test_enable_grad_decorator():
    x = ng.ones(2, requires_grad=True)

    @ng.enable_grad()
    def f(t):
        return t * 2

    with ng.no_grad():
        y = f(x)
        assert not ng.is_grad_enabled()
    assert y.requires_grad and y.grad_fn is not None


def test_set_grad_enabled_decorator():
    x = ng.ones(2, requires_grad=True)

    @ng.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert ng.is_grad_enabled()
    assert f(x).requires_grad is False
    assert ng.is_grad_enabled()


def test_inference_mode_context_and_decorator():
    x = ng.ones(2, requires_grad=True)
    with ng.inference_mode():
        assert not ng.is_grad_enabled()
        y = x * 2
    assert ng.is_grad_enabled()
    assert y.requires_grad is False and y.grad_fn is None

    @ng.inference_mode()
    def f(t):
        return t.exp()

    assert f(x).requires_grad is False
    assert ng.is_grad_enabled()


def test_decorator_on_method_and_generator_free_reuse():
    class M:
        @ng.no_grad()
        def step(self, t):
            return t * 3

    m = M()
    x = ng.ones(1, requires_grad=True)
    for _ in range(3):  # a decorator instance is reusable
        assert m.step(x).requires_grad is False
        assert ng.is_grad_enabled()


# ----------------------------------------------------------------------------- threads
def test_grad_mode_is_thread_local_thread_disables():
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with ng.no_grad():
            seen["worker"] = ng.is_grad_enabled()
            inside.set()
            release.wait(5)
        seen["worker_after"] = ng.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert inside.wait(5)
        assert ng.is_grad_enabled() is True  # main thread unaffected
        y = ng.ones(1, requires_grad=True) * 2
        assert y.requires_grad
    finally:
        release.set()
        t.join(5)
    assert seen == {"worker": False, "worker_after": True}


def test_grad_mode_is_thread_local_main_disables():
    seen = {}

    def worker():
        seen["enabled"] = ng.is_grad_enabled()
        seen["rg"] = (ng.ones(1, requires_grad=True) * 2).requires_grad

    with ng.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join(5)
        assert not ng.is_grad_enabled()
    assert seen == {"enabled": True, "rg": True}


# ----------------------------------------------------------------------------- results
RESULTS = [
    ("mul", lambda x: x * 2),
    ("add", lambda x: x + x),
    ("exp", lambda x: x.exp()),
    ("sum", lambda x: x.sum()),
    ("matmul", lambda x: x @ x.T),
    ("clone", lambda x: x.clone()),
    ("detach", lambda x: x.detach()),
    ("index_int", lambda x: x[0]),
    ("index_slice", lambda x: x[:, 1:]),
    ("index_advanced", lambda x: x[[0, 1, 0]]),
    ("view", lambda x: x.view(6)),
    ("reshape", lambda x: x.reshape(3, 2)),
    ("flatten", lambda x: x.flatten()),
    ("T", lambda x: x.T),
    ("transpose", lambda x: x.transpose(0, 1)),
    ("permute", lambda x: x.permute(1, 0)),
    ("unsqueeze", lambda x: x.unsqueeze(0)),
    ("squeeze", lambda x: x.unsqueeze(0).squeeze(0)),
    ("expand", lambda x: x.unsqueeze(0).expand(2, 2, 3)),
    ("max_dim", lambda x: x.max(dim=1)[0]),
    ("softmax", lambda x: x.softmax(dim=1)),
    ("cat", lambda x: ng.cat([x, x])),
    ("stack", lambda x: ng.stack([x, x])),
    ("where", lambda x: ng.where(x > 0, x, -x)),
    ("double", lambda x: x.double()),
    ("F.mse_loss", lambda x: ng.nn.functional.mse_loss(x, x * 0)),
]


@pytest.mark.parametrize("fn", [r[1] for r in RESULTS], ids=[r[0] for r in RESULTS])
def test_every_result_under_no_grad_has_no_grad(fn):
    x = ng.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], requires_grad=True)
    with ng.no_grad():
        y = fn(x)
    assert y.requires_grad is False
    assert y.grad_fn is None
    assert y.is_leaf is True


def test_backward_on_no_grad_result_raises():
    x = ng.ones(3, requires_grad=True)
    with ng.no_grad():
        r = (x ** 2).sum()
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_FN_MSG)):
        r.backward()
    assert x.grad is None


def test_result_under_no_grad_does_not_join_later_graph():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with ng.no_grad():
        c = x * 10
    y = (x * c).sum()
    y.backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [10.0, 20.0])


def test_no_grad_does_not_change_leaf_flags():
    x = ng.ones(2, requires_grad=True)
    with ng.no_grad():
        assert x.requires_grad is True and x.is_leaf
        t = ng.ones(2, requires_grad=True)  # factories still honour requires_grad
    assert t.requires_grad is True

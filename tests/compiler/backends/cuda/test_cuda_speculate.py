"""``loss = f(x); loss.backward()`` on CUDA plans (Numba's simulator): once a backward
seeded by ``backward()`` itself has been seen, a call runs the joint program and the
backward hands its gradients over, with no read of the device's cotangent. Every other
backward keeps the ordinary path, as on the CPU (tests/compiler/test_speculate.py):
hooks, a second backward (``retain_graph``), ``create_graph``, an explicit cotangent
(even an explicit 1, which only a read of the device could tell), evaluation calls
without a backward, and the version-counter error. Gradients are compared with the
ordinary backward's bits and with torch's values."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
import speculate_cases as S
from cuda_cases import require_simulator
from numgrad.autograd import engine

W2 = S.W2(12, "cuda")


@pytest.fixture(autouse=True, scope="module")
def _cuda():
    require_simulator()


def test_habit_path_runs_the_joint_program_with_the_ordinary_bits(monkeypatch):
    f, x, y, spec, gx = S.habit_path(W2, monkeypatch)
    # The joint program's seed: one device array for the plan, not one per call.
    seed = spec._seed
    assert type(seed).__name__ == "CudaArray" and seed.shape == ()
    S.accumulates(f, x, y, gx)
    assert spec._seed is seed


def test_explicit_cotangents_take_the_ordinary_backward(monkeypatch):
    f, x, y = S.armed(W2)
    S.explicit_cotangents(W2, f, x, y, (2.5, 1.0), monkeypatch)
    assert not engine.is_implicit_seed(ng.tensor(1.0, dtype=ng.float64, device="cuda")._data)


def test_retain_graph_second_backward_and_create_graph():
    S.retain_graph_and_create_graph(W2, *S.armed(W2))


def test_hooks_inside_and_on_the_output():
    x, y = S.hook_inside(W2)
    # A hook on the returned loss: one that returns nothing leaves the seed as it is (the
    # joint program's gradients serve); one that scales it gets the ordinary backward.
    g = ng.jit(S.w2_ng)
    g(x, y).backward()
    _, gx, _ = W2.torch()
    for scale in (None, 3.0):
        x.grad = None
        loss = g(x, y)
        assert loss.grad_fn._spec is not None
        calls = []

        def hook(t, s=scale, seen=calls):
            seen.append(1)
            return None if s is None else t * s
        loss.register_hook(hook)
        loss.backward()
        assert calls == [1]
        S.close(S.host(x.grad), gx * (scale or 1.0))


def test_calls_without_their_backward_stop_the_speculation():
    S.calls_without_their_backward(W2)


def test_an_input_modified_before_the_backward_still_raises():
    S.input_modified_before_the_backward(W2)


def test_the_engine_seed_is_never_written_by_a_plan():
    """A hook may pass the seed to a jitted function that updates its argument in place:
    the seed tensor is rebound (as eager CUDA in-place ops are), the shared seed keeps 1."""
    inc = ng.jit(lambda t: t.add_(1.0))

    def poke(g):
        with ng.no_grad():
            inc(g)
    x, _ = W2.leaves()
    loss = (x * 2.0).sum()
    loss.register_hook(poke)
    loss.backward()
    np.testing.assert_array_equal(S.host(x.grad), np.full(W2.xs.shape, 4.0))  # as torch: 2 * (1+1)
    # (device seeds of values: a meta tensor's seed, made by another test, holds none)
    for seed in [a for k, a in engine._ONES.items() if len(k) == 3 and hasattr(a, "_ng_host")]:
        assert seed.shape == () or seed.size == 1
        assert float(seed._ng_host().reshape(-1)[0]) == 1.0


def test_grad_takes_a_result_only_when_nothing_else_holds_its_memory():
    """The engine takes a compiled backward's fresh device result as ``.grad`` without a
    copy (``CudaArray._ng_exclusive``), never memory something else can reach."""
    x = ng.tensor(W2.xs, device="cuda")
    fresh = (x * 2.0)._data
    assert fresh._ng_exclusive()
    view = ng.Tensor._make(fresh).reshape(3, 4)._data   # a reshape shares the block
    assert view.block is fresh.block
    assert not fresh._ng_exclusive() and not view._ng_exclusive()
    del view
    assert fresh._ng_exclusive()
    held = fresh.buf  # a device-array view someone keeps
    assert not fresh._ng_exclusive()
    del held
    assert fresh._ng_exclusive()
    src = x * 3.0

    class Exporter:   # another library's device array, wrapped without a copy
        __cuda_array_interface__ = src.__cuda_array_interface__
    imported = ng.as_tensor(Exporter())._data
    assert imported.owner is not None and not imported._ng_exclusive()
    shared = ng.Tensor._make(fresh)
    loss = (shared.requires_grad_() * 1.0).sum()
    loss.backward()
    assert shared.grad._data is not fresh    # a leaf's own payload: copied, never taken

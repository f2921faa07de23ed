"""The record of a compiled call's effects (``autodiff.Effects``) that ``plan.Plan.run``
applies, checked field by field against the trace and, through calls, against eager mode;
and the one engine hook a compiled node implements (``Node._runs_own_hooks``).

``backend="numpy"`` runs the same tracer, autodiff and plan without a Numba compile.
"""
from __future__ import annotations

import dataclasses
import doctest
import inspect

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.autograd import engine
from numgrad.autograd.graph import Node, edge_of
from numgrad.compiler import autodiff, static_args
from numgrad.tensor import Tensor


def _inplace_alias_hook(x, y, w):
    x.add_(1)
    x.mul_(2)                  # two in-place ops on an argument: its version goes up by 2
    w.add_(y)                  # a non-leaf argument modified in place: takes over history
    y.register_hook(lambda g: g * 3)
    return (x * y).sum(), y    # y returned as it is: the caller gets y itself back


_jitted = ng.jit(_inplace_alias_hook, backend="numpy")


def _args(lib):
    x = lib.tensor([1.0, 2.0])
    y = lib.tensor([3.0, 4.0], requires_grad=True)
    w0 = lib.tensor([0.5, -1.0], requires_grad=True)
    return x, y, w0, w0 * 1.0


def test_effects_record_what_the_trace_did():
    x, y, _, w = _args(ng)
    tr = autodiff.trace(_inplace_alias_hook, (x, y, w), {}, True)
    fx = tr.effects
    assert dataclasses.is_dataclass(fx) and not fx.plain
    assert [i for i, _ in fx.writebacks] == [0, 2]
    assert fx.bumps == {0: 2, 2: 1}
    assert fx.aliases == {1: 1}
    assert fx.n_visible == 2
    assert fx.hidden == ((2, 2),)          # w's new value is output 2, after the visible ones
    assert [i for i, _ in fx.leaf_hooks] == [1] and len(fx.leaf_hooks[0][1]) == 1
    assert fx.out_fn_names[0] == "SumBackward0"
    with pytest.raises(dataclasses.FrozenInstanceError):
        fx.n_visible = 3
    # Traced keeps the graph; the effects are not loose fields of it any more.
    assert not {"writebacks", "bumps", "hidden", "aliases", "leaf_hooks"} & {
        f.name for f in dataclasses.fields(tr)}


def test_a_plain_call_has_nothing_to_apply():
    tr = autodiff.trace(lambda a: (a * a).sum(), (ng.ones(3, requires_grad=True),), {}, True)
    fx = tr.effects
    assert fx.plain and fx.n_visible == 1 and not fx.hidden and not fx.bumps


@pytest.mark.parametrize("calls", [1, 2])   # the first call builds the plan, the second reuses it
def test_plan_applies_the_effects_as_eager_mode_does(calls):
    for _ in range(calls):
        x, y, w0, w = _args(ng)
        tx, ty, tw0, tw = _args(torch)
        loss, y_out = _jitted(x, y, w)
        tloss, ty_out = _inplace_alias_hook(tx, ty, tw)
        assert y_out is y and ty_out is ty
        np.testing.assert_allclose(x.numpy(), tx.numpy())
        np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy())
        assert x._version == tx._version == 2
        assert w._version == tw._version == 1
        assert w.grad_fn is not None and w.grad_fn.name() == "CompiledFunctionBackward"
        (loss + w.sum()).backward()
        (tloss + tw.sum()).backward()
        np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())   # the hook's * 3
        np.testing.assert_allclose(w0.grad.numpy(), tw0.grad.numpy())


class _RunsItsOwnHooks(Node):
    """An eager node that says it runs its output's hooks itself (and does not)."""

    def __init__(self, x):
        super().__init__((edge_of(x),))

    def apply(self, grads):
        return [grads[0] * 2]

    def _runs_own_hooks(self, output_nr):
        return True


class _Plain(_RunsItsOwnHooks):
    _runs_own_hooks = Node._runs_own_hooks


@pytest.mark.parametrize("node, expected", [(_RunsItsOwnHooks, 2.0), (_Plain, 200.0)])
def test_the_engine_asks_every_node_whether_it_runs_its_own_hooks(node, expected):
    x = ng.tensor([1.0, 1.0], requires_grad=True)
    t = Tensor._make(x.detach()._data * 2, node(x))
    t.register_hook(lambda g: g * 100)
    t.retain_grad()
    t.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [expected, expected])
    assert (t.grad is None) == (node is _RunsItsOwnHooks)


def test_eager_nodes_leave_hooks_to_the_engine():
    y = ng.ones(2, requires_grad=True) * 2
    assert y.grad_fn._runs_own_hooks(0) is False


def test_engine_names_no_compiled_node():
    src = inspect.getsource(engine)
    assert "CompiledFunction" not in src and "numgrad.compiler" not in src


@pytest.mark.parametrize("module", [autodiff, static_args])
def test_docstring_examples(module):
    result = doctest.testmod(module, extraglobs={"ng": ng}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

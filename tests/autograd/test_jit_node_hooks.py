"""Node hooks that read several gradients at once, under @ng.jit: grad_fn.register_hook
(post-hooks), pre-hooks on nodes of several gradients, and module full backward hooks of
several tensor inputs and outputs. Each runs in the plan at run time; its calls (order,
arguments, replacements) and the gradients are compared with torch's eager ones, on the
tracing call and on the cached plan."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402
from test_graph_hooks import same_log  # noqa: E402

X = [0.5, -1.0, 2.0]
W = [1.0, 2.0, 3.0]


def node_hooks_program(m, log):
    def f(x, w):
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)) or (gi[0] * 3, gi[1]))
        z = m.stack([y[:2].sum(), y[1:].sum()])
        c = z.exp() * 2
        c.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
        c.grad_fn.register_hook(lambda gi, go: log.append(("cpost", gi, go)))
        return c.sum(), y
    return f


def run_node_hooks(m, jit=None):
    log = []
    f = node_hooks_program(m, log) if jit is None else jit
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    o, y = f(x, w)
    (o + (y * y).sum()).backward()
    return log, x.grad, w.grad


JIT_LOG = []
JIT_NODE_HOOKS = ng.jit(node_hooks_program(ng, JIT_LOG))


def test_post_hooks_and_pre_hooks_inside_jit_match_torch():
    want = run_node_hooks(torch)
    eager = run_node_hooks(ng)
    assert same_log(eager[0], want[0])
    for _ in range(2):  # tracing, then the cached plan
        JIT_LOG.clear()
        _, gx, gw = run_node_hooks(ng, JIT_NODE_HOOKS)
        assert [e[0] for e in JIT_LOG] == ["pre", "cpost", "post"]
        assert same_log(JIT_LOG, want[0])
        assert_close(gx, want[1])
        assert_close(gw, want[2])


def two_module(m, log):
    class Two(m.nn.Module):
        def forward(self, a, k, b):
            return a * k + b, a - b

    t = Two()
    t.register_full_backward_pre_hook(
        lambda mod, go: log.append(("pre", go)) or (go[0] * 10, go[1]))
    t.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", gi, go)))
    t.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2, None, gi[2]))
    return t


MOD_LOG = []
TWO = two_module(ng, MOD_LOG)


@ng.jit
def jit_two(a, b):
    o = TWO(a, 2.0, b)
    return o[0].sum() + (o[1] * 3).sum()


def test_module_backward_hooks_of_two_inputs_and_outputs_inside_jit_match_torch():
    tlog = []
    tt = two_module(torch, tlog)
    ta, tb = (torch.tensor(X, requires_grad=True) for _ in range(2))
    o = tt(ta, 2.0, tb)
    (o[0].sum() + (o[1] * 3).sum()).backward()
    for _ in range(2):
        MOD_LOG.clear()
        a, b = (ng.tensor(X, requires_grad=True) for _ in range(2))
        jit_two(a, b).backward()
        assert [e[0] for e in MOD_LOG] == ["pre", "hook"]
        assert same_log(MOD_LOG, tlog)
        assert_close(a.grad, ta.grad)
        assert_close(b.grad, tb.grad)


@ng.jit
def jit_bad_post_hook(x, w):
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    return y.sum()


def test_a_post_hook_returning_the_wrong_count_inside_jit_raises_as_eagerly():
    def message(f, m):
        x, w = (m.tensor(X, requires_grad=True) for _ in range(2))
        with pytest.raises(RuntimeError) as info:
            f(x, w).backward()
        return str(info.value)

    def eager(x, w):
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (gi[0],))
        return y.sum()

    want = message(eager, torch)
    assert "incorrect number of values (got 1, but expected 2)" in want
    assert message(eager, ng).split("'")[0::2] == want.split("'")[0::2]
    assert message(jit_bad_post_hook, ng).split("'")[0::2] == want.split("'")[0::2]


def accumulator_hooks_program(m, log):
    def f(x):
        y = x * 3
        acc = y.grad_fn.next_functions[0][0]  # the argument's AccumulateGrad
        acc.register_prehook(lambda go: log.append(("accpre", go)) or (go[0] * 2,))
        acc.register_hook(lambda gi, go: log.append(("accpost", gi, go)))
        return y.sum()
    return f


ACC_LOG = []
JIT_ACC = ng.jit(accumulator_hooks_program(ng, ACC_LOG))


def assert_jit_matches_torch(program, jitted, log):
    """``program`` run by torch eagerly and ``jitted`` (tracing, then the cached plan) log
    the same hook calls and give the same gradient; returns torch's log."""
    tlog = []
    tx = torch.tensor(X, requires_grad=True)
    program(torch, tlog)(tx).backward()
    for _ in range(2):
        log.clear()
        x = ng.tensor(X, requires_grad=True)
        jitted(x).backward()
        assert same_log(log, tlog)
        assert_close(x.grad, tx.grad)
    return tlog


def test_hooks_on_an_arguments_accumulator_inside_jit_match_torch():
    tlog = assert_jit_matches_torch(accumulator_hooks_program, JIT_ACC, ACC_LOG)
    assert [e[0] for e in tlog] == ["accpre", "accpost"]


def two_outputs_program(m, log):
    class SinCos(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            x, = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    def f(x):
        s, c = SinCos.apply(x)
        s.grad_fn.register_prehook(lambda go: log.append(("pre", go)) or (go[0], go[1] * 5))
        return (s * 2).sum() + (c * c).sum()
    return f


TWO_LOG = []
JIT_TWO_OUTPUTS = ng.jit(two_outputs_program(ng, TWO_LOG))


def test_pre_hook_on_a_node_of_two_gradients_inside_jit_matches_torch():
    tlog = assert_jit_matches_torch(two_outputs_program, JIT_TWO_OUTPUTS, TWO_LOG)
    assert len(tlog) == 1 and len(tlog[0][1]) == 2

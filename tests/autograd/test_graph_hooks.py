"""Every hook beyond Tensor.register_hook: Node.register_prehook / register_hook,
Tensor.register_post_accumulate_grad_hook, saved_tensors_hooks / save_on_cpu, and
Module.register_full_backward_hook / _pre_hook. The call sequences (order, arguments,
replacements) are compared with torch's, eagerly and under @ng.jit."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close, to_numpy  # noqa: E402

X = [0.5, -1.0, 2.0]


def same_log(log, tlog):
    """Two call logs agree: the same calls, arguments of the same structure (None kept),
    tensors equal to float32 rounding (NumPy's and torch's exp may differ in the last bit)."""
    def same(a, b):
        if isinstance(a, tuple):
            return isinstance(b, tuple) and len(a) == len(b) and all(map(same, a, b))
        if a is None or isinstance(a, str):
            return a == b
        return b is not None and np.allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)
    return len(log) == len(tlog) and all(same(a, b) for a, b in zip(log, tlog))


def node_hook_run(m):
    log = []
    x = m.tensor(X, requires_grad=True)
    y = x * 2
    z = y.exp()
    z.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    z.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
    z.register_hook(lambda g: log.append(("tensor", g)))
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: log.append(("ypost", gi, go)))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("postacc", t.grad.clone())))
    x.register_hook(lambda g: log.append(("xhook", g)))
    h = z.grad_fn.register_prehook(lambda go: log.append(("removed",)))
    h.remove()
    z.sum().backward()
    return log, x.grad


def test_node_hooks_and_post_accumulate_hooks_match_torch():
    got, tgot = node_hook_run(ng), node_hook_run(torch)
    assert same_log(got[0], tgot[0])
    assert [e[0] for e in got[0]] == ["tensor", "pre", "post", "ypost", "xhook", "postacc"]
    assert_close(got[1], tgot[1])


def test_node_post_hook_replaces_grad_inputs_and_acc_node_hooks():
    for m in (ng, torch):
        x = m.tensor(X, requires_grad=True)
        y = x * 3
        y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,) + tuple(gi[1:]))
        acc = y.grad_fn.next_functions[0][0]
        log = []
        acc.register_prehook(lambda go: log.append(("accpre", go)))
        y.sum().backward()
        if m is ng:
            got = (x.grad, log)
        else:
            assert_close(got[0], x.grad)
            assert same_log(got[1], log)


def test_post_accumulate_hook_errors_and_autograd_grad_skips_it():
    def errors(m):
        out = []
        for make in (lambda: m.tensor(X, requires_grad=True) * 2, lambda: m.tensor(X)):
            try:
                make().register_post_accumulate_grad_hook(lambda t: None)
            except RuntimeError as e:
                out.append(str(e))
        return out
    assert errors(ng) == errors(torch) and len(errors(ng)) == 2
    x = ng.tensor(X, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(seen.append)
    ng.autograd.grad((x * x).sum(), x)
    assert seen == []  # nothing was accumulated: PyTorch does not call it either


def saved_hooks_run(m):
    log = []

    def pack(t):
        log.append(("pack", t))
        return t * 1  # a copy: what is kept is the hook's

    def unpack(t):
        log.append(("unpack", t))
        return t

    x = m.tensor(X, requires_grad=True)
    with m.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).exp()
    y.sum().backward()
    return log, x.grad


def test_saved_tensors_hooks_match_torch():
    got, want = saved_hooks_run(ng), saved_hooks_run(torch)
    assert same_log(got[0], want[0])
    assert_close(got[1], want[1])


def test_saved_tensors_hooks_skip_the_version_check_and_save_on_cpu():
    for m in (ng, torch):
        x = m.tensor(X, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            a = x * 1
            y = a * a
        a.add_(1)  # the hooks kept their own copy: no error, the old values are used
        y.sum().backward()
        with m.autograd.graph.save_on_cpu():
            z = (x * x).sin().sum()
        z.backward()
        if m is ng:
            got = x.grad
        else:
            assert_close(got, x.grad)


def test_unpack_hook_must_return_a_tensor():
    x = ng.tensor(X, requires_grad=True)
    with ng.autograd.graph.saved_tensors_hooks(lambda t: 0, lambda p: p):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.backward()


def module_hooks_run(m):
    log = []

    class Two(m.nn.Module):
        def forward(self, a, k, b):
            return a * k + b, a - b

    t = Two()
    t.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", go)) or (go[0] * 10,
                                                                                 go[1]))
    t.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", gi, go)))
    t.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2, None, gi[2]))
    a = m.tensor(X, requires_grad=True)
    b = m.tensor(X, requires_grad=True)
    o = t(a, 2.0, b)
    (o[0].sum() + (o[1] * 3).sum()).backward()
    return log, a.grad, b.grad, type(o[0].grad_fn).__name__


def test_module_full_backward_hooks_match_torch():
    got, want = module_hooks_run(ng), module_hooks_run(torch)
    assert same_log(got[0], want[0])
    assert got[3] == want[3] == "BackwardHookFunctionBackward"
    assert_close(got[1], want[1])
    assert_close(got[2], want[2])


def test_module_hook_without_input_grad_fires_at_the_outputs():
    for m in (ng, torch):
        lin = m.nn.Linear(3, 2)
        log = []
        lin.register_full_backward_hook(lambda mod, gi, go: log.append((gi, go[0].shape)))
        with pytest.warns(UserWarning, match="Full backward hook is firing"):
            lin(m.ones(1, 3)).sum().backward()
        assert log == [((None,), tuple(log[0][1]))]


# ------------------------------------------------------------------ under @ng.jit
JIT_LOG = []
LIN = ng.nn.Linear(3, 2)
LIN.register_full_backward_pre_hook(lambda m, go: JIT_LOG.append(("pre", go)))
LIN.register_full_backward_hook(lambda m, gi, go: JIT_LOG.append(("hook", gi, go)))


@ng.jit
def jit_hooked(x):
    y = x.exp()
    y.grad_fn.register_prehook(lambda go: JIT_LOG.append(("node", go)) or (go[0] * 2,))
    return LIN(y).tanh().sum()


def test_hooks_inside_jit_are_called_at_run_time_with_real_gradients():
    xs = np.array([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5]], np.float32)
    tlin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(LIN.weight.detach().numpy()))
        tlin.bias.copy_(torch.tensor(LIN.bias.detach().numpy()))
    tlog = []
    tlin.register_full_backward_pre_hook(lambda m, go: tlog.append(("pre", go)))
    tlin.register_full_backward_hook(lambda m, gi, go: tlog.append(("hook", gi, go)))
    tx = torch.tensor(xs, requires_grad=True)
    ty = tx.exp()
    ty.grad_fn.register_prehook(lambda go: tlog.append(("node", go)) or (go[0] * 2,))
    tlin(ty).tanh().sum().backward()
    for _ in range(2):  # tracing, then the cached plan
        JIT_LOG.clear()
        x = ng.tensor(xs, requires_grad=True)
        jit_hooked(x).backward()
        assert same_log(JIT_LOG, tlog)
        assert_close(x.grad, tx.grad)


@ng.jit
def jit_square_sum(x):
    return (x * x).sum()


def test_post_accumulate_hook_runs_after_a_compiled_backward():
    x = ng.tensor(X, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    jit_square_sum(x).backward()
    np.testing.assert_allclose(seen, [[2 * v for v in X]])


@ng.jit
def jit_post_accumulate(x):
    x.register_post_accumulate_grad_hook(lambda t: None)
    return x.sum()


def test_post_accumulate_hook_inside_jit_is_refused_clearly():
    with pytest.raises(ng.errors.TracingError, match="the plan does not accumulate"):
        jit_post_accumulate(ng.tensor(X, requires_grad=True))

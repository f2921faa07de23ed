"""autograd.node_hooks: running the hooks registered on a backward node.

Room: autograd. ``Node.register_prehook`` hooks see a node's incoming gradients before it
runs (after the tensor hooks, as in PyTorch) and may replace them; ``Node.register_hook``
hooks see ``(grad_inputs, grad_outputs)`` after it ran and may replace ``grad_inputs``;
``Tensor.register_post_accumulate_grad_hook`` hooks see the leaf once its ``.grad`` holds
the sum. Under ``@ng.jit`` node pre- and post-hooks become ``hook`` equations of the plan
(``autograd.traced_hooks``), called at run time with the real gradients, as a tensor hook is.
"""
from __future__ import annotations

import numgrad.tracing_hook as tracing_hook
from numgrad.autograd.graph import NODE_POST, NODE_PRE, POST_ACCUMULATE
from numgrad.autograd.traced_hooks import annotate, is_traced
from numgrad.errors import TracingError
from numgrad.tensor import Tensor


def _checked(hook, result, n):
    name = getattr(hook, "__name__", "hook")
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"hook '{name}' must return a tuple of Tensors or None, got "
                        f"{type(result).__name__}")
    if len(result) != n:
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(result)}, but expected {n})")
    return list(result)


def _name(hooks):
    return getattr(next(iter(hooks.values())), "__name__", "hook")


def _call_pre(hooks, buf):
    for hook in list(hooks.values()):
        r = hook(tuple(buf))
        if r is not None:
            buf = _checked(hook, r, len(buf))
    return buf


def pre(node, buf):
    """``buf`` (the node's incoming gradients) after its pre-hooks."""
    hooks = node._pre_hooks.get(NODE_PRE)
    if not hooks:
        return buf
    if not is_traced(buf):
        return _call_pre(hooks, buf)
    # Inside @ng.jit: called by the plan at run time, with the real gradients.
    return annotate(buf, range(len(buf)), lambda gs: _call_pre(hooks, gs), _name(hooks))


def post(node, grad_inputs, grad_outputs):
    """``grad_inputs`` (what the node produced) after its post-hooks."""
    hooks = node._pre_hooks.get(NODE_POST)
    if not hooks:
        return grad_inputs
    if is_traced(grad_inputs) or is_traced(grad_outputs):
        n = len(grad_inputs)
        return annotate(list(grad_inputs) + list(grad_outputs), range(n),
                        lambda gs: _call_post(hooks, gs[:n], gs[n:]), _name(hooks))[:n]
    return _call_post(hooks, grad_inputs, grad_outputs)


def _call_post(hooks, grad_inputs, grad_outputs):
    for hook in list(hooks.values()):
        r = hook(tuple(grad_inputs), tuple(grad_outputs))
        if r is not None:
            grad_inputs = _checked(hook, r, len(grad_inputs))
    return grad_inputs


def after_accumulate(node, g, accumulated):
    """An AccumulateGrad's post-hooks (``grad_inputs`` is empty, as in PyTorch), then the
    leaf's post-accumulate-grad hooks when ``.grad`` was written."""
    post_hooks = node._pre_hooks.get(NODE_POST)
    if post_hooks and is_traced([g]):  # a leaf of the trace: called by the plan at run time
        annotate([g], (), lambda gs: _call_post(post_hooks, [], gs) + [None],
                 _name(post_hooks))
    elif post_hooks:
        _call_post(post_hooks, [], [g])
    hooks = node._pre_hooks.get(POST_ACCUMULATE)
    if hooks and accumulated:
        for hook in list(hooks.values()):
            hook(node.variable)


def register_post_accumulate_grad_hook(t: Tensor, hook):
    """``t.register_post_accumulate_grad_hook(hook)``: ``hook(t)`` runs after a backward
    has accumulated into ``t.grad``."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not tracing_hook.concrete(t._data):
        raise TracingError("register_post_accumulate_grad_hook inside @ng.jit: the plan does not "
                           "accumulate into .grad. Register it on the tensor outside the jitted "
                           "function (the hook then runs after every compiled backward)")
    from numgrad.autograd.graph import accumulator_of
    acc = accumulator_of(t)
    t._accumulator = lambda: acc  # held strongly now: the hooks live as long as the tensor
    from numgrad.autograd.graph import _add_hook
    return _add_hook(acc._node_hooks(POST_ACCUMULATE), hook)

"""autograd.node_hooks: running the hooks registered on a backward node.

Room: autograd. ``Node.register_prehook`` hooks see a node's incoming gradients before it
runs (after the tensor hooks, as in PyTorch) and may replace them; ``Node.register_hook``
hooks see ``(grad_inputs, grad_outputs)`` after it ran and may replace ``grad_inputs``;
``Tensor.register_post_accumulate_grad_hook`` hooks see the leaf once its ``.grad`` holds
the sum. Under ``@ng.jit`` a pre-hook on one gradient becomes a ``hook`` equation of the
plan, called at run time with the real gradient, as a tensor hook is.
"""
from __future__ import annotations

import numgrad.tracing_hook as tracing_hook
from numgrad.autograd.graph import NODE_POST, NODE_PRE, POST_ACCUMULATE
from numgrad.errors import TracingError
from numgrad.tensor import Tensor


def _traced(gs):
    return any(g is not None and not tracing_hook.concrete(g._data) for g in gs)


def _checked(hook, result, n):
    name = getattr(hook, "__name__", "hook")
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"hook '{name}' must return a tuple of Tensors or None, got "
                        f"{type(result).__name__}")
    if len(result) != n:
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(result)}, but expected {n})")
    return list(result)


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
    if not _traced(buf):
        return _call_pre(hooks, buf)
    live = [k for k, g in enumerate(buf) if g is not None]
    if len(live) != 1:
        raise TracingError(f"a pre-hook on {node.name()} inside @ng.jit sees {len(live)} "
                           "gradients at once; the plan calls hooks one gradient at a time. "
                           "Register it outside the jitted function")
    k = live[0]
    n = len(buf)

    def one(g):  # at run time: the user's hooks on the real gradient, in its slot
        gs = [None] * n
        gs[k] = g
        return _call_pre(hooks, gs)[k]

    one.__name__ = getattr(next(iter(hooks.values())), "__name__", "hook")
    g = buf[k]
    out = g._data._ng_interpreter.wrap_hook(g, one)(g)
    buf = list(buf)
    buf[k] = out
    return buf


def post(node, grad_inputs, grad_outputs):
    """``grad_inputs`` (what the node produced) after its post-hooks."""
    hooks = node._pre_hooks.get(NODE_POST)
    if not hooks:
        return grad_inputs
    if _traced(grad_inputs) or _traced(grad_outputs):
        raise TracingError(f"a hook registered with {node.name()}.register_hook inside @ng.jit: "
                           "it needs the gradients of the inputs and outputs together, which the "
                           "plan does not hand to Python. Register it outside the jitted "
                           "function, or use Tensor.register_hook / Node.register_prehook")
    for hook in list(hooks.values()):
        r = hook(tuple(grad_inputs), tuple(grad_outputs))
        if r is not None:
            grad_inputs = _checked(hook, r, len(grad_inputs))
    return grad_inputs


def after_accumulate(node, g, accumulated):
    """An AccumulateGrad's post-hooks (``grad_inputs`` is empty, as in PyTorch), then the
    leaf's post-accumulate-grad hooks when ``.grad`` was written."""
    hooks = node._pre_hooks.get(NODE_POST)
    for hook in list((hooks or {}).values()):
        hook((), (g,))
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

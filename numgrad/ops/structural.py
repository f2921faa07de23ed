"""ops.structural: ``detach`` and ``hook``, the primitives a trace records for
``tensor.detach()`` and ``register_hook`` (eager mode runs neither as an op).

Room: ops. Both are the identity on their input's value; what they mean is declared
in ``effects``: ``detach`` stops the gradient (used when the backward is derived;
at run time it is the identity, and kernels read through it), ``hook`` calls the
user's hook with the gradient as a Tensor, and what it returns replaces the gradient
(so the compiler never folds, merges or drops it).
"""
from __future__ import annotations

from numgrad.grad_mode import no_grad
from numgrad.ops.registry import Cost, defop, identity_lowering
from numgrad.tensor import Tensor


def call_hook(g_array, fn):
    with no_grad():
        g = Tensor._make(g_array)
        r = fn(g)
    if r is None:
        return g_array
    if not isinstance(r, Tensor):
        raise TypeError(f"hook returned {type(r).__name__}; a hook must return a Tensor or None")
    if r.shape != g.shape:
        raise RuntimeError(f"hook '{getattr(fn, '__name__', 'hook')}' has changed the size of "
                           f"value: expected {g.shape}, got {r.shape}")
    out = r._concrete()
    return out if out.dtype == g_array.dtype else out.astype(g_array.dtype)


def _same(x):
    return (x.shape, x.dtype)


detach_p = defop("detach", kind="pointwise", inputs=("x",), impl=lambda x: x, abstract=_same,
                 scalar=identity_lowering, cost=Cost(cheap=True), effects=("stop_gradient",),
                 jit=False)
hook_p = defop("hook", inputs=("x",), params=("fn",), impl=call_hook,
               abstract=lambda x, fn: _same(x), effects=("calls_user",), jit=False)

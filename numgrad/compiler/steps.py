"""compiler.steps: the equations that run in Python between kernels.

Room: compiler. ``detach`` is an identity at run time (its meaning, stopping
the gradient, was used when the backward was derived). ``hook`` calls the
user's hook with the gradient as a Tensor; what it returns replaces the
gradient for the kernels after it, as in eager mode.
"""
from __future__ import annotations


from numgrad.grad_mode import no_grad
from numgrad.tensor import Tensor


def run_structural(e, ins, hooks=None):
    if e.prim == "detach":
        return ins[0]
    if e.prim == "hook":
        return call_hook(e.params["fn"], ins[0])
    raise NotImplementedError(f"no runner for structural equation {e.prim!r}")


def call_hook(fn, g_array):
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

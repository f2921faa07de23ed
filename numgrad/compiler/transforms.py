"""compiler.transforms: ``ng.grad`` and ``ng.value_and_grad`` (JAX's functional spelling).

Room: compiler. Written with the eager engine, so they work eagerly and,
wrapped in ``ng.jit``, trace into one joint forward+backward plan.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Callable
import threading

import numpy as np

import numgrad.tracing_hook as tracing_hook
from numgrad.autograd import engine
# Keeps what ng.func.jvp / vmap attach to a payload (ng.func.jacfwd(ng.grad(f))).
from numgrad.autograd.forward_ad import transform_detach
from numgrad.compiler.tracer import current_tracer
from numgrad.creation import zeros_like
from numgrad.dtypes import default_float
from numgrad.grad_mode import enable_grad, is_grad_enabled
from numgrad.tensor import Tensor

_depth = threading.local()  # how many transforms are evaluating their function right now


@contextlib.contextmanager
def _deriving():
    """Under a trace, equations the engine records now are the derived backward: listings
    and pictures of ``ng.jit(ng.value_and_grad(f))`` show them in the backward band."""
    tracer = current_tracer()
    if tracer is None:
        yield
        return
    prev, tracer.backward = tracer.backward, True
    try:
        yield
    finally:
        tracer.backward = prev


def value_and_grad(fn, argnums=0, has_aux=False) -> Callable:
    """``(value, grads)`` of a scalar function, in JAX's order (``jax.value_and_grad``,
    ``torch.func.grad_and_value``). Arguments in ``argnums`` may be Python floats. Inputs
    that require grad (under grad mode) give results in the caller's graph, as
    ``torch.func`` does. Raises RuntimeError for a non-scalar value, TypeError for an
    argument that is neither a tensor nor a float.

    >>> f = ng.value_and_grad(lambda x: (x * x).sum())
    >>> v, g = f(ng.tensor([1., 2.])); g
    tensor([2., 4.])
    """
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    @functools.wraps(fn, updated=())
    def wrapped(*args, **kwargs):
        args = list(args)
        # Inside another transform (ng.grad(ng.grad(f))) the grads must stay differentiable
        # w.r.t. the outer inputs. At top level the transform is pure, as in JAX, unless an
        # input requires grad while grad mode is on: then, as torch.func.grad does, the
        # result is built with create_graph and composes with the caller's autograd.
        nested = getattr(_depth, "n", 0) > 0
        outer = is_grad_enabled()
        attach = nested
        for n in nums:
            if n >= len(args):
                raise TypeError(f"value_and_grad: argnums={n} but the function was called with "
                                f"{len(args)} positional argument(s)")
            a = args[n]
            if isinstance(a, float):  # JAX and HIPS autograd take Python floats
                data = np.array(a, default_float.np)
                tracer = current_tracer()
                if tracer is not None:
                    # Under @ng.jit: a traced constant, so the leaf made below is traced too
                    # (a concrete leaf requiring grad would be captured as an input).
                    data = tracer.var_of(data)
                a = args[n] = Tensor._make(data)
            elif not isinstance(a, Tensor):
                raise TypeError(f"value_and_grad: argument {n} must be a Tensor or a Python "
                                f"float, got {type(a).__name__}")
            else:
                # A float argument that @ng.jit traces as a value: differentiating w.r.t.
                # it takes the float path above, so it stays a constant of the plan.
                tracing_hook.as_number(a)
            if not a.dtype.is_floating_point:
                raise RuntimeError("only Tensors of floating point dtype can require gradients "
                                   f"(argument {n} is {a.dtype})")
            if a.requires_grad and (nested or outer):
                attach = True
        for n in nums:
            a = args[n]
            if not (attach and a.requires_grad):
                # Differentiate w.r.t. a fresh leaf: the caller's tensor need not require grad.
                args[n] = transform_detach(a).requires_grad_(True)
        _depth.n = getattr(_depth, "n", 0) + 1
        try:
            with enable_grad():
                out = fn(*args, **kwargs)
        finally:
            _depth.n -= 1
        with enable_grad():
            value, aux = (out if has_aux else (out, None))
            if not isinstance(value, Tensor) or value.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            wrt = [args[n] for n in nums]
            if value.requires_grad:
                with _deriving():
                    grads = engine.grad(value, wrt, create_graph=attach,
                                        materialize_grads=True)
            else:
                # The value does not depend on the inputs (a constant, `sign`, the grad of
                # a linear function): its gradient is zero, as in JAX and torch.func.
                grads = tuple(zeros_like(a) for a in wrt)
        if not attach:
            value = transform_detach(value)
        g = grads[0] if single else tuple(grads)
        return ((value, aux), g) if has_aux else (value, g)

    return wrapped


def grad(fn, argnums=0, has_aux=False) -> Callable:
    """The gradient of a scalar function w.r.t. ``argnums`` (``jax.grad``, ``torch.func.grad``);
    zeros when the function does not depend on them. Raises as ``value_and_grad`` does."""
    vg = value_and_grad(fn, argnums, has_aux)

    @functools.wraps(fn, updated=())
    def wrapped(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return wrapped

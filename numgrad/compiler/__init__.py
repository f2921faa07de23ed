"""compiler: ``@ng.jit`` — trace to a graph IR, derive the backward, fuse, compile with Numba.

Room: compiler (the top room). Imports everything below it; nothing below
imports it. The flow: ``tracer`` -> ``autodiff`` (trace + partition) ->
``passes`` -> ``backends`` (one package per target), driven by ``pipeline.lower``; at
run time ``jit_function`` (the front door: keys, static arguments, guards) -> ``plan``
(runs the programs, applies the call's effects) -> ``compiled_node`` (the backward node).
"""
from __future__ import annotations

from typing import Callable, Sequence

from numgrad.errors import TracingError
from numgrad.compiler.plan_cache import DEFAULT_MAX_PLANS
from numgrad.compiler.jit_function import CompiledFunction
from numgrad.compiler.transforms import grad, value_and_grad


def jit(fn: Callable | None = None, *, device=None, parallel="auto", fastmath: bool = False,
        cache: bool = True, backend: str | None = None, verbose: bool = False,
        vector_math: bool | None = None, max_plans: int | None = DEFAULT_MAX_PLANS,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        remat: bool = True) -> CompiledFunction | Callable:
    """Compile ``fn``: trace its tensor ops once per signature and run fused kernels
    (``torch.compile``, ``jax.jit``).

    >>> @ng.jit
    ... def f(x):
    ...     return (x ** 2 + x ** 3).sum()
    >>> x = ng.ones(10, requires_grad=True)
    >>> f(x).backward(); x.grad[0]
    tensor(5.)

    The result behaves like ``fn``: its outputs are tensors whose ``grad_fn`` is
    ``CompiledFunctionBackward``, so ``backward()``, hooks, ``retain_graph`` and
    ``create_graph`` work as in eager mode. A new shape, dtype, ``requires_grad`` or grad
    mode (and any captured value that changes) retraces. Called with options only
    (``@ng.jit(parallel=False)``) it returns a decorator.

    Non-tensor arguments are constants of the plan (part of its key; floats by their bits:
    ``0.0`` and ``-0.0`` differ, NaN matches NaN). A Python float that takes a second value
    (a learning rate, a temperature) is traced from then on as a 0-d input that promotes as
    a Python number, so later values compile nothing; it stays a constant where the
    function needs its value as a number (``if lr > 1``, ``math.exp(lr)``). Ints, bools,
    strings and None are always constants.

    Options:

    - ``device``: ``"cuda"`` compiles for the CUDA backend (its tensors must be CUDA
      tensors); None (default) follows the arguments: CUDA tensors get CUDA plans.
    - ``parallel``: ``"auto"`` (default) compiles a serial tier first and the
      multi-threaded (``prange``) tier at the second call, for loops with enough work;
      ``True`` compiles threads before the first result; ``False`` never uses threads.
    - ``fastmath``: let LLVM assume no NaN/inf (faster, but NaN and inf no longer
      propagate as in eager mode). Off by default.
    - ``cache``: keep compiled kernels on disk under ``$NUMGRAD_CACHE_DIR`` (default
      ``~/.cache/numgrad``, verified before use), so a new process compiles nothing it
      compiled before; ``False`` compiles in memory and reads or writes no disk cache.
    - ``backend``: ``None`` or ``"cpu"`` for the Numba backend; ``"numpy"`` interprets the
      graph with the NumPy impls (the reference the fused backend is tested against).
    - ``verbose``: print what is traced, compiled and loaded, and why a call traced again
      (the guard that failed, with its old and new value; ``NUMGRAD_LOG_RECOMPILES=1``
      prints only that, and the ``numgrad.jit`` logger hears it at INFO).
    - ``max_plans``: how many signatures stay compiled (default 64; the least recently
      used is dropped, and traces again if it comes back; None: unbounded).
    - ``vector_math``: vectorisable exp/log/tanh/sigmoid/sin/cos (within ~1.6 ulp, several
      times faster loops); default on, env ``NUMGRAD_VECTOR_MATH=0`` turns it off.
    - ``static_argnums``, ``static_argnames``: arguments (by position, by name; JAX's
      spelling and rule) that are always constants: a float there compiles a plan per
      value, never a traced input. Passing a tensor there raises TypeError.
    - ``remat``: ``True`` (default) recomputes cheap elementwise values in the backward
      kernels instead of saving them from the forward (fewer bytes written and read);
      ``False`` saves every forward value the backward reads (PyTorch's eager choice). The
      results are the same either way; ``verbose=True`` and ``.source()`` show the split.

    The compiled function can be inspected:

    - ``.trace(*args)``: the graph IR for those arguments, forward and derived backward.
    - ``.source(*args)``: the generated Numba source.
    - ``.stats``: counters ``traces``, ``retraces``, ``compiles``, ``compile_seconds``,
      ``cache_hits``, ``disk_hits``, ``kernels``.

    Raises TypeError if ``fn`` is not callable. Calling it raises ``ng.TracingError``
    (naming your file and line) for tensor-dependent Python control flow, or an op
    with no lowering.
    """
    options = {"device": device, "parallel": parallel, "fastmath": fastmath, "cache": cache,
               "backend": backend, "verbose": verbose, "vector_math": vector_math,
               "max_plans": max_plans, "static_argnums": static_argnums,
               "static_argnames": static_argnames, "remat": remat}
    if fn is None:
        return lambda f: jit(f, **options)
    if isinstance(fn, CompiledFunction):
        return fn
    if not callable(fn):
        raise TypeError(f"ng.jit expects a function, got {type(fn).__name__}")
    return CompiledFunction(fn, **options)


__all__ = ["jit", "grad", "value_and_grad", "TracingError", "CompiledFunction"]

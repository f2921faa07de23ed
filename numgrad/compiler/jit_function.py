"""compiler.jit_function: ``CompiledFunction``, the front door of ``ng.jit``.

Room: compiler. A call computes the signature (tree structure, shapes, dtypes,
devices, requires_grad flags, grad mode, constant arguments), finds or builds
the plan for it (``compiler.plan``) and runs it; the plan returns ordinary Tensors whose
``grad_fn`` is a ``CompiledFunctionBackward`` node (``compiler.compiled_node``) inside the
eager engine, so compiled and eager code mix in one graph.

Non-tensor arguments are constants of the plan, keyed by value (floats by their bits),
with one exception: a Python float seen with a second value in calls of the same
structure is traced from then on as a 0-d input marked weak (it promotes as a Python
number: ``ops.dispatch``), so later values reuse the plan (``PlanCache.float_inputs``).
If that trace fails (the function needs the number itself: an ``if``, ``math.exp``, an
op's number parameter) the float stays a constant and the call traces again.
``static_argnums`` / ``static_argnames`` keep arguments constants always
(``compiler.static_args``).
"""
from __future__ import annotations

import functools
import threading
import time

import numpy as np

import numgrad.config as config
import numgrad.tracing_hook as tracing_hook
import numgrad.compiler.graph_break as graph_break
import numgrad.compiler.guards as guards
import numgrad.compiler.progress as progress
import numgrad.compiler.pytree as pytree
import numgrad.compiler.tracebacks as tracebacks
from numgrad.compiler.pipeline import Options
from numgrad.compiler.plan import Plan
from numgrad.compiler.plan_cache import DEFAULT_MAX_PLANS, FLOATS, PlanCache
from numgrad.compiler.static_args import StaticArgs
from numgrad.compiler.tracer import current_tracer
from numgrad.errors import DataDependentError
from numgrad.grad_mode import is_grad_enabled
from numgrad.tensor import Tensor

_ndarray = np.ndarray
# Plans are built one at a time (Numba compiles under a global lock anyway): threads that
# make a first call together get one trace and one compile, and none sees a half-built
# plan or module. Re-entrant: tracing may call other jitted functions.
_BUILD_LOCK = threading.RLock()


# The key of a float argument traced as a 0-d input (its value is not part of the key).
_TRACED_FLOAT = ("float", "traced")


class Stats:
    """What a compiled function has done (``compiled.stats``):

    - ``traces``: runs of the function on traced values (each new signature, a changed
      guard, a Python float that started to vary); ``retraces``: those after the first;
    - ``compiles``: builds that needed machine code this function had not used before
      (compiled, or loaded from the disk cache): a plan's programs, the multi-threaded
      tier a plan compiles at its second call, and the one-pass forward and backward
      (``compiler.speculate``) compiled when ``f(x).backward()`` comes a second time; a
      shape-generic plan for one more shape reuses its kernels and counts none;
    - ``compile_seconds``: the wall time of all of these: tracing and compiling plans, and
      the compiles plans make later (the tier, the one-pass program); each is made once,
      by one thread, however many want it, and counted once;
    - ``cache_hits``: calls that found their plan; ``disk_hits``: programs loaded from the
      disk cache; ``kernels``: fused kernels in the last plan built.
    """

    __slots__ = ("traces", "compiles", "cache_hits", "disk_hits", "kernels", "retraces",
                 "compile_seconds")

    def __init__(self):
        self.traces = self.compiles = self.cache_hits = self.disk_hits = self.kernels = 0
        self.retraces = 0
        self.compile_seconds = 0.0

    def __repr__(self):
        # compile_seconds to the millisecond: 4.453, not 4.453174142000023
        return ("Stats(" + ", ".join(
            f"{k}={round(v, 3) if isinstance(v, float) else v}"
            for k, v in ((k, getattr(self, k)) for k in self.__slots__)) + ")")


def _leaf_key(x):
    if isinstance(x, Tensor):
        d = x._data
        # The layout is part of the signature: whether a reshape of the input is a view
        # (an in-place op through it reaches the caller's tensor) or a copy depends on it.
        try:
            layout = None if d.flags.c_contiguous else d.strides
        except AttributeError:
            if x.device.type != "meta":
                raise
            # a meta tensor (numgrad.meta): no data to compile for
            raise NotImplementedError("@ng.jit cannot run on meta tensors (they hold no data): "
                                      "call the function without @ng.jit") from None
        return (d.shape, d.dtype.str, x._requires_grad, str(x.device), layout)
    if isinstance(x, (int, float, bool, str, type(None), complex, np.generic)):
        # By bits: 0.0 and -0.0 get plans of their own, and NaN finds its plan again.
        return ("const", guards.scalar_key(x.item() if isinstance(x, np.generic) else x),
                type(x).__name__)
    if isinstance(x, np.ndarray):
        return ("array", x.shape, x.dtype.str, x.tobytes())
    try:
        hash(x)
        return ("const", type(x).__name__, x)
    except TypeError:
        return ("id", id(x))


class CompiledFunction:
    """What ``ng.jit(fn)`` returns: call it like ``fn``; inspect it with ``trace``,
    ``source`` and ``stats``."""

    def __init__(self, fn, device=None, parallel="auto", fastmath=False, cache=True,
                 backend=None, remat=True, verbose=False, vector_math=None,
                 max_plans=DEFAULT_MAX_PLANS, static_argnums=None, static_argnames=None):
        self.fn = fn
        self._static = StaticArgs(fn, static_argnums, static_argnames)
        # Leaf positions of tensors that stand for Python floats in every call: the
        # differentiable backward of a plan with traced floats (Plan.differentiable_backward).
        self._weak_leaves = frozenset()
        self.device = device
        if vector_math is None:
            vector_math = config.get("NUMGRAD_VECTOR_MATH")
        self.options = Options(parallel=parallel, fastmath=fastmath, cache=cache,
                               verbose=verbose, vector_math=vector_math)
        self.backend = backend or ("cuda" if str(device).startswith("cuda") else "cpu")
        self.remat = remat
        self.verbose = verbose
        self.stats = Stats()
        self._plans = PlanCache(max_plans)  # LRU, bounded (plan_cache)
        self._fast = self._plans.fast
        # updated=(): copying fn's __dict__ would clobber our own attributes when fn is
        # itself a wrapper of a CompiledFunction (ng.jit(ng.grad(ng.jit(f)))).
        functools.update_wrapper(self, fn, updated=())

    def __repr__(self):
        return f"<ng.jit {getattr(self.fn, '__qualname__', self.fn)}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    @property
    def _ng_jit_fn(self):
        """What this compiled function runs (the guard scan walks into it)."""
        return self.fn

    # --------------------------------------------------------------- calls
    def _key(self, args, kwargs):
        tree, leaves = pytree.flatten((args, kwargs))
        grad = is_grad_enabled()
        keys = [_leaf_key(x) for x in leaves]
        for i in self._plans.dynamic.get(tree, ()):  # floats traced as values: any value
            if type(leaves[i]) in FLOATS:
                keys[i] = _TRACED_FLOAT
        return (tree, tuple(keys), grad), tree, leaves, grad

    def _plan(self, args, kwargs):
        __tracebackhide__ = True  # noqa: F841  (IPython and pytest hide this frame)
        key, tree, leaves, grad = self._key(args, kwargs)
        plan = self._plans.get(key)
        if plan is None or not plan.guard_ok():
            with _BUILD_LOCK:
                key, tree, leaves, grad = self._key(args, kwargs)  # (another thread's build)
                plan = self._plans.get(key)
                if plan is None or not plan.guard_ok():
                    # New signature, or something the trace read has changed: trace again
                    # (and say which guard failed, for verbose=True and the log).
                    self._plans.retracing(self, args, kwargs, grad,
                                          None if plan is None else plan.guard.failing())
                    try:
                        return self._build(args, kwargs, tree, leaves, grad), leaves
                    except Exception as exc:
                        # A mistake in the user's function: show their frames, not ours.
                        short = tracebacks.filtered(exc)
                        if short is None:
                            raise
                        raise short
        self.stats.cache_hits += 1
        return plan, leaves

    def _build(self, args, kwargs, tree, leaves, grad):
        """Trace and compile the plan of this call, and file it under its key."""
        __tracebackhide__ = True  # noqa: F841  (IPython and pytest hide this frame)
        t0 = time.perf_counter()
        compiles = self.stats.compiles
        name = getattr(self.fn, "__name__", "fn")
        static = self._static.leaves(tree, leaves)
        before = self._plans.dynamic.get(tree, frozenset())
        weak = self._plans.float_inputs(tree, leaves, static)
        # Floats that vary are traced as values. If that trace fails, the function needs a
        # float's value as a Python number: the floats new to this call stay constants (then
        # all of them), and the call traces again. Only a fallback that traces says so: a
        # call that fails every way fails for another reason, and changes nothing.
        tries = [weak] + ([weak & before] if weak & before and weak - before else []) + (
            [frozenset()] if weak else [])
        failed = []   # (floats kept constant, the exception that made them so)
        with progress.compiling(name):
            for k, w in enumerate(tries):
                try:
                    plan = self._new_plan(args, kwargs, tree, leaves, grad, w)
                    break
                except Exception as exc:
                    if not w:
                        raise
                    self.stats.traces += 1
                    failed.append((w - tries[k + 1], exc))
        for kept, exc in failed:
            self._plans.keep_constant(tree, kept)
            if self.verbose:
                names = pytree.leaf_names(self.fn, args, kwargs)
                which = ", ".join(str(names[i] or f"#{i}") for i in sorted(kept))
                print(f"[numgrad.jit] {name}: keeping the float argument(s) {which} "
                      f"constant: the function needs the number "
                      f"({type(exc).__name__}: {(str(exc) or '-').splitlines()[0]})")
        newly = plan.weak - before
        if newly:  # the plans that held these floats as constants cannot be reached now
            self._plans.drop(lambda k: k[0] == tree and any(
                k[1][i] is not _TRACED_FLOAT for i in newly))
        self._plans[self._key(args, kwargs)[0]] = plan
        seconds = time.perf_counter() - t0
        self._plans.traced(self, args, kwargs, grad, seconds)
        if self.stats.compiles > compiles:
            self._plans.batch_compiled(self, tree, leaves, grad, plan.weak, seconds)
        return plan

    def _new_plan(self, args, kwargs, tree, leaves, grad, weak):
        """A Plan with the float leaves at ``weak`` traced as 0-d inputs (float64 at the
        trace; ``autodiff._narrow_weak_inputs`` may give one the dtype its uses cast to)."""
        generic = self._plans.wants_generic(tree, leaves, grad, weak)
        if weak:
            leaves = list(leaves)
            for i in weak:
                leaves[i] = Tensor._make(np.array(leaves[i], np.float64))
            args, kwargs = pytree.unflatten(tree, leaves)
        try:
            return Plan(self, args, kwargs, tree, leaves, grad, generic, weak)
        except DataDependentError as exc:  # x[mask], nonzero: segments around eager steps
            self.stats.traces += 1
            return graph_break.GraphBreakPlan(self, tree, exc)

    def sibling(self, fn, **overrides):
        """A ``CompiledFunction`` of ``fn`` with this one's backend and build options (a
        graph break's segments, the differentiable backward of a plan)."""
        opts = self.options
        kw = dict(backend=self.backend, parallel=opts.parallel, fastmath=opts.fastmath,
                  cache=opts.cache, vector_math=opts.vector_math)
        return type(self)(fn, **kw, **overrides)

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True  # noqa: F841  (IPython and pytest hide this frame)
        if tracing_hook.capture is not None and current_tracer() is not None:
            # Called while another function is traced: inline, as JAX does, so the outer plan
            # fuses across it and values traced by the outer function may flow in.
            return self.fn(*args, **kwargs)
        # Fast path (the common call): positional tensors only, guard on a flat key.
        if not kwargs:
            key = [is_grad_enabled()]
            for a in args:
                if type(a) is not Tensor:
                    if type(a) is float and len(key) - 1 in self._plans.fast_dynamic.get(
                            len(args), ()):
                        key.append(_TRACED_FLOAT)  # a float traced as a value
                        continue
                    break
                d = a._data
                if type(d) is _ndarray:
                    if not d.flags.c_contiguous:
                        break  # strided inputs are keyed by their strides, on the slow path
                    key.append((d.shape, d.dtype.num, a._requires_grad))
                    continue
                device = getattr(d, "_ng_device", None)  # a device payload: always contiguous
                if device is None:
                    break
                key.append((d.shape, d.dtype.num, a._requires_grad, device))
            else:
                plan = self._fast.get(tuple(key))
                if plan is not None and (plan.guard is None or plan.guard()):
                    self.stats.cache_hits += 1
                    self._plans.touch(plan)
                    return plan.run(args)
                try:
                    plan, leaves = self._plan(args, kwargs)
                except Exception as exc:
                    raise tracebacks.at_boundary(exc) from exc.__cause__
                if plan.weak == {i for i, k in enumerate(key[1:]) if k is _TRACED_FLOAT}:
                    self._fast[tuple(key)] = plan  # (not a plan made while floats changed)
                return plan.run(leaves)
        try:
            plan, leaves = self._plan(args, kwargs)
        except Exception as exc:
            raise tracebacks.at_boundary(exc) from exc.__cause__
        return plan.run(leaves)

    # ---------------------------------------------------------- inspection
    def trace(self, *args, **kwargs):
        """The traced joint graph (forward and derived backward) after the passes."""
        plan, _ = self._plan(args, kwargs)
        return plan.joint_graph

    def source(self, *args, **kwargs) -> str:
        """The generated kernel source for this signature: a ``str`` that Jupyter shows
        highlighted, forward and backward programs labelled."""
        plan, _ = self._plan(args, kwargs)
        return plan.source()

    def schedule(self, *args, **kwargs):
        """The fusion plan of this signature (``compiler.schedule``): a tuple of
        ``Schedule`` (forward, then backward) that prints as a readable listing."""
        plan, _ = self._plan(args, kwargs)
        return plan.schedule()


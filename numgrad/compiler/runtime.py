"""compiler.runtime: ``CompiledFunction`` — guards, cached plans, and the backward node.

Room: compiler. A call computes the signature (tree structure, shapes, dtypes,
devices, requires_grad flags, grad mode, constant arguments), finds or builds
the plan for it, runs the forward program, and returns ordinary Tensors whose
``grad_fn`` is a ``CompiledFunctionBackward`` node inside the eager engine, so
compiled and eager code mix in one graph.

Non-tensor arguments are constants of the plan, keyed by value (floats by their bits),
with one exception: a Python float seen with a second value in calls of the same
structure is traced from then on as a 0-d input marked weak (it promotes as a Python
number: ``ops.dispatch``), so later values reuse the plan (``PlanCache.float_inputs``).
If that trace fails (the function needs the number itself: an ``if``, ``math.exp``, an
op's number parameter) the float stays a constant and the call traces again.
``static_argnums`` / ``static_argnames`` keep arguments constants always.
"""
from __future__ import annotations

import functools
import inspect
import threading
import time

import numpy as np

from numgrad import config, devices, tracing_hook
from numgrad.autograd import anomaly
from numgrad.autograd.graph import _FREED, Node, _sequence, describe, edge_of, inplace_hint
from numgrad.compiler import autodiff, guards, pipeline, progress, pytree, tracebacks
from numgrad.compiler import graph_break
from numgrad.errors import DataDependentError
from numgrad.compiler.backends import get_backend
from numgrad.compiler.passes import optimize
from numgrad.compiler.pipeline import Options
from numgrad.compiler.plan_cache import DEFAULT_MAX_PLANS, FLOATS, PlanCache
from numgrad.compiler.speculate import Speculation
from numgrad.compiler.tracer import current_tracer
from numgrad.grad_mode import is_grad_enabled
from numgrad.ops.views import store_shared
from numgrad.tensor import Tensor
from numgrad.viz.source import SourceText

_ndarray = np.ndarray
# Plans are built one at a time (Numba compiles under a global lock anyway): threads that
# make a first call together get one trace and one compile, and none sees a half-built
# plan or module. Re-entrant: tracing may call other jitted functions.
_BUILD_LOCK = threading.RLock()


# The key of a float argument traced as a 0-d input (its value is not part of the key).
_TRACED_FLOAT = ("float", "traced")


def _contiguous(a):
    # NOTE: np.ascontiguousarray turns a 0-d array into shape (1,); keep 0-d as 0-d.
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


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
        return (d.shape, d.dtype.str, x._requires_grad, str(x.device),
                None if d.flags.c_contiguous else d.strides)
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


class _StaticArgs:
    """Which leaves of a call are static (``static_argnums`` / ``static_argnames``, with
    JAX's rule: given one of them, the signature supplies the other for the same
    parameters; given both, only those listed)."""

    def __init__(self, fn, argnums, argnames):
        self.nums = _ints("static_argnums", argnums)
        self.names = _strs("static_argnames", argnames)
        self._cache = {}
        self.positional = []
        if not self:
            return
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        ps = list(sig.parameters.values())
        positional = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
        params = [p.name for p in ps]
        if self.names and not any(p.kind == p.VAR_KEYWORD for p in ps):
            missing = [n for n in self.names if n not in params]
            if missing:
                what = "is not a parameter" if len(missing) == 1 else "are not parameters"
                raise ValueError(f"static_argnames names {', '.join(map(repr, missing))}, "
                                 f"which {what} of {getattr(fn, '__qualname__', fn)!r} (its "
                                 f"parameters: {', '.join(params) or 'none'})")
        if not any(p.kind == p.VAR_POSITIONAL for p in ps):  # -1: the last parameter
            self.nums = tuple(i + len(positional) if i < 0 else i for i in self.nums)
        if bool(self.nums) != bool(self.names):  # the signature completes the other
            self.names += tuple(positional[i] for i in self.nums
                                if -len(positional) <= i < len(positional))
            self.nums += tuple(positional.index(n) for n in self.names if n in positional)
        self.positional = positional

    def __bool__(self):
        return bool(self.nums or self.names)

    def leaves(self, tree, leaves):
        """Leaf positions of the static arguments of a call of ``tree``; TypeError where a
        tensor was passed as one."""
        if not self:
            return frozenset()
        got = self._cache.get(tree)
        if got is None:
            args, kwargs = tree.children
            pos, spans = 0, []
            for c in args.children:
                n = pytree.num_leaves(c)
                spans.append((pos, pos + n))
                pos += n
            nums = {i + len(spans) if i < 0 else i for i in self.nums}  # (with *args)
            names = set(self.names)
            positional = self.positional
            chosen = {}
            for i, span in enumerate(spans):
                if i in nums or (i < len(positional) and positional[i] in names):
                    chosen[positional[i] if i < len(positional) else f"argument {i}"] = span
            for k, c in zip(kwargs.meta, kwargs.children):
                n = pytree.num_leaves(c)
                if k in names:
                    chosen[k] = (pos, pos + n)
                pos += n
            got = self._cache[tree] = chosen
        out = set()
        for name, (a, b) in got.items():
            for i in range(a, b):
                if isinstance(leaves[i], Tensor):
                    raise TypeError(
                        f"{name!r} is a static argument (static_argnums/static_argnames), "
                        "so it is a constant of the compiled plan, but it got a Tensor: pass "
                        "a Python value there, or leave the argument out of the static ones")
                out.add(i)
        return frozenset(out)


def _ints(what, v):
    return _tuple_of(what, v, lambda i: isinstance(i, int) and not isinstance(i, bool),
                     "an int or a sequence of ints")


def _strs(what, v):
    return _tuple_of(what, v, lambda n: isinstance(n, str), "a str or a sequence of str")


def _tuple_of(what, v, ok, expected):
    """``v`` (None, one item or a sequence of items that pass ``ok``) as a tuple."""
    if v is None:
        return ()
    try:
        out = (v,) if ok(v) else tuple(v)
    except TypeError:
        out = None
    if out is None or not all(ok(x) for x in out):
        raise TypeError(f"{what} must be {expected}, got {v!r}")
    return out


class CompiledFunction:
    """What ``ng.jit(fn)`` returns: call it like ``fn``; inspect it with ``trace``,
    ``source`` and ``stats``."""

    def __init__(self, fn, device=None, parallel="auto", fastmath=False, cache=True,
                 backend=None, remat=True, verbose=False, vector_math=None,
                 max_plans=DEFAULT_MAX_PLANS, static_argnums=None, static_argnames=None):
        self.fn = fn
        self._static = _StaticArgs(fn, static_argnums, static_argnames)
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


class Plan:
    """Everything compiled for one signature: forward (+ backward) programs and metadata."""

    def __init__(self, owner, args, kwargs, tree, leaves, grad, generic=False,
                 weak=frozenset()):
        t0 = time.perf_counter()
        self.owner = owner
        # Non-tensor leaves only: holding the first call's tensors would keep them alive
        # as long as the plan (the double backward puts the call's tensors in their place).
        self.tree = tree
        self.leaves_template = [None if isinstance(x, Tensor) else x for x in leaves]
        self.tensor_pos = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
        # Leaf positions of the Python floats traced as 0-d inputs (the call passes floats
        # there; ``run`` makes them 0-d arrays of their input's dtype: ``_run_floats``).
        self.weak = weak
        name = getattr(owner.fn, "__name__", "fn")
        self.opts = owner.options.but(name=name, generic=generic)  # generic: runtime extents
        # (the floats of a double backward's call come as 0-d host tensors: on no device)
        tensors = [leaves[i] for i in self.tensor_pos
                   if i not in weak and i not in owner._weak_leaves]
        chosen = []

        def backend_for(captures):  # the floats are on no device: the tensors choose
            chosen.append(_backend_for(owner, tensors + list(captures)))
            return get_backend(chosen[-1])

        low = pipeline.lower(owner.fn, args, kwargs, grad_mode=grad, remat=owner.remat,
                             options=self.opts, backend_for=backend_for,
                             weak=weak | owner._weak_leaves)
        owner.stats.traces += 1
        if weak:
            # Each float enters in its input's dtype (float64, or the one every use casts
            # it to: autodiff._narrow_weak_inputs), rounded here as eager mode rounds it.
            ins = low.traced.graph.inputs
            self._float_dtypes = [(i, ins[k].dtype) for k, i in enumerate(self.tensor_pos)
                                  if i in weak]
            # On CUDA the floats stay host numbers: the kernels take them by value
            # (backends.cuda.renderer.by_value). Uploaded only where they alone would say
            # the plan runs on a device other than cuda:0 (no tensor argument says it).
            self._scalar_device = None
            if chosen[-1] == "cuda" and not any(
                    t.device.type == "cuda" for t in tensors + list(low.traced.captures)):
                want = devices.target(owner.device or "cuda")
                self._scalar_device = want if want.index else None
            self.run = self._run_floats
        self._adopt(low)
        self._count(owner.stats)
        # Compiles the programs make later are shown and counted as this plan's.
        for p in self.programs:
            p.late = self.late
        if self.spec is not None:
            self.spec.late = self.late
        if owner.verbose:
            print(f"[numgrad.jit] {name}: traced and compiled {len(self.programs)} "
                  f"program(s), {owner.stats.kernels} kernel(s) in "
                  f"{time.perf_counter() - t0:.2f}s")

    def _adopt(self, low):
        """What a call needs from the lowered programs: which inputs and outputs the
        backward reads, and whether ``run`` may take its one-output path."""
        tr = self.traced = low.traced
        self.guard = low.guard
        self.captured = tr.captures
        self.out_tree = tr.out_tree
        self.n_out = len(tr.outputs)
        self.grad = low.grad
        self.fwd_graph, self.bwd_graph, self.n_saved = low.fwd_graph, low.bwd_graph, low.n_saved
        self.fwd, self.bwd = low.fwd, low.bwd
        self.check_inputs, self.check_outputs, self.saves = [], [], False
        if self.grad:
            prim_set = set(tr.graph.inputs[:tr.n_primals])
            read = {v for e in self.bwd_graph.eqns for v in e.inputs}
            self.check_inputs = [i for i, v in enumerate(tr.graph.inputs[:tr.n_primals])
                                 if v in read or v in self.bwd_graph.outputs]
            wanted = {v for e in tr.graph.eqns[tr.n_fwd_eqns:] for v in e.inputs}
            self.check_outputs = [j for j, v in enumerate(tr.outputs)
                                  if v in wanted and v not in prim_set]
            self.grad_pos = [i for i, v in enumerate(tr.grads) if v is not None]
            self.cot_vars = [tr.outputs[j] for j in tr.cotangent_of]
            # A backward that reads no input and no saved value frees nothing: a second
            # backward through it works, as through eager `b + 1` (AddBackward saves nothing).
            self.saves = bool(low.n_saved or self.check_inputs or self.check_outputs
                              or _saves_params(tr))
        self.programs = [self.fwd, self.bwd] if self.grad else [self.fwd]
        self._joint = None
        self._bwd_fn = None
        # Per output: the input it is (if the function returned an input) and its slot
        # among the backward node's outputs (if it receives a cotangent).
        slot = {j: k for k, j in enumerate(tr.cotangent_of)}
        self._out_alias = [tr.aliases.get(j) for j in range(self.n_out)]
        self._out_slot = [slot.get(j) for j in range(self.n_out)]
        # Slot of the single output when run() may take its short path, else None.
        self._one_output = None
        if (self.out_tree is pytree.LEAF and self.n_out == 1 and not tr.aliases
                and not tr.writebacks and not tr.leaf_hooks and not self.check_outputs
                and (not self.grad or self._out_slot[0] is not None)):
            self._one_output = self._out_slot[0] if self.grad else 0
        # loss = f(x); loss.backward(): the call may compute the gradients (speculate.py).
        self.spec = (Speculation.maybe(tr, self.owner.remat, low.backend, self.opts)
                     if self.grad and self._one_output is not None else None)

    def _count(self, stats):
        stats.compiles += self.owner._plans.new_code(self.programs)
        stats.kernels = sum(p.kernels for p in self.programs)
        stats.disk_hits += sum(1 for p in self.programs if getattr(p, "disk_hit", False))

    def guard_ok(self):
        return self.guard is None or self.guard()

    def late(self, what, build, program=None):
        """``build()``, a compile one of this plan's programs makes after the plan was built
        (its multi-threaded tier at the second call; the one-pass program of the habit
        path, which ``build`` returns): under the progress line, naming the function and
        ``what``, and counted in the owner's ``stats`` (``compiles`` if it compiled code
        this function had not used)."""
        stats = self.owner.stats
        before = getattr(program, "modules", None)
        t0 = time.perf_counter()
        with progress.compiling(self.opts.name, what):
            out = build()
        stats.compile_seconds += time.perf_counter() - t0
        if program is None:           # a new program: new code unless its modules are known
            stats.compiles += self.owner._plans.new_code([out])
        elif program.modules != before:   # the tier moved to modules of its own
            stats.compiles += self.owner._plans.new_code([program])
        return out

    @property
    def joint_graph(self):
        """The forward and derived backward in one graph (for ``trace``), built when asked:
        the programs are compiled from the partitioned graphs, not from this one."""
        if self._joint is None:
            self._joint = optimize(autodiff.joint(self.traced)) if self.grad else self.fwd_graph
            self._joint.stages = self.stage_labels()
        return self._joint

    def stage_labels(self):
        """``{value: "forward kernel 0"}`` for the values each fused kernel computes, so
        the trace's picture can box them (a value recomputed later keeps its first box)."""
        labels = {}
        for role, prog in zip(("forward", "backward"), self.programs):
            for kind, st in getattr(prog, "steps", ()):
                if kind == "kernel":
                    for e in st.eqns:
                        labels.setdefault(e.out, f"{role} kernel {st.index}")
        return labels

    def schedule(self):
        from numgrad.compiler import schedule as _schedule
        graphs = (self.fwd_graph, self.bwd_graph) if self.grad else (self.fwd_graph,)
        out = []
        for role, prog, graph in zip(("fwd", "bwd"), self.programs, graphs):
            # The CPU backend keeps the schedule it rendered; others get one built here
            # (it does not depend on the backend).
            s = getattr(prog, "schedule", None)
            out.append(s if s is not None else _schedule.build(graph, self.opts.but(role=role)))
        return _schedule.Schedules(out)

    def source(self):
        roles = ("forward", "backward") if self.grad else ("forward",)
        return SourceText([(f"{r} program ({p.kernels} kernel{'s' if p.kernels != 1 else ''})",
                            p.source) for r, p in zip(roles, self.programs)])

    def _run_floats(self, leaves):
        """``run`` for a plan with traced floats: each becomes a 0-d input of its dtype (a
        host array, which CUDA kernels take by value; uploaded only to run the plan on a
        device other than cuda:0 that no tensor argument names)."""
        leaves = list(leaves)
        dev = self._scalar_device
        for i, dtype in self._float_dtypes:
            a = np.array(leaves[i], dtype)
            leaves[i] = Tensor._make(a if dev is None else devices.upload(a, dev))
        return Plan.run(self, leaves)

    def run(self, leaves):
        if self._one_output is not None:
            # The usual shape of a call: tensors in, one tensor out, nothing written back.
            tensors = [leaves[i] for i in self.tensor_pos]
            if self.captured:
                tensors += self.captured
            arrays = [_contiguous(t._data) for t in tensors]
            spec = self.spec
            if spec is not None and spec.on:
                res, grads = spec.run(arrays)
            else:
                res, grads = self.fwd(arrays), None
            if not self.grad:
                return Tensor._make(res[0])
            node = CompiledFunctionBackward(self, tensors, arrays, res[1:1 + self.n_saved])
            node._spec = grads
            if anomaly.enabled:
                anomaly.record(node)
            return Tensor._make(res[0], node, None, self._one_output)
        tensors = [leaves[i] for i in self.tensor_pos] + self.captured
        arrays = [_contiguous(t._data) for t in tensors]
        tr = self.traced
        res = self.fwd(arrays)
        n_out = self.n_out
        outs = res[:n_out]
        wb = res[n_out + self.n_saved:]
        # In-place ops on inputs write back now, as eager wrote them during the call; the
        # backward keeps the values it was computed from, and versions are read after.
        for (i, _), arr in zip(tr.writebacks, wb):
            t = tensors[i]
            if self.grad and arrays[i] is t._data:
                arrays[i] = arrays[i].copy()
            if type(t._data) is _ndarray:
                t._data[...] = arr
            else:  # a device payload: into its memory, its base's and its views' (on CUDA
                store_shared(t, arr)  # those are copies, but reshapes), as the CPU shares
            t._vc.value += tr.bumps[i] if tr.bumps else 1
        node = None
        if self.grad:
            saved = res[n_out:n_out + self.n_saved]
            node = CompiledFunctionBackward(self, tensors, arrays, saved)
        out_tensors = []
        for arr, alias, k in zip(outs[:tr.n_visible], self._out_alias, self._out_slot):
            if alias is not None:
                out_tensors.append(tensors[alias])
            elif node is not None and k is not None:
                out_tensors.append(Tensor._make(arr, node, None, k))
            else:
                out_tensors.append(Tensor._make(arr))
        for j, i in tr.hidden:
            # The caller's tensor now holds the in-place result: it takes over that history.
            t = tensors[i]
            t.grad_fn, t._output_nr, t._requires_grad = node, self._out_slot[j], True
            out_tensors.append(t)
        if node is not None and self.check_outputs:
            node.watch_outputs([(out_tensors[j], tr.out_fn_names[j]) for j in self.check_outputs])
        for i, hooks in tr.leaf_hooks:
            for h in hooks:
                tensors[i].register_hook(h)
        if self.out_tree is pytree.LEAF:
            return out_tensors[0]
        return pytree.unflatten(self.out_tree, out_tensors[:tr.n_visible])

    # ------------------------------------------------- create_graph support
    def differentiable_backward(self, tensors, grads):
        """The backward as a compiled, differentiable function (double backward)."""
        if self._bwd_fn is None:
            from numgrad.compiler.runtime import CompiledFunction
            self._bwd_fn = CompiledFunction(self._make_bwd_fn(), backend=self.owner.backend,
                                            **{k: getattr(self.owner.options, k)
                                               for k in ("parallel", "fastmath", "cache",
                                                         "vector_math")})
            # The traced floats come in as 0-d tensors: they still promote as numbers.
            self._bwd_fn._weak_leaves = frozenset(
                k for k, i in enumerate(self.tensor_pos)
                if i in self.weak or i in self.owner._weak_leaves)
        cts = []
        from numgrad.creation import zeros
        for k, j in enumerate(self.traced.cotangent_of):
            g = grads[k]
            if g is None:
                shape = self.traced.outputs[j].shape
                g = zeros(shape, dtype=self.traced.outputs[j].dtype, device=tensors[0].device)
            cts.append(g)
        return self._bwd_fn(*tensors, *cts)

    def _make_bwd_fn(self):
        fn, tree, template = self.owner.fn, self.tree, list(self.leaves_template)
        pos, n_args = self.tensor_pos, len(self.tensor_pos)
        n_t = n_args + len(self.captured)
        captured = list(self.captured)
        cot_of, grad_pos, hidden = self.traced.cotangent_of, self.grad_pos, self.traced.hidden

        def backward_of(*ts_and_cts):
            from numgrad.autograd import engine
            ts, cts = ts_and_cts[:n_t], ts_and_cts[n_t:]
            # The captured tensors come in as arguments: fn, which reads them from outside,
            # must see these stand-ins, so that the grads w.r.t. them are taken.
            tracer = current_tracer()
            if tracer is not None:
                for c, t in zip(captured, ts[n_args:]):
                    tracer.alias_capture(c, t)
            # Gradients are taken where the inputs enter, even if fn modifies them in place.
            wrt = [Tensor._make(t._data, t.grad_fn, t._vc, t._output_nr)
                   if t.grad_fn is not None else t for t in ts]
            leaves = list(template)
            for p, t in zip(pos, ts):
                leaves[p] = t
            a, k = pytree.unflatten(tree, leaves)
            _, out_leaves = pytree.flatten(fn(*a, **k))
            out_leaves = list(out_leaves) + [ts[i] for _, i in hidden]
            return tuple(engine.grad([out_leaves[j] for j in cot_of], [wrt[i] for i in grad_pos],
                                     grad_outputs=list(cts), create_graph=True,
                                     materialize_grads=True))
        backward_of.__name__ = f"{getattr(fn, '__name__', 'fn')}_backward"
        return backward_of


_active = threading.local()


def _backend_for(owner, tensors):
    """The backend of a plan: the function's own unless its tensors live on a CUDA device
    (then "cuda"); tensors on two devices raise PyTorch's error naming both."""
    devices = []
    for t in tensors:
        d = t.device
        if d not in devices:
            devices.append(d)
    want = owner.device
    if want is not None and str(want) != "cpu":
        from numgrad.tensor import device as _device
        want = _device(want)
        if want.index is None:
            want = _device("cuda", 0)
        if want not in devices:
            devices.insert(0, want)
    if len(devices) > 1:
        from numgrad.compiler.backends.cuda.eager import mismatch
        cuda = [d for d in devices if d.type == "cuda"]
        other = [d for d in devices if d is not cuda[0]]
        raise mismatch(cuda[0], other[0])
    if devices and devices[0].type == "cuda":
        if owner.backend not in ("cpu", "cuda"):
            raise RuntimeError(f"ng.jit(backend={owner.backend!r}) runs on the CPU only; call "
                               "it with CPU tensors, or leave backend unset for CUDA tensors")
        from numgrad.compiler.backends.cuda import device as cuda_device
        cuda_device.check(devices[0].index or 0)
        return "cuda"
    return owner.backend


def _saves_params(tr):
    # Eager nodes of these equations keep index arrays as saved tensors (PyTorch's
    # IndexBackward0 / CopySlices do): a second backward must fail there too.
    return any(e.prim.saves is not None and e.prim.saves(e.params)
               for e in tr.graph.eqns[:tr.n_fwd_eqns] if e.ann.get("grad"))


def active_backward_node():
    """The CompiledFunctionBackward whose program is running on this thread, if any."""
    return getattr(_active, "node", None)


class CompiledFunctionBackward(Node):
    """The backward of one compiled call; runs the compiled backward program."""

    __slots__ = ("_plan", "_tensors", "_arrays", "_saved", "_versions", "_outs", "_freed",
                 "_spec")

    def __init__(self, plan, tensors, arrays, saved):
        # Node.__init__, inlined: one of these is made per compiled call.
        self.next_functions = tuple([(t.grad_fn, t._output_nr) if t.grad_fn is not None
                                     else edge_of(t) for t in tensors])
        self._seq = next(_sequence)
        self._pre_hooks = None
        self._retained = None
        self._plan = plan
        self._tensors = tensors
        self._arrays = arrays
        self._saved = list(saved)
        self._versions = [(tensors[i], tensors[i]._vc.value) for i in plan.check_inputs]
        self._outs = []
        self._freed = False
        self._spec = None  # gradients for a cotangent of 1, computed by the call

    def name(self):
        return "CompiledFunctionBackward"

    @property
    def num_outputs(self):
        return len(self._plan.traced.cotangent_of)

    # Outputs the function also used itself have their hooks run inside the backward
    # program (where their whole gradient is known), so the engine must not run them.
    # NOTE: under create_graph the differentiable backward re-traces the function and
    # the engine runs them as usual, on the caller's gradient alone.
    def _runs_own_hooks(self, output_nr):
        return output_nr in self._plan.traced.probed and not is_grad_enabled()

    def _hooks_for(self, output_nr):
        return None if self._runs_own_hooks(output_nr) else Node._hooks_for(self, output_nr)

    def _retained_for(self, output_nr):
        return None if self._runs_own_hooks(output_nr) else Node._retained_for(self, output_nr)

    def watch_outputs(self, outs):
        # Eager mode saves these outputs; so the error names the op eager would name.
        self._outs = [(t._vc, t._vc.value, t._data, name) for t, name in outs]

    def _check_versions(self):
        for t, v in self._versions:
            if t._vc.value != v:
                self._raise_version(t._data, t._vc.value, v, t.grad_fn)
        for vc, v, data, name in self._outs:
            if vc.value != v:
                self._raise_version(data, vc.value, v, name or self.name())

    @staticmethod
    def _raise_version(data, now, expected, producer):
        what = describe(data, str(data.dtype))
        if producer is not None:
            name = producer if isinstance(producer, str) else producer.name()
            for suffix in ("Backward0", "Backward1", "Backward2", "Backward"):
                if name.endswith(suffix):
                    name = name[: -len(suffix)]
                    break
            what += f", which is output 0 of {name},"
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {what} is at version {now}; expected version {expected} "
            f"instead. {inplace_hint()}")

    def apply(self, grads):
        if self._freed:
            raise RuntimeError(_FREED)
        self._check_versions()
        plan = self._plan
        result = [None] * len(self._tensors)
        spec, self._spec = self._spec, None
        if spec is not None:
            plan.spec.pending -= 1
        if is_grad_enabled():  # create_graph: differentiate the backward itself
            gs = plan.differentiable_backward(self._tensors, grads)
            for i, g in zip(plan.grad_pos, gs):
                result[i] = g
            return result
        if plan.spec is not None and grads[0] is not None:
            if spec is not None and plan.spec.is_one(grads[0]._data):
                for i, r in zip(plan.grad_pos, spec):
                    result[i] = Tensor._make(r)
                return result
            plan.spec.saw_backward(grads[0]._data)
        args = self._arrays + self._saved
        for g, v in zip(grads, plan.cot_vars):
            if g is None:
                args.append(np.zeros(v.shape, v.dtype))
            else:  # backward(gradient) may pass another float dtype; torch casts it too
                d = g._data
                args.append(d if d.dtype == v.dtype else d.astype(v.dtype))
        if plan.traced.probed:  # output hooks run inside the program: tell them whose
            prev = getattr(_active, "node", None)
            _active.node = self
            try:
                res = plan.bwd(args)
            finally:
                _active.node = prev
        else:
            res = plan.bwd(args)
        make = Tensor._make
        for i, r in zip(plan.grad_pos, res):
            result[i] = make(r)
        return result

    def _release(self):
        if not self._plan.saves:
            return
        self._freed = True
        self._saved = None
        self._arrays = None
        self._spec = None

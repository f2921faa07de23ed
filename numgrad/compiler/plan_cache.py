"""compiler.plan_cache: a compiled function's plans, bounded, and why it keeps retracing.

Room: compiler. Each plan holds compiled kernels (a few MB of machine code and graphs),
so a function called with ever new shapes or constants would grow without bound.
``PlanCache`` keeps at most ``max_plans`` of them (``ng.jit(..., max_plans=N)``,
default ``DEFAULT_MAX_PLANS``), dropping the least recently used; a dropped signature
simply traces again if it comes back. It also times plan builds
(``stats.compile_seconds``), counts traces after the first (``stats.retraces``) and,
at the ``RETRACE_WARNING``-th retrace, warns once naming the argument whose changes
caused most of them.

It decides what varies, as torch.compile's automatic dynamic shapes do: the first shape
of some ranks gets a static-extent plan and a second makes the function shape-generic
(``wants_generic``); the first value of a Python float argument is a constant of its
plan, and a second value in a call of the same structure makes that argument a traced
0-d input from then on (``float_inputs``), unless it is static or the function needs it
as a Python number (``keep_constant``).
"""
from __future__ import annotations

import inspect
import logging
import sys
import warnings
from collections import OrderedDict

import numpy as np

import numgrad.config as config
from numgrad.compiler.guards import scalar_key
from numgrad.tensor import Tensor

DEFAULT_MAX_PLANS = 64
RETRACE_WARNING = 8
_log = logging.getLogger("numgrad.jit")
# Process-wide counts of the ``stats`` fields every CompiledFunction keeps, for tools that
# time a call without holding its function (bench/: did this first call compile?).
TOTALS = {"traces": 0, "compiles": 0}
# The types of a float argument that may become a traced value: Python's float and NumPy's
# float64 (a float subclass with the same arithmetic); a float32 scalar stays a constant.
FLOATS = (float, np.float64)


class PlanCache(OrderedDict):
    """signature key -> Plan, least recently used first; ``fast`` is a second index
    (the front door's flat key for all-tensor calls) into the same plans."""

    def __init__(self, max_plans=DEFAULT_MAX_PLANS):
        super().__init__()
        if max_plans is not None and (not isinstance(max_plans, int) or max_plans < 1):
            raise ValueError(f"max_plans must be a positive int or None, got {max_plans!r}")
        self.max_plans = max_plans
        self.fast = {}
        self.evictions = 0
        self._last = None        # the previous traced call's per-argument summary
        self._blame = {}         # argument name -> retraces its change took part in
        self._warned = False
        self._shapes = {}        # ranks key -> the first tensor shapes traced with them
        self._modules = set()    # kernel modules this function's plans have used
        self.dynamic = {}        # tree -> leaf positions of floats traced as 0-d inputs
        self.fast_dynamic = {}   # n -> the same, for a call of n positional leaves (the
        #                          front door's fast key)
        self._first = {}         # (tree, leaf position) -> key of the first float there
        self._constant = {}      # tree -> float positions the function needs as numbers
        self._noted_batch = False  # said that a DataLoader's other batch size compiled

    def get(self, key, default=None):
        plan = OrderedDict.get(self, key)
        if plan is None:
            return default
        self.move_to_end(key)
        return plan

    def __setitem__(self, key, plan):
        OrderedDict.__setitem__(self, key, plan)
        try:
            plan._lru_key = key
        except AttributeError:
            pass
        while self.max_plans is not None and len(self) > self.max_plans:
            _, old = self.popitem(last=False)
            self.evictions += 1
            self._unindex(old)

    def drop(self, doomed):
        """Forget the plans whose signature keys ``doomed(key)`` picks: signatures no call
        can have any more (a float's first-value plan, once that float is traced)."""
        for key in [k for k in self if doomed(k)]:
            self._unindex(OrderedDict.pop(self, key))

    def _unindex(self, old):
        for k in [k for k, p in self.fast.items() if p is old]:
            del self.fast[k]

    def touch(self, plan):
        """Mark ``plan`` (found through ``fast``) as just used."""
        self.move_to_end(plan._lru_key)

    # ----------------------------------------------------- shape-generic plans
    def wants_generic(self, tree, leaves, grad, weak=frozenset()):
        """Whether the plan about to be built should read its extents at run time: the
        function was traced before for other shapes of the same ranks (torch.compile's
        automatic dynamic shapes), or a tensor of the call is marked as varying
        (``Tensor._ng_dynamic``, set by ``DataLoader``). Else the first shape keeps its
        static-extent plan. ``weak``: positions of floats traced as values."""
        key, shapes = _ranks_key(tree, leaves, grad, weak)
        if self._shapes.setdefault(key, shapes) != shapes:
            return True
        # A tensor marked as varying (a DataLoader batch whose last batch is smaller):
        # generic from its first shape, so the other shape reuses the kernels.
        return any(getattr(x, "_ng_dynamic", None) for x in leaves if isinstance(x, Tensor))

    # ------------------------------------------------ Python floats as values
    def float_inputs(self, tree, leaves, static=frozenset()):
        """Leaf positions of the floats this call traces as 0-d inputs: each float seen
        before, in a call of the same tree, with other bits (so 0.0 and -0.0 differ, NaN
        matches NaN). The first value stays a constant of its plan. ``static``: positions
        that are always constants (``static_argnums`` / ``static_argnames``)."""
        keep = static | self._constant.get(tree, frozenset())
        dyn = set(self.dynamic.get(tree, ()))
        for i, x in enumerate(leaves):
            if i in keep or i in dyn or type(x) not in FLOATS:
                continue
            k = scalar_key(float(x))
            if self._first.setdefault((tree, i), k) != k:
                dyn.add(i)
        self._set_dynamic(tree, dyn - keep)
        return frozenset(i for i in self.dynamic.get(tree, ()) if type(leaves[i]) in FLOATS)

    def keep_constant(self, tree, positions):
        """The function needs the floats at ``positions`` as Python numbers (an ``if``,
        ``math.exp``): constants of every later plan of this tree."""
        self._constant[tree] = self._constant.get(tree, frozenset()) | positions
        self._set_dynamic(tree, set(self.dynamic.get(tree, ())) - positions)

    def _set_dynamic(self, tree, dyn):
        if dyn:
            self.dynamic[tree] = frozenset(dyn)
        else:
            self.dynamic.pop(tree, None)
        n = _positional_leaves(tree)
        if n is not None:
            if dyn:
                self.fast_dynamic[n] = frozenset(dyn)
            else:
                self.fast_dynamic.pop(n, None)

    def new_code(self, programs):
        """1 if building these programs compiled (or loaded) kernels this function had
        not used before, else 0: a shape-generic plan for one more shape traces again but
        reuses the generic kernels (same source, same module). A program without module
        names (llvmlite kernels, a fallback) counts as new code."""
        names = set()
        for p in programs:
            mods = getattr(p, "modules", None)
            if not mods:
                return 1
            names.update(mods)
        # (A program that moves to its threaded tier's modules reports them here too:
        # plan.Plan.late.)
        new = names - self._modules
        self._modules |= names
        TOTALS["compiles"] += bool(new)
        return 1 if new else 0

    # ------------------------------------------------------------ retraces
    def traced(self, owner, args, kwargs, grad, seconds):
        """Account for one new plan built in ``seconds`` for this call."""
        stats = owner.stats
        stats.compile_seconds += seconds
        TOTALS["traces"] += 1
        summary = _summary(owner.fn, args, kwargs, grad)
        last, self._last = self._last, summary
        if last is None:
            return
        stats.retraces += 1
        changed = _changed(last, summary)
        for name in changed:
            self._blame.setdefault(name, []).append((last.get(name), summary.get(name)))
        if stats.retraces >= RETRACE_WARNING and not self._warned and self._blame:
            self._warned = True
            name, seen = max(self._blame.items(), key=lambda kv: len(kv[1]))
            before, after = seen[-1]
            fname = getattr(owner.fn, "__qualname__", getattr(owner.fn, "__name__", "fn"))
            warnings.warn(
                f"ng.jit({fname}) has been traced {stats.retraces + 1} times; "
                f"{_what(name)} changed in {len(seen)} of those retraces "
                f"(last: {before} -> {after}). Each new signature is traced again (and "
                "compiled, unless a shape-generic plan covers its shapes). A Python float "
                "argument becomes a traced value once it varies, unless it is in "
                "static_argnums/static_argnames or the function needs it as a Python "
                "number (an `if`, math.*, an op's number parameter); ints, bools, strings "
                "and other values are always constants: keep it fixed, or pass a "
                "changing number as a 0-d tensor (ng.tensor(v)).",
                RuntimeWarning, stacklevel=5)

    def retracing(self, owner, args, kwargs, grad, stale):
        """Say why this call traces again (before it does): ``stale`` is the failed guard of
        its plan, else the arguments changed from the last trace's. Printed with
        ``verbose=True`` or ``NUMGRAD_LOG_RECOMPILES=1`` (PyTorch's ``TORCH_LOGS=recompiles``)
        and logged to the ``numgrad.jit`` logger at INFO in any case."""
        if self._last is None:
            return
        if stale is None:
            summary = _summary(owner.fn, args, kwargs, grad)
            stale = "; ".join(
                f"{_what(n)}: was {self._last.get(n, 'absent')}, now {summary.get(n, 'absent')}"
                for n in _changed(self._last, summary)) or "its plan was evicted from the cache"
        fname = getattr(owner.fn, "__qualname__", getattr(owner.fn, "__name__", "fn"))
        text = f"{fname} traced again: {stale}"
        _log.info(text)
        if owner.verbose or config.get("NUMGRAD_LOG_RECOMPILES"):
            print(f"[numgrad.jit] {text}", file=sys.stdout if owner.verbose else sys.stderr)

    def batch_compiled(self, owner, tree, leaves, grad, weak, seconds):
        """A plan for this call just compiled new kernels: if its tensors come from a
        DataLoader whose last batch is smaller (marked) and this is another batch size
        than the first, say once that the function is not fully shape-generic and that
        ``drop_last=True`` avoids the compile."""
        marked = [i for i, x in enumerate(x for x in leaves if isinstance(x, Tensor))
                  if getattr(x, "_ng_dynamic", None)]
        if self._noted_batch or not marked:
            return
        key, shapes = _ranks_key(tree, leaves, grad, weak)
        first = self._shapes.get(key)
        i = marked[0]
        if first is None or first[i][:1] == shapes[i][:1]:
            return
        self._noted_batch = True
        fname = getattr(owner.fn, "__qualname__", getattr(owner.fn, "__name__", "fn"))
        warnings.warn(
            f"ng.jit({fname}): a DataLoader batch of {shapes[i][0]} (the first had "
            f"{first[i][0]}) needed kernels of its own ({seconds:.1f} s): the kernels "
            "depend on the batch size beyond the extents they read at run time (a reshape's "
            "size, or a first batch size equal to another extent, is compiled in). "
            "DataLoader(..., drop_last=True) keeps every batch one size and avoids this "
            "compile.", RuntimeWarning, stacklevel=5)


def _positional_leaves(tree):
    """n for the tree of a call with n positional arguments, each a leaf, and no keywords
    (the front door's fast path keys those), else None."""
    args, kwargs = tree.children
    if kwargs.children or any(c.kind != "leaf" for c in args.children):
        return None
    return len(args.children)


def _ranks_key(tree, leaves, grad, weak=frozenset()):
    key, shapes = [tree, grad], []
    for i, x in enumerate(leaves):
        if i in weak:
            key.append("F")  # a float traced as a value
        elif isinstance(x, Tensor):
            d = x._data
            key.append(("T", d.ndim, d.dtype.str, x._requires_grad, str(x.device)))
            shapes.append(d.shape)
        else:
            text = repr(x)  # only decides whether to go generic, never what runs
            key.append(("C", type(x).__name__, text[:200]))
    return tuple(key), tuple(shapes)


def _changed(last, summary):
    return ([n for n in summary if summary[n] != last.get(n)]
            + [n for n in last if n not in summary])


def _what(name):
    return "grad mode" if name == "<grad mode>" else f"argument {name!r}"


def _summary(fn, args, kwargs, grad):
    """{argument name: a short description of what the signature key sees of it}."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {f"#{i}": a for i, a in enumerate(args)}
        bound.update(kwargs)
    out = {name: _describe(v) for name, v in bound.items()}
    out["<grad mode>"] = "on" if grad else "off"
    return out


def _describe(x, depth=0):
    if isinstance(x, Tensor):
        d = x._data
        return (f"{d.dtype.name}{list(d.shape)}"
                + (" requires_grad" if x._requires_grad else ""))
    if isinstance(x, (tuple, list)) and depth < 3:
        inner = ", ".join(_describe(v, depth + 1) for v in x[:8])
        return f"{type(x).__name__}({inner}{', ...' if len(x) > 8 else ''})"
    if isinstance(x, dict) and depth < 3:
        return "{" + ", ".join(f"{k!r}: {_describe(v, depth + 1)}"
                               for k, v in list(x.items())[:8]) + "}"
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."

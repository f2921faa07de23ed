"""compiler.plan_cache: a compiled function's plans, bounded, and why it keeps retracing.

Room: compiler. Each plan holds compiled kernels (a few MB of machine code and graphs),
so a function called with ever new shapes or constants would grow without bound.
``PlanCache`` keeps at most ``max_plans`` of them (``ng.jit(..., max_plans=N)``,
default ``DEFAULT_MAX_PLANS``), dropping the least recently used; a dropped signature
simply traces again if it comes back. It also times plan builds
(``stats.compile_seconds``), counts traces after the first (``stats.retraces``) and,
at the ``RETRACE_WARNING``-th retrace, warns once naming the argument whose changes
caused most of them.
"""
from __future__ import annotations

import inspect
import warnings
from collections import OrderedDict

DEFAULT_MAX_PLANS = 64
RETRACE_WARNING = 8


class PlanCache(OrderedDict):
    """signature key -> Plan, least recently used first; ``fast`` is a second index
    (the runtime's flat key for all-tensor calls) into the same plans."""

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
            for k in [k for k, p in self.fast.items() if p is old]:
                del self.fast[k]

    def touch(self, plan):
        """Mark ``plan`` (found through ``fast``) as just used."""
        self.move_to_end(plan._lru_key)

    # ----------------------------------------------------- shape-generic plans
    def wants_generic(self, tree, leaves, grad):
        """Whether the plan about to be built should read its extents at run time: the
        function was traced before for other shapes of the same ranks (torch.compile's
        automatic dynamic shapes). The first shape keeps its static-extent plan."""
        key, shapes = _ranks_key(tree, leaves, grad)
        return self._shapes.setdefault(key, shapes) != shapes

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
        # runtime.Plan.late.)
        new = names - self._modules
        self._modules |= names
        return 1 if new else 0

    # ------------------------------------------------------------ retraces
    def traced(self, owner, args, kwargs, grad, seconds):
        """Account for one new plan built in ``seconds`` for this call."""
        stats = owner.stats
        stats.compile_seconds += seconds
        summary = _summary(owner.fn, args, kwargs, grad)
        last, self._last = self._last, summary
        if last is None:
            return
        stats.retraces += 1
        changed = [name for name in summary if summary[name] != last.get(name)]
        changed += [name for name in last if name not in summary]
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
                "compiled, unless a shape-generic plan covers its shapes): keep it "
                "fixed, or pass a changing number as a tensor.",
                RuntimeWarning, stacklevel=4)


def _ranks_key(tree, leaves, grad):
    from numgrad.tensor import Tensor
    key, shapes = [tree, grad], []
    for x in leaves:
        if isinstance(x, Tensor):
            d = x._data
            key.append(("T", d.ndim, d.dtype.str, x._requires_grad, str(x.device)))
            shapes.append(d.shape)
        else:
            text = repr(x)  # only decides whether to go generic, never what runs
            key.append(("C", type(x).__name__, text[:200]))
    return tuple(key), tuple(shapes)


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
    from numgrad.tensor import Tensor
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

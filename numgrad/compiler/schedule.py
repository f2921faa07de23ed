"""compiler.schedule: the fusion plan of a graph, as data every backend renders.

Room: compiler. Imports the IR and the op registry, never a backend. ``build(graph,
options)`` decides everything about fusion once: which equations run in kernels and
which on the host between them, how a kernel's equations fall into loops, what each
loop reads, computes, reduces and writes, and the facts a backend needs to decide
parallelism. A backend (``backends.cpu.renderer``, a CUDA renderer) turns a ``Schedule`` into
source and decides nothing about fusion itself. ``print(schedule)`` lists it.

The data, top down (all plain classes with public attributes; names are stable)::

    Schedule                     one graph (a forward or a backward program)
      .name, .role               function name and "fwd"/"bwd": kernel names derive from them
      .graph                     the graph the steps run (after schedule-level passes)
      .steps: [Kernel | HostStep] in run order
      .generic                   extents are read from the inputs at run time
      .parallel                  parallel loops allowed at all (options.parallel)
      .min_work                  work (elements x weight) from which a loop goes parallel
      .blas                      a host step calls BLAS (hence the higher min_work)
    HostStep(eqn)                runs on the host between kernels: the op's NumPy impl,
                                 or its declared effect (hook: call the user's hook)
    Kernel                       one fused function (numba.njit / a CUDA launch group)
      .index, .eqns              position among kernels; the equations it fuses
      .inputs / .outputs: [Var]  arrays passed in / values returned (in this order)
      .literals: {Var: Literal}  size-1 constants spelled as typed literals, never passed
                                 (a generic plan's shape constants are inputs: ``build``)
      .extents: [(n, Var, dim)]  generic plans: each extent other than 1 an input has, read
                                 from that input's shape at run time (in this order)
      .body: [Loop | Alias]      in order
      .parallel                  any loop in it is parallel
      .name                      set by the renderer (backend naming)
    Alias(out, src, fill)        a layout op inside a kernel (reshape): ``out`` shares
                                 ``src``'s flat data; ``fill`` (a Literal) if ``src`` is a
                                 literal constant that must first become an array
    Loop                         one pass over an iteration space
      .index                     its number within the kernel (names per-loop temporaries)
      .shape                     the iteration space (canonical: 0-d is (1,))
      .flat                      True: one flat index over prod(shape), every array read
                                 has the loop's shape or one element; False: nested
                                 indices, one per dim, arrays broadcast by their own shape
      .allocs: [Alloc]           arrays the loop writes, allocated before it
      .hoisted: [Ref]            one-element values read once before the loop
      .body: [Stmt | Reduce]     in dataflow order
      .weight, .work             sum of the members' cost weights; elements x weight
      .parallel                  run the outer index in parallel
      .runtime_size              generic plan: choose parallel vs serial at run time by
                                 ``size * weight >= min_work`` (render both)
      .chunked, .chunks, .chunk_size   fixed chunks of the outer index (static plans;
                                 generic ones compute the same formula at run time):
                                 each chunk reduces into its own slot, summed in order,
                                 so the bits never depend on the thread count
      .outlined                  the chunk body goes into a function of its own
      .streams                   interleaved element streams in that function (1: none)
      .paired: {Var}             arguments whose sin and cos are both taken in the loop
    Stmt                         ``out = op(args...)`` for one element
      .out, .op, .args: [Ref], .params, .dtype, .eqn
      .store                     also written to ``out``'s array (needed after the loop)
      .paired                    a sin/cos whose partner on the same argument is in the loop
    Reduce                       a reduction folded into the loop that makes its input
      .out, .op, .arg: Ref, .dtype, .eqn
      .combine                   the registry's combine (an elementwise Primitive: add,
                                 maximum...); .additive: it is +
      .identity: Literal         the accumulator's start value
      .full                      True: into a scalar accumulator (one output element);
                                 False: into the output element at ``keep`` (partial)
      .keep                      the input shape with reduced dims as 1 (partial)
      .mean                      divide by ``count`` at the end; ``count``: elements per
                                 output (static plans)
    Ref(kind, var, shape, literal) an operand: kind "local" (computed earlier in this
                                 loop), "scalar" (hoisted one-element read; printed $x),
                                 "literal" (a constant, ``literal`` is its Literal),
                                 "array" (read at the loop's indices, broadcast by
                                 ``shape``; printed @x)
    Alloc(var, fill)             an array to allocate (``fill``: a Literal, or None)
    Literal(value, dtype)        a typed constant; backends spell it

Scalar lowering is the registry's: ``op.scalar(args, dtype, params, lit)`` gives a
Stmt's expression from its operand expressions (``backends.cpu.scalar`` holds the helpers
it names). The renderer only spells indices, arrays and literals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from numgrad.compiler.options import Options
from numgrad.compiler.passes.detach_copies import drop_detach_copies

# Dtypes kernels handle (others run their equations on the host).
KERNEL_DTYPES = frozenset({"float32", "float64", "int64", "int32", "int16", "int8", "uint8",
                           "bool"})

# Work (elements x op weight) per loop before a parallel loop pays: below it the thread
# pool costs more than it saves (docs/design-notes.md, "Parallel thresholds").
PARALLEL_MIN_WORK = 1 << 17
# ... and in a plan that also calls BLAS (matmul between stages): OpenBLAS's workers
# busy-wait after each call and fight Numba's prange workers for the cores, so only
# kernels big enough to dwarf that go parallel there (same section).
PARALLEL_MIN_WORK_BESIDE_BLAS = 1 << 22
# A parallel loop body over this many statements goes into a chunk function (over
# [lo, lo + m) of the outer index) that the parallel loop calls: its array arguments are
# marked noalias (llvm_attrs.noalias_args) and it walks interleaved element streams, so
# it runs faster; but Numba compiles a called function's machine code twice, so short
# bodies stay inline, and very long ones must go out anyway (docs/design-notes.md,
# "Chunk functions and streams").
PARALLEL_INLINE_MAX_BODY = 24
# Two streams: four no longer fit the registers and compile far longer (same section).
STREAMS = 2
# A parallel flat loop whose transcendentals weigh at least this much (the registry's
# weights, 8 per transcendental) goes into a chunk function as two streams even when its
# body is short (None: only long bodies do). A vectorised sin -> tanh -> exp chain is one
# long dependency chain per vector, and a second stream overlaps it. Such a loop is an
# llvm.body body, so a schedule of them is an llvm.kernel one, built without Numba
# (docs/design-notes.md, "Chunk functions and streams").
INTERLEAVE_MIN_HEAVY_WEIGHT = 16
# Chunks of a parallel loop's outer index: fixed, so that results do not depend on the
# thread count; enough to balance 2-16 threads.
PARALLEL_CHUNKS = 64


def cshape(shape):
    """The shape a value has inside a kernel: 0-d values are 1-element arrays."""
    return tuple(shape) if shape else (1,)


def _size(shape):
    return math.prod(shape) if shape else 1


# ------------------------------------------------------------------ the data
@dataclass(frozen=True)
class Literal:
    value: object
    dtype: np.dtype

    def __str__(self):
        v = self.value.item() if isinstance(self.value, np.generic) else self.value
        return f"{v!r}:{np.dtype(self.dtype).name}"


@dataclass
class Ref:
    kind: str                 # "local" | "scalar" | "literal" | "array"
    var: object
    shape: tuple = ()
    literal: Literal | None = None

    def __str__(self):
        if self.kind == "literal":
            return str(self.literal)
        mark = {"local": "", "scalar": "$", "array": "@"}[self.kind]
        return f"{mark}{self.var.name}"


@dataclass
class Alloc:
    var: object
    fill: Literal | None = None


@dataclass
class Stmt:
    out: object
    op: object
    args: list
    params: dict
    dtype: np.dtype
    eqn: object
    store: bool = False
    paired: bool = False

    def __str__(self):
        p = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if not k.startswith("_"))
        return (f"{self.out.name} = {self.op.name}{f'[{p}]' if p else ''} "
                + " ".join(map(str, self.args)) + ("  (paired)" if self.paired else "")
                + ("  -> store" if self.store else ""))


@dataclass(frozen=True, kw_only=True)
class Reduce:
    out: object
    op: object
    arg: Ref
    dtype: np.dtype
    eqn: object
    combine: object
    identity: Literal
    full: bool
    keep: tuple = ()
    mean: bool = False
    count: int = 1
    additive: bool = False

    def __str__(self):
        where = f"acc {self.out.name}" if self.full else f"{self.out.name}[keep={self.keep}]"
        return (f"{where} {self.combine.name}= {self.arg}  ({self.op.name}, from "
                f"{self.identity}{', / count' if self.mean else ''})")


@dataclass
class Loop:
    index: int
    shape: tuple
    flat: bool
    allocs: list = field(default_factory=list)
    hoisted: list = field(default_factory=list)
    body: list = field(default_factory=list)
    weight: int = 0
    work: int = 0
    parallel: bool = False
    runtime_size: bool = False
    chunked: bool = False
    chunks: int | None = None
    chunk_size: int | None = None
    outlined: bool = False
    streams: int = 1
    paired: set = field(default_factory=set)

    @property
    def full_reductions(self):
        return [s for s in self.body if isinstance(s, Reduce) and s.full]

    @property
    def partial_reductions(self):
        return [s for s in self.body if isinstance(s, Reduce) and not s.full]

    @property
    def outer(self):
        """Static trip count of the outer index."""
        return _size(self.shape) if self.flat else self.shape[0]

    def lines(self):
        how = "flat" if self.flat else "nested"
        par = ""
        if self.parallel:
            par = " parallel" + (" (size decided at run time)" if self.runtime_size else "")
            if self.chunked:
                par += f", {self.chunks or '?'} chunks of {self.chunk_size or '?'}"
            if self.outlined:
                par += f", outlined, {self.streams} streams"
        out = [f"loop {self.index} over {self.shape} {how}, work {self.work}{par}"]
        out += [f"  alloc {a.var.name}" + (f" = {a.fill}" if a.fill else "")
                for a in self.allocs]
        out += [f"  hoist {r}" for r in self.hoisted]
        out += [f"  {s}" for s in self.body]
        return out


@dataclass
class Alias:
    out: object
    src: object
    eqn: object
    fill: Literal | None = None

    def lines(self):
        return [f"alias {self.out.name} = {self.src.name} as {self.out.shape}"
                + (f" (materialise {self.fill})" if self.fill else "")]


@dataclass
class Kernel:
    index: int
    eqns: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    literals: dict = field(default_factory=dict)
    body: list = field(default_factory=list)
    extents: list = field(default_factory=list)  # generic: (extent, input Var, dim), in order
    name: str | None = None
    fn: object = None   # the loaded function (set by the backend)
    ir_specs: dict = field(default_factory=dict)  # loop index -> cpu.llvm.body spec

    @property
    def parallel(self):
        return any(isinstance(b, Loop) and b.parallel for b in self.body)

    def lines(self):
        ins = ", ".join(v.name for v in self.inputs)
        outs = ", ".join(v.name for v in self.outputs)
        out = [f"kernel {self.index} ({ins}) -> ({outs})"]
        for b in self.body:
            out += ["  " + line for line in b.lines()]
        return out


@dataclass
class HostStep:
    eqn: object

    def lines(self):
        return [f"host {self.eqn.format()}"]


@dataclass
class Schedule:
    name: str
    role: str
    graph: object
    steps: list
    generic: bool = False
    parallel: bool = True
    min_work: int = PARALLEL_MIN_WORK
    blas: bool = False

    @property
    def kernels(self):
        return [s for s in self.steps if isinstance(s, Kernel)]

    def __str__(self):
        head = (f"schedule {self.name} ({self.role}): {len(self.kernels)} kernel(s), "
                f"{len(self.steps) - len(self.kernels)} host step(s)"
                + (", generic extents" if self.generic else ""))
        out = [head]
        for s in self.steps:
            out += s.lines()
        return "\n".join(out)

    __repr__ = __str__


class Schedules(tuple):
    """A plan's schedules (forward, backward): ``compiled.schedule(*args)``."""

    def __str__(self):
        return "\n\n".join(str(s) for s in self)

    __repr__ = __str__


# ------------------------------------------------------------------ classify
def lowerable(e):
    """Can this equation run inside a kernel? (The registry says by its role.)"""
    p = e.prim
    if p.role not in ("elementwise", "reduction", "layout"):
        return False
    if e.out.dtype.name not in KERNEL_DTYPES or any(v.dtype.name not in KERNEL_DTYPES
                                                    for v in e.inputs):
        return False
    return p.role != "elementwise" or p.scalar is not None


def _literal(graph, v, shape_inputs):
    """The Literal a kernel spells for the value ``v``, or None where it is not a
    one-element constant or, with ``shape_inputs``, is one computed from shapes."""
    if v not in graph.consts or _size(v.shape) != 1 or (shape_inputs and v.from_shape):
        return None
    return Literal(graph.consts[v].reshape(-1)[0], v.dtype)


def split_stages(graph, shape_inputs=False):
    """Steps in order: ``Kernel`` (its eqns, inputs, outputs) or ``HostStep``.
    ``shape_inputs``: one-element constants computed from shapes (``Var.from_shape``)
    are kernel inputs, first, rather than literals (``build``)."""
    steps, cur, n = [], None, 0
    for e in graph.eqns:
        if lowerable(e):
            if cur is None:
                cur = Kernel(n)
                n += 1
                steps.append(cur)
            cur.eqns.append(e)
        else:
            cur = None
            steps.append(HostStep(e))
    later_use = {}
    for pos, step in enumerate(steps):
        for e in (step.eqns if isinstance(step, Kernel) else [step.eqn]):
            for v in e.inputs:
                later_use.setdefault(v, []).append(pos)
    outs = set(graph.outputs)
    for pos, k in enumerate(steps):
        if not isinstance(k, Kernel):
            continue
        produced = {e.out for e in k.eqns}
        seen = set()
        for e in k.eqns:
            for v in e.inputs:
                if v not in produced and v not in seen:
                    lit = _literal(graph, v, shape_inputs)
                    if lit is not None:
                        k.literals[v] = lit
                        continue  # small constants become literals
                    seen.add(v)
                    k.inputs.append(v)
        if shape_inputs:
            # Shape constants first: a Program binds them once, ahead of the call's
            # arrays (backends.cpu.program: the single-kernel fast path stays one call).
            k.inputs.sort(key=lambda v: not (v in graph.consts and v.from_shape))
        k.outputs = [e.out for e in k.eqns
                     if e.out in outs or any(p > pos for p in later_use.get(e.out, ()))]
        for v in k.outputs:
            lit = _literal(graph, v, shape_inputs)
            if lit is not None:
                k.literals[v] = lit
    return steps


# ------------------------------------------------------------------- groups
class _Group:
    def __init__(self, shape):
        self.shape = shape
        self.members = []
        self.red_outs = set()
        self.closed = False


def _sink_reduction_consumers(eqns):
    """The equations in a dataflow-equivalent order where those that use a reduction's
    result, and that nothing else needs before the end, come last.

    A value computed from a sum (the loss of a value_and_grad, say) would otherwise close
    the loop that computes the sum as soon as it appears, and every later equation of
    that loop's shape would start a second loop, reading back values the first one had
    to write out (docs/design-notes.md, "Reductions last")."""
    reds = {e.out for e in eqns if e.prim.role == "reduction"}
    tainted = set()
    for e in eqns:
        if any(v in reds or v in tainted for v in e.inputs):
            tainted.add(e.out)
    users = {}
    for e in eqns:
        for v in e.inputs:
            users.setdefault(v, []).append(e)
    sink = set()
    for e in reversed(eqns):
        if e.out in tainted and all(u.out in sink for u in users.get(e.out, ())):
            sink.add(e.out)
    return [e for e in eqns if e.out not in sink] + [e for e in eqns if e.out in sink]


def group_stage(eqns):
    """Assign a kernel's equations to loop groups: ``[("group", _Group) | ("layout", Eqn)]``
    in emission order."""
    order, open_by_shape, producer = [], {}, {}

    def close(g):
        if not g.closed:
            g.closed = True
            open_by_shape.pop(g.shape, None)
            order.append(("group", g))

    for e in _sink_reduction_consumers(eqns):
        role = e.prim.role
        if role == "layout":
            for v in e.inputs:
                pg = producer.get(v)
                if pg is not None:
                    close(pg)
            order.append(("layout", e))
            continue
        shape = cshape(e.inputs[0].shape if role == "reduction" else e.out.shape)
        g = open_by_shape.get(shape)
        for v in e.inputs:
            pg = producer.get(v)
            if pg is None or pg.closed:
                continue
            if pg is g and v not in g.red_outs:
                continue
            close(pg)
            if pg is g:
                g = None
        if g is None or g.closed:
            g = _Group(shape)
            open_by_shape[shape] = g
        g.members.append(e)
        producer[e.out] = g
        if role == "reduction":
            g.red_outs.add(e.out)
    for g in list(open_by_shape.values()):
        close(g)
    return order


# ------------------------------------------------------------------- loops
def _keep_shape(e):
    x = e.inputs[0].shape
    dim = e.params.get("dim")
    return tuple(1 if (dim is None or i in dim) else s for i, s in enumerate(x))


def _identity(e):
    return Literal(e.prim.reduce.identity(e.out.dtype), e.out.dtype)


def _loop(index, g, kernel, graph, needed_outside, materialized, sched):
    S = g.shape
    N = _size(S)
    members = g.members
    produced = {m.out for m in members}
    flat = True
    for e in members:
        if (e.prim.role == "reduction" and e.params.get("dim") is not None
                and _size(e.out.shape) != 1):
            flat = False
        for v in e.inputs:
            if v not in produced and _size(v.shape) != 1 and cshape(v.shape) != S:
                flat = False
    loop = Loop(index, S, flat)
    # Ops of a pair (sin and cos: ``pairs=("sincos", slot)``) on the same argument.
    trig = {(e.prim.cost.pairs, e.inputs[0]) for e in members if e.prim.cost.pairs}
    loop.paired = {v for (grp, slot), v in trig if slot == 0 and ((grp, 1), v) in trig}
    reds = [e for e in members if e.prim.role == "reduction"]
    full_reds = [e for e in reds if _size(e.out.shape) == 1]
    part_reds = [e for e in reds if _size(e.out.shape) != 1]
    only_sums = all(e.prim.reduce.additive for e in reds)
    loop.weight = sum(e.prim.cost.weight for e in members)
    loop.work = N * loop.weight
    # A generic plan decides at run time when the loop's size does (both loops rendered).
    runtime = {s for s, _, _ in kernel.extents}
    loop.runtime_size = sched.generic and any(s in runtime for s in S)
    loop.parallel = bool(
        sched.parallel and (loop.work >= sched.min_work or loop.runtime_size) and only_sums
        and (flat or not reds or all(0 not in (e.params.get("dim") or (0,)) for e in part_reds)
             and not full_reds))
    loop.runtime_size = loop.runtime_size and loop.parallel
    loop.allocs = [Alloc(e.out) for e in members
                   if e.prim.role == "elementwise" and e.out in needed_outside]
    loop.allocs += [Alloc(e.out, _identity(e)) for e in part_reds]
    hoisted = {}
    for e in members:
        for v in e.inputs:
            if v in produced or v in hoisted:
                continue
            if v in kernel.literals:
                hoisted[v] = Ref("literal", v, v.shape, kernel.literals[v])
            elif _size(v.shape) == 1:
                hoisted[v] = Ref("scalar", v, v.shape)
    loop.hoisted = list(hoisted.values())
    # A parallel loop with a full reduction runs in fixed chunks of the outer index,
    # each reducing into its own slot, summed in order afterwards: the chunking does
    # not depend on the thread count, and serially (the serial tier) the loop gives the
    # same bits. Loops without one need no chunks for that and run faster without
    # (docs/design-notes.md, "Chunks only for sums"); long bodies are chunked anyway, to
    # be outlined.
    long_body = len(members) > PARALLEL_INLINE_MAX_BODY
    heavy = sum(e.prim.cost.weight for e in members if e.prim.cost.weight > 1)
    interleave = (loop.parallel and flat
                  and (long_body or (INTERLEAVE_MIN_HEAVY_WEIGHT is not None
                                    and heavy >= INTERLEAVE_MIN_HEAVY_WEIGHT)))
    loop.chunked = loop.parallel and bool(full_reds or long_body or interleave)
    if loop.chunked and not sched.generic:
        outer = loop.outer
        loop.chunk_size = -(-outer // min(outer, PARALLEL_CHUNKS))
        loop.chunks = -(-outer // loop.chunk_size)
    loop.outlined = loop.chunked and (long_body or interleave)
    loop.streams = STREAMS if interleave else 1
    local = set()

    def ref(v):
        if v in local:
            return Ref("local", v, v.shape)
        if v in hoisted:
            return hoisted[v]
        return Ref("array", v, v.shape)

    for e in members:
        if e.prim.role == "reduction":
            r = e.prim.reduce
            loop.body.append(Reduce(
                out=e.out, op=e.prim, arg=ref(e.inputs[0]), dtype=e.out.dtype, eqn=e,
                combine=r.combine, identity=_identity(e), full=e in full_reds,
                keep=_keep_shape(e), mean=r.mean,
                count=_size(e.inputs[0].shape) // max(_size(e.out.shape), 1),
                additive=r.additive))
            continue
        loop.body.append(Stmt(e.out, e.prim, [ref(v) for v in e.inputs], dict(e.params),
                              e.out.dtype, e, store=e.out in needed_outside,
                              paired=bool(e.prim.cost.pairs) and e.inputs[0] in loop.paired))
        local.add(e.out)
    materialized.update(produced)
    return loop


def _plan_kernel(kernel, graph, sched):
    if sched.generic:
        seen = set()
        for v in kernel.inputs:
            for d, s in enumerate(cshape(v.shape)):
                if s != 1 and s not in seen:
                    seen.add(s)
                    kernel.extents.append((s, v, d))
    order = group_stage(kernel.eqns)
    needed_outside = set(kernel.outputs)
    member_of = {}
    for kind, obj in order:
        if kind == "group":
            for e in obj.members:
                member_of[e.out] = obj
    for kind, obj in order:
        if kind == "layout":
            needed_outside.update(obj.inputs)
        else:
            for e in obj.members:
                for v in e.inputs:
                    if member_of.get(v) is not None and member_of[v] is not obj:
                        needed_outside.add(v)
    materialized = set(kernel.inputs)
    n = 0
    for kind, obj in order:
        if kind == "layout":
            src = obj.inputs[0]
            fill = None
            if src in graph.consts and src not in materialized:
                fill = Literal(graph.consts[src].reshape(-1)[0], src.dtype)
                materialized.add(src)
            kernel.body.append(Alias(obj.out, src, obj, fill))
            materialized.add(obj.out)
        else:
            kernel.body.append(_loop(n, obj, kernel, graph, needed_outside, materialized,
                                     sched))
            n += 1


def build(graph, options=None, shape_inputs=False):
    """The schedule of ``graph`` under ``options`` (a ``compiler.options.Options``; None: defaults).

    ``shape_inputs`` (a backend's ``SHAPE_CONSTANT_INPUTS``): in a shape-generic schedule,
    the one-element constants computed from shapes (``Var.from_shape``: a mean's count)
    are kernel inputs, read at run time as extents are, rather than literals, so the
    kernels are the same for every shape. They are marked where they are made
    (``Tracer.shape_constant``), not found by comparing two shapes' traces: the plan for
    the first shape is already generic where a DataLoader marks its batches, and a
    constant that is the same for every shape (``0.5``, the ``2`` of ``x ** 2``) stays
    a literal LLVM can fold. A static schedule spells every one as a literal."""
    options = options or Options()
    graph = drop_detach_copies(graph)
    steps = split_stages(graph, shape_inputs and options.generic)
    blas = any(isinstance(s, HostStep) and s.eqn.prim.cost.blas for s in steps)
    sched = Schedule(options.name, options.role, graph, steps, generic=options.generic,
                     parallel=options.parallel in ("auto", True),
                     min_work=PARALLEL_MIN_WORK_BESIDE_BLAS if blas else PARALLEL_MIN_WORK,
                     blas=blas)
    for k in sched.kernels:
        _plan_kernel(k, graph, sched)
    return sched

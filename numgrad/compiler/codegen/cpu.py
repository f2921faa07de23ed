"""codegen.cpu: fused Numba kernels for the CPU (``numba.njit``, ``prange`` where it pays).

Room: compiler. The emitter owns loop structure; ops own only their scalar
templates (``lowering`` in the registry). A graph becomes a few *stages*, each
one ``njit`` function; other equations (matmul, transposes, hooks, gathers...)
run in Python between stages, on NumPy. Inside a stage:

- elementwise equations with the same iteration shape share one loop; a value
  that never leaves its loop stays a local scalar (no array is written);
- a reduction joins the loop that produces its input (its accumulator lives
  in that loop), so ``sum(tanh(x*y) * exp(-y*y))`` is a single pass;
- matmul is NumPy's BLAS call between stages, with the elementwise loops around it
  fused into the stages before and after it.

Shapes are static, so every extent and stride is a literal in the source and
LLVM sees fixed-trip-count loops it can vectorise. 0-d values are kept as
1-element arrays inside kernels.

A loop with enough work (PARALLEL_MIN_WORK) runs over fixed chunks of its outer
index under ``prange``, each chunk reducing into its own slot; a long body goes
into a chunk function (two interleaved element streams, in a module of its own).
With ``parallel="auto"`` and a cold cache, the first call runs the same source
compiled with ``parallel=False``; the second compiles the prange tier. Fixed
chunks make both tiers, and any thread count, give the same bits.
"""
from __future__ import annotations

import math
import re

import numpy as np

from numgrad.compiler.codegen import cache as _cache
from numgrad.compiler.codegen import malloc as _malloc
from numgrad.compiler.codegen import omp as _omp
from numgrad.compiler import progress as _progress
from numgrad.compiler.ir import Eqn
from numgrad.compiler.codegen.cpu_program import Program, cshape, first_line

# Work (elements x op weight) per loop before prange pays. bench/parallel_threshold.py on
# this 2-vCPU machine, quiet: a 4-op loop breaks even at 2^16 elements (2^18 work), W2's
# loop (3 transcendentals, weight ~29) already gains 1.5x at 2^12 (~2^17 work); on a
# loaded machine the thread pool can stall for milliseconds whatever the size.
PARALLEL_MIN_WORK = 1 << 17
# ... and in a plan that also calls BLAS (matmul between stages). OpenBLAS's workers
# busy-wait for a long while after each call, and Numba's prange workers then fight
# them for the cores: W3 (MLP step) on 2 threads took 6.7-7.1 ms with its small
# elementwise kernels under prange, 2.1-2.2 ms with them serial (BLAS still threaded).
# Only kernels big enough to dwarf that go parallel there.
PARALLEL_MIN_WORK_BESIDE_BLAS = 1 << 22
# A parallel loop body over this many statements goes into a chunk function (over
# [lo, lo + m) of the outer index) that the prange loop calls. Its array arguments are
# marked noalias (llvm_attrs.noalias_args: LLVM leaves a loop that writes many np.empty
# arrays scalar otherwise) and it walks two interleaved element streams (_interleaved),
# so it runs faster: W2 jit v&g 0.69 -> 0.62 ms, W5 1.82 -> 1.36 ms, W4 0.48 -> 0.33 ms
# on 1 thread. But Numba compiles a called function's machine code twice (alone, then
# linked into the caller), so short bodies stay inline: W2's call + backward then
# compiles in 1.1 s instead of 1.7 s. Very long bodies must go out anyway: parfors
# takes 9-13 s on W4's 600-statement chain inline.
PARALLEL_INLINE_MAX_BODY = 24
INTERLEAVE_LONG_BODIES = True
# Two streams: W4 0.48 -> 0.31 ms. Four ran 1.26 ms (the vectorised body no longer fits
# the registers) and took 24 s to compile.
STREAMS = 2
# Chunks of a parallel loop's outer index: fixed, so that results do not depend on the
# thread count; enough to balance 2-16 threads.
PARALLEL_CHUNKS = 64
_HEAVY = ("exp(", "log(", "tanh(", "sigmoid(", "sin(", "cos(", "power(", "sqrt(")

_NB_TYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "bool": "boolean"}
_REDUCTIONS = {"sum", "mean", "amax", "amin"}
_EW_STRUCT = {"detach"}


def _size(shape):
    return math.prod(shape) if shape else 1


# ------------------------------------------------------------------ classify
def lowerable(e):
    """Can this equation run inside a Numba kernel?"""
    if isinstance(e.prim, str):
        return e.prim in _EW_STRUCT
    name, kind = e.prim.name, e.prim.kind
    if e.out.dtype.name not in _NB_TYPES or any(v.dtype.name not in _NB_TYPES for v in e.inputs):
        return False
    if kind in ("elementwise", "compare"):
        return e.prim.lowering is not None
    if name in ("where", "to_dtype", "expand", "reshape"):
        return True
    # NOTE: matmul (and the transposes that feed it) run as NumPy steps between fused
    # stages: Numba's np.dot needs SciPy, which numgrad does not depend on, and its
    # thread pool fights BLAS's on few cores. NumPy's matmul takes transposed views
    # without copying them.
    return name in _REDUCTIONS


def _role(e):
    if isinstance(e.prim, str):
        return "ew"
    name = e.prim.name
    if e.prim.kind in ("elementwise", "compare") or name in ("where", "to_dtype", "expand"):
        return "ew"
    if name in _REDUCTIONS:
        return "red"
    return "standalone"   # reshape


# ------------------------------------------------------------------- stages
class Stage:
    def __init__(self, index):
        self.index = index
        self.eqns = []
        self.inputs = []    # Vars read from outside (graph inputs, consts, earlier steps)
        self.outputs = []   # Vars needed after the stage
        self.fn = None
        self.name = None


def drop_detach_copies(graph):
    """The graph with uses of ``detach`` results pointing at their inputs instead.

    detach is the identity at run time, but a kernel writes every value that leaves it
    into an array of its own: W3's ``jit(value_and_grad)``, whose inputs are detached,
    copied W1 (1.6 MB) at every call before handing it to the matmul. The IR keeps its
    {detach} equations (``trace()`` shows them); only what the kernels run changes."""
    outs = set(graph.outputs)
    rename, eqns = {}, []
    for e in graph.eqns:
        ins = [rename.get(v, v) for v in e.inputs]
        if e.prim == "detach" and e.out not in outs:
            rename[e.out] = ins[0]
            continue
        eqns.append(e if ins == list(e.inputs) else Eqn(e.prim, ins, e.params, e.out, e.ann))
    return graph.copy(eqns=eqns) if rename else graph


def split_stages(graph):
    """Steps in order: ("kernel", Stage) or ("python", Eqn)."""
    steps, cur = [], None
    for e in graph.eqns:
        if lowerable(e):
            if cur is None:
                cur = Stage(len([s for s in steps if s[0] == "kernel"]))
                steps.append(("kernel", cur))
            cur.eqns.append(e)
        else:
            cur = None
            steps.append(("python", e))
    # Inputs and outputs of each stage.
    later_use = {}
    for pos, (kind, obj) in enumerate(steps):
        eqns = obj.eqns if kind == "kernel" else [obj]
        for e in eqns:
            for v in e.inputs:
                later_use.setdefault(v, []).append(pos)
    outs = set(graph.outputs)
    for pos, (kind, obj) in enumerate(steps):
        if kind != "kernel":
            continue
        produced = {e.out for e in obj.eqns}
        seen = set()
        for e in obj.eqns:
            for v in e.inputs:
                if v not in produced and v not in seen:
                    if v in graph.consts and _size(v.shape) == 1:
                        continue  # small constants become literals
                    seen.add(v)
                    obj.inputs.append(v)
        obj.outputs = [e.out for e in obj.eqns
                       if e.out in outs or any(p > pos for p in later_use.get(e.out, ()))]
    return steps


# ------------------------------------------------------------------- groups
class Group:
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
    to write out (W5's Hessian-vector product wrote and re-read 14 arrays)."""
    reds = {e.out for e in eqns if _role(e) == "red"}
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


def group_stage(stage):
    """Assign the stage's equations to loop groups; return the emission order."""
    order, open_by_shape, producer = [], {}, {}

    def close(g):
        if not g.closed:
            g.closed = True
            open_by_shape.pop(g.shape, None)
            order.append(("group", g))

    for e in _sink_reduction_consumers(stage.eqns):
        role = _role(e)
        if role == "standalone":
            for v in e.inputs:
                pg = producer.get(v)
                if pg is not None:
                    close(pg)
            order.append(("standalone", e))
            continue
        shape = cshape(e.inputs[0].shape if role == "red" else e.out.shape)
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
            g = Group(shape)
            open_by_shape[shape] = g
        g.members.append(e)
        producer[e.out] = g
        if role == "red":
            g.red_outs.add(e.out)
    for g in list(open_by_shape.values()):
        close(g)
    return order


# ------------------------------------------------------------------ emitter
def _literal(value, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "True" if bool(value) else "False"
    if dtype.kind in "iu":
        return f"np.int64({int(value)})"
    v = float(value)
    if math.isnan(v):
        return f"np.{dtype.name}(np.nan)"
    if math.isinf(v):
        return f"np.{dtype.name}({'' if v > 0 else '-'}np.inf)"
    return f"np.{dtype.name}({v!r})"


def _nb_array_type(v):
    """Numba's type string for a C-contiguous array of ``v``'s canonical shape."""
    dims = [":"] * (len(cshape(v.shape)) - 1) + ["::1"]
    return f"{_NB_TYPES[v.dtype.name]}[{', '.join(dims)}]"


def _weight(e):
    """Rough cost of one element of an equation, in simple-op units (for the prange cut)."""
    lowering = None if isinstance(e.prim, str) else e.prim.lowering
    return 8 if lowering and lowering.startswith(_HEAVY) else 1


def _broadcast_offset(shape, rank, idx, ext=None):
    """Flat index into a C-contiguous array of ``shape`` read at loop indices ``idx`` (one
    per dim of a rank-``rank`` loop nest), broadcasting size-1 and missing leading dims."""
    ext = ext or _STATIC
    shp = (1,) * (rank - len(cshape(shape))) + cshape(shape)
    terms = []
    for d, s in enumerate(shp):
        if s != 1:
            st = ext.size(shp[d + 1:])
            terms.append(idx[d] if st == "1" else f"{idx[d]} * {st}")
    return " + ".join(terms) if terms else "0"


class Extents:
    """Extents as the kernel source spells them. Static plans: literals, so LLVM sees
    fixed trip counts. Shape-generic plans (``options["generic"]``): every extent other
    than 1 that a stage input has is a name bound from that input's shape at run time
    (``e_a = v_x.shape[0]``), so the source, and the compiled module, is the same for
    every shape with the same ranks, broadcast pattern and equalities between extents.
    An extent no input has (a reshape's product, say) stays a literal: the source then
    differs per shape, which costs a compile, never a wrong result."""

    def __init__(self, generic=False):
        self.generic = generic
        self.names = {}
        self.lines = []

    def bind(self, inputs, name):
        if not self.generic:
            return
        for v in inputs:
            for d, s in enumerate(cshape(v.shape)):
                if s != 1 and s not in self.names:
                    k, letters = len(self.names), ""
                    while True:
                        letters = chr(97 + k % 26) + letters
                        k = k // 26 - 1
                        if k < 0:
                            break
                    self.names[s] = f"e_{letters}"
                    self.lines.append(f"e_{letters} = {name(v)}.shape[{d}]")

    def dim(self, s):
        return self.names.get(s, str(s))

    def size(self, shape):
        lit = math.prod(s for s in shape if s not in self.names)
        names = [self.names[s] for s in shape if s in self.names]
        if lit != 1 or not names:
            names.append(str(lit))
        return " * ".join(names)

    def shape(self, shape):
        dims = [self.dim(s) for s in cshape(shape)]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


_STATIC = Extents()


def _strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))


class StageEmitter:
    def __init__(self, stage, graph, parallel, min_work=PARALLEL_MIN_WORK, generic=False):
        self.stage = stage
        self.ext = Extents(generic)
        self.loops = 0
        self.graph = graph
        self.parallel = parallel
        self.min_work = min_work
        self.lines = []
        self.helpers = []   # chunk functions of parallel loops, emitted before the stage
        self.materialized = set(stage.inputs)
        self.uses_prange = False
        self.paired = set()  # arguments whose sin and cos are both taken in the current loop

    def name(self, v):
        return f"v_{v.name}"

    def flat(self, v):
        return f"f_{v.name}"

    def emit(self, line, depth=1):
        self.lines.append("    " * depth + line)

    def new_array(self, v, fill=None):
        """Allocate ``v`` (filled with the literal ``fill``, if given) and its flat view."""
        shape = self.ext.shape(v.shape)
        make = (f"alloc({shape}, np.{v.dtype.name})" if fill is None
                else f"full({shape}, {fill})")
        self.emit(f"{self.name(v)} = {make}")
        self.emit(f"{self.flat(v)} = view({self.name(v)}, {self.ext.size(cshape(v.shape))})")

    def const_literal(self, v):
        a = self.graph.consts[v]
        return _literal(a.reshape(-1)[0], v.dtype)

    def source(self, fname):
        st = self.stage
        args = ", ".join(self.name(v) for v in st.inputs)
        self.lines = []
        self.ext.bind(st.inputs, self.name)
        for line in self.ext.lines:
            self.emit(line)
        for v in st.inputs:
            self.emit(f"{self.flat(v)} = view({self.name(v)}, {self.ext.size(cshape(v.shape))})")
        order = group_stage(st)
        users = {}
        for e in st.eqns:
            for v in e.inputs:
                users.setdefault(v, set()).add(id(e))
        needed_outside = set(st.outputs)
        member_of = {}
        for kind, obj in order:
            if kind == "group":
                for e in obj.members:
                    member_of[e.out] = obj
        for kind, obj in order:
            if kind == "standalone":
                for v in obj.inputs:
                    needed_outside.add(v)
            else:
                for e in obj.members:
                    for v in e.inputs:
                        if member_of.get(v) is not None and member_of[v] is not obj:
                            needed_outside.add(v)
        self.needed_outside = needed_outside
        for kind, obj in order:
            if kind == "standalone":
                self.emit_standalone(obj)
            else:
                self.emit_group(obj)
        rets = [self.name(v) if v not in self.graph.consts or _size(v.shape) > 1
                else f"full(1, {self.const_literal(v)})" for v in st.outputs]
        ret = "(" + ", ".join(rets) + ("," if len(rets) == 1 else "") + ")"
        self.emit(f"return {ret}")
        if self.ext.generic:  # no extents in comments: the source must not depend on them
            eqn_lines = "\n".join(f"#   {e.out.name} = {e.name} " + " ".join(
                v.name for v in e.inputs) for e in st.eqns)
        else:
            eqn_lines = "\n".join(f"#   {e.format(self.graph.consts)}" for e in st.eqns)
        sig = "(" + ", ".join(_nb_array_type(v) for v in st.inputs) + (
            "," if len(st.inputs) == 1 else "") + ")"
        head = (f"# stage {st.index}: fuses\n{eqn_lines}\n"
                f"@njit({sig!r}, cache=True, parallel={self.uses_prange}, "
                f"fastmath=FASTMATH, error_model='numpy')\n"
                f"def {fname}({args}):")
        return head + "\n" + "\n".join(self.lines) + "\n"

    # ---------------------------------------------------------- standalone
    def emit_standalone(self, e):
        # Only reshape stands alone: the flat data is shared, so it is free.
        out, src = e.out, e.inputs[0]
        if src in self.graph.consts and src not in self.materialized:
            self.new_array(src, fill=self.const_literal(src))
            self.materialized.add(src)
        self.emit(f"{self.flat(out)} = {self.flat(src)}")
        self.emit(f"{self.name(out)} = view({self.flat(out)}, {self.ext.shape(out.shape)})")
        self.materialized.add(out)

    # --------------------------------------------------------------- groups
    def emit_group(self, g):
        S = g.shape
        N = _size(S)
        local = {}          # Var -> local scalar name (values computed in this loop)
        members = g.members
        # Can we use one flat loop? Every array we touch must have the loop's shape
        # (or be a single element) and every reduction must be a full one.
        flat = True
        for e in members:
            if _role(e) == "red" and e.params.get("dim") is not None and \
                    _size(e.out.shape) != 1:
                flat = False
            for v in e.inputs:
                if (v not in {m.out for m in members}) and _size(v.shape) != 1 and \
                        cshape(v.shape) != S:
                    flat = False
        trig = {(e.prim.name, e.inputs[0]) for e in members
                if not isinstance(e.prim, str) and e.prim.name in ("sin", "cos")}
        self.paired = {v for name, v in trig if name == "sin" and ("cos", v) in trig}
        reds = [e for e in members if _role(e) == "red"]
        full_reds = [e for e in reds if _size(e.out.shape) == 1]
        part_reds = [e for e in reds if _size(e.out.shape) != 1]
        only_sums = all(e.prim.name in ("sum", "mean") for e in reds)
        weight = sum(_weight(e) for e in members)
        work = N * weight
        # A generic plan decides at run time when the loop's size does (both loops are
        # emitted, see below).
        runtime_size = self.ext.generic and any(s in self.ext.names for s in S)
        par = (self.parallel and (work >= self.min_work or runtime_size) and only_sums and
               (flat or not reds or all(0 not in (e.params.get("dim") or (0,))
                                         for e in part_reds) and not full_reds))
        # Allocations for materialized outputs and partial-reduction accumulators.
        mat = [e.out for e in members if _role(e) == "ew" and e.out in self.needed_outside]
        for v in mat:
            self.new_array(v)
        for e in part_reds:
            self.new_array(e.out, fill=self._red_init(e))
        for e in full_reds:
            self.emit(f"acc_{e.out.name} = {self._red_init(e)}")
        # Hoist single-element reads out of the loop.
        hoisted = {}
        produced = {m.out for m in members}
        for e in members:
            for v in e.inputs:
                if v in produced or v in hoisted:
                    continue
                if v in self.graph.consts and _size(v.shape) == 1:
                    hoisted[v] = self.const_literal(v)
                elif _size(v.shape) == 1:
                    hoisted[v] = f"s_{v.name}"
                    self.emit(f"s_{v.name} = {self.flat(v)}[0]")
        self.uses_prange |= par
        ext = self.ext
        if ext.generic:
            outer = ext.dim(S[0]) if not flat else ext.size(S)
        else:
            outer = S[0] if not flat else N
        # A parallel loop with a full reduction runs in fixed chunks of the outer index,
        # each reducing into its own slot, summed in order afterwards. The chunking does
        # not depend on the thread count, and with parallel=False (the serial tier, see
        # compile()) prange is range: both tiers, and every thread count, give the same
        # bits. Loops without one need no chunks for that (each element is computed by
        # the same code either way) and run faster without (W5: 2.0 -> 1.87 ms); long
        # bodies are chunked anyway, to go into a chunk function (PARALLEL_INLINE_MAX_BODY).
        chunk = par and bool(full_reds or len(members) > PARALLEL_INLINE_MAX_BODY)
        acc_name = (lambda e: f"a_{e.out.name}") if chunk else (lambda e: f"acc_{e.out.name}")
        loop_start = len(self.lines)
        if chunk:
            if ext.generic:  # the static formula below, evaluated in the kernel
                k = self.loops
                self.emit(f"csize{k} = max(1, -(-({outer}) // {PARALLEL_CHUNKS}))")
                self.emit(f"nchunks{k} = -(-({outer}) // csize{k})")
                size, chunks = f"csize{k}", f"nchunks{k}"
            else:
                size = -(-outer // min(outer, PARALLEL_CHUNKS))
                chunks = -(-outer // size)
            for e in full_reds:
                self.emit(f"parts_{e.out.name} = alloc({chunks}, np.{e.out.dtype.name})")
            outer_lines, self.lines = self.lines, []
        first = "range(m)" if chunk else f"prange({outer})" if par else f"range({outer})"
        depth = 1
        if flat:
            self.emit(f"for {'j' if chunk else 'i'} in {first}:")
            depth = 2
            if chunk:
                self.emit("i = lo + j", depth)
            idx = ["i"]
        else:
            for d, s in enumerate(S):
                if d == 0 and chunk:
                    self.emit(f"for j in {first}:", depth)
                    self.emit("i0 = lo + j", depth + 1)
                else:
                    self.emit(f"for i{d} in {first if d == 0 else f'range({ext.dim(s)})'}:",
                              depth)
                depth += 1
            idx = [f"i{d}" for d in range(len(S))]

        def offset(shape):
            return "i" if flat else _broadcast_offset(shape, len(S), idx, ext)

        def read(v):
            if v in local:
                return local[v]
            if v in hoisted:
                return hoisted[v]
            return f"{self.flat(v)}[{offset(v.shape)}]"

        for e in members:
            role = _role(e)
            if role == "red":
                # Accumulate into a scalar (full reduction) or the output element (partial).
                if e in full_reds:
                    target = acc_name(e)
                else:
                    keep = self._keep_shape(e)
                    target = f"{self.flat(e.out)}[{_broadcast_offset(keep, len(S), idx, ext)}]"
                val = read(e.inputs[0])
                if e.prim.name in ("sum", "mean"):
                    # radd: the one reassociable addition (codegen/accumulate_ir.py).
                    self.emit(f"{target} = radd({target}, {val})", depth)
                else:
                    fn = "maximum" if e.prim.name == "amax" else "minimum"
                    self.emit(f"{target} = {fn}({target}, {val})", depth)
                continue
            expr = self._expr(e, [read(v) for v in e.inputs])
            t = f"t_{e.out.name}"
            self.emit(f"{t} = {expr}", depth)
            local[e.out] = t
            if e.out in self.needed_outside:
                self.emit(f"{self.flat(e.out)}[{offset(e.out.shape)}] = {t}", depth)
        if chunk:
            self._emit_chunks(outer_lines, chunks, size, outer, full_reds, acc_name,
                              len(members))
        if par and runtime_size:
            # The same loop twice: threaded above the work threshold, serial below it
            # (a prange loop on few elements costs more than it saves). Both run the same
            # chunks in the same order, so the bits do not depend on the branch (they may
            # differ from a static plan's in the last place: with a literal chunk count
            # LLVM sums the partial sums in another order).
            block = self.lines[loop_start:]
            self.lines[loop_start:] = (
                [f"    if ({ext.size(S)}) * {weight} >= {self.min_work}:"]
                + ["    " + line for line in block] + ["    else:"]
                + ["    " + line.replace("prange(", "range(") for line in block])
        self.loops += 1
        # Finish reductions.
        for e in full_reds:
            acc = f"acc_{e.out.name}"
            if e.prim.name == "mean":
                acc = (f"{acc} / np.{e.out.dtype.name}({ext.size(S)})" if ext.generic
                       else f"{acc} / {_literal(N, e.out.dtype)}")
            # In its own shape: a keepdim sum of a (1, 1) value is (1, 1), not (1,).
            self.new_array(e.out)
            self.emit(f"{self.flat(e.out)}[0] = {acc}")
        for e in part_reds:
            if e.prim.name == "mean":
                if ext.generic:
                    keep = cshape(self._keep_shape(e))
                    full = cshape(e.inputs[0].shape)
                    cnt = ext.size([s for s, k in zip(full, keep) if k == 1])
                    self.emit(f"{self.flat(e.out)} /= np.{e.out.dtype.name}({cnt})")
                else:
                    # NOTE: an empty output has nothing to divide (and would divide by zero
                    # here).
                    cnt = _size(e.inputs[0].shape) // max(_size(e.out.shape), 1)
                    self.emit(f"{self.flat(e.out)} /= {_literal(cnt, e.out.dtype)}")
        for v in produced:
            self.materialized.add(v)

    def _emit_chunks(self, outer_lines, chunks, size, outer, full_reds, acc, n_members):
        """Wrap the loop just emitted (self.lines, at depth 1) in the chunk loop."""
        body, self.lines = self.lines, outer_lines
        inits = [f"{acc(e)} = {self._red_init(e)}" for e in full_reds]
        self.emit(f"for c in prange({chunks}):")
        self.emit(f"lo = c * {size}", 2)
        self.emit(f"m = min({size}, {outer} - lo)", 2)
        if n_members > PARALLEL_INLINE_MAX_BODY:
            # The body becomes its own serial function over one chunk; the prange loop
            # only calls it (see PARALLEL_INLINE_MAX_BODY).
            params = sorted(set(re.findall(r"\b[efs]_[a-z]+\b", "\n".join(body))))
            name = f"KERNEL_NAME_g{len(self.helpers)}"
            args = "".join(", " + p for p in params)
            rets = "".join(acc(e) + ", " for e in full_reds)
            head = ["    " + line for line in inits]
            if INTERLEAVE_LONG_BODIES and body[:2] == ["    for j in range(m):",
                                                       "        i = lo + j"]:
                head, body, tail = self._interleaved(body, full_reds, acc)
            else:
                tail = [f"    return ({rets})"]
            self.helpers.append("\n".join(
                ["@njit(cache=True, fastmath=FASTMATH, error_model='numpy')",
                 f"def {name}(lo, m{args}):", "    noalias_args()"] + head + body + tail)
                + "\n")
            self.emit((f"{rets}= " if full_reds else "") + f"{name}(lo, m{args})", 2)
        else:
            for line in inits:
                self.emit(line, 2)
            self.lines.extend("    " + line for line in body)
        for e in full_reds:
            self.emit(f"parts_{e.out.name}[c] = {acc(e)}", 2)
        for e in full_reds:
            self.emit(f"for c in range({chunks}):")
            self.emit(f"acc_{e.out.name} += parts_{e.out.name}[c]", 2)

    def _interleaved(self, body, full_reds, acc):
        """A flat chunk loop as STREAMS interleaved element streams, statement by
        statement: stream 0 keeps the t_ names, stream s uses t<s>_, each on its own
        stretch of the chunk.

        A long fused chain is one dependency chain per element: in a vectorised loop each
        vector waits on the latency of every transcendental, and its body is far too long
        for the CPU to overlap the next iteration. Independent streams overlap those
        waits (the W4 chain: see INTERLEAVE_LONG_BODIES). When m does not divide, the
        last streams start early, so some elements are computed twice: written twice with
        the same value, and counted once in sums."""
        n = STREAMS
        head = [f"    q = (m + {n - 1}) // {n}"]
        for k in range(1, n):
            head += [f"    st{k} = min({k} * q, m - q)", f"    d{k} = {k} * q - st{k}"]
        # Each stream indexes its own views: two offsets into one array would be an
        # unknown-distance dependence, which stops LLVM's loop vectoriser.
        arrays = sorted(set(re.findall(r"\b(f_[a-z]+)\[i\]", "\n".join(body))))
        for a in arrays:
            head.append(f"    {a}_s0 = {a}[lo:lo + q]")
            head += [f"    {a}_s{k} = {a}[lo + st{k}:lo + st{k} + q]" for k in range(1, n)]
        zero = {acc(e): self._red_init(e) for e in full_reds}
        for e in full_reds:
            head += [f"    {acc(e)} = {zero[acc(e)]}"]
            head += [f"    b{k}_{e.out.name} = {zero[acc(e)]}" for k in range(1, n)]
        out = ["    for j in range(q):"]
        for line in body[2:]:
            out.append(re.sub(r"\b(f_[a-z]+)\[i\]", r"\1_s0[j]", line))
            for k in range(1, n):
                other = re.sub(r"\b(f_[a-z]+)\[i\]", rf"\1_s{k}[j]",
                               re.sub(r"\bt_", f"t{k}_", line))
                target, _, call = other.strip().partition(" = radd(")
                if target in zero:  # a full reduction: a duplicated element counts once
                    value = call[len(target) + 2:-1]   # radd(<target>, <value>)
                    b = f"b{k}_{target[2:]}"
                    other = (f"        {b} = radd({b}, ({value} if j >= d{k} "
                             f"else {zero[target]}))")
                out.append(other)
        sums = ["(" + " + ".join([acc(e)] + [f"b{k}_{e.out.name}" for k in range(1, n)]) + ")"
                for e in full_reds]
        tail = ["    return (" + "".join(t + ", " for t in sums) + ")"]
        return head, out, tail

    def _red_init(self, e):
        dt = e.out.dtype
        if e.prim.name in ("sum", "mean"):
            return _literal(0, dt)
        if dt.kind == "f":
            return _literal(-np.inf if e.prim.name == "amax" else np.inf, dt)
        info = np.iinfo(np.int64)
        return _literal(info.min if e.prim.name == "amax" else info.max, dt)

    def _keep_shape(self, e):
        x = e.inputs[0].shape
        dim = e.params.get("dim")
        return tuple(1 if (dim is None or i in dim) else s for i, s in enumerate(x))

    def _expr(self, e, args):
        if isinstance(e.prim, str):  # detach: identity at run time
            return args[0]
        name = e.prim.name
        dt = e.out.dtype
        if name == "expand":
            return args[0]
        if name == "to_dtype":
            if dt == np.bool_:
                return f"({args[0]} != 0)"
            return f"np.{dt.name}({args[0]})"
        if name == "pow_scalar":
            p = e.params["exponent"]
            x = args[0]
            if p == 2:
                return f"({x} * {x})"
            if p == 3:
                return f"({x} * {x} * {x})"
            if p == 1:
                return x
            if p == 0.5:
                return f"sqrt({x})"
            if p == -0.5:  # rsqrt, as the eager impl (and torch) compute it
                return f"({_literal(1, dt)} / sqrt({x}))"
            if p == -1:
                return f"({_literal(1, dt)} / {x})"
            return f"power({x}, {_literal(p, dt)})"
        if name == "pow_scalar_grad":  # dy * p * x**(p-1)
            p = e.params["exponent"]
            dy, x = args
            if p == 0:
                return f"({dy} * {_literal(0, dt)})"
            if p == 1:
                return dy
            if p == 2:
                return f"({dy} * ({x} * {_literal(2, dt)}))"
            if p == 3:
                return f"({dy} * ({x} * {x} * {_literal(3, dt)}))"
            if p == 1.5:
                return f"({dy} * ({_literal(p, dt)} * sqrt({x})))"
            if p == 0.5:
                return f"({dy} * ({_literal(p, dt)} * ({_literal(1, dt)} / sqrt({x}))))"
            return f"({dy} * ({_literal(p, dt)} * power({x}, {_literal(p - 1, dt)})))"
        if name == "clamp":
            lo, hi = e.params["min"], e.params["max"]
            x = args[0]
            if lo is not None and hi is not None:
                return f"clamp({x}, {_literal(lo, dt)}, {_literal(hi, dt)})"
            if lo is not None:
                return f"clamp_min({x}, {_literal(lo, dt)})"
            return f"clamp_max({x}, {_literal(hi, dt)})"
        if name == "fmod" and dt.kind == "f":
            return f"ffmod({args[0]}, {args[1]})"
        if name == "erf" and dt == np.float32:
            # The eager impl computes erf in float64 and rounds once (erff differs near 0).
            return f"np.float32(erf(np.float64({args[0]})))"
        if name == "relu":
            return f"relu({args[0]}, {_literal(0, dt)})"
        if name == "sign":
            if dt == np.bool_:
                return args[0]
            return f"sign({args[0]}, {_literal(0, dt)}, {_literal(1, dt)})"
        if name == "pow" and dt.kind in "iu":
            return f"ipower({args[0]}, {args[1]})"
        if name in ("sin", "cos") and e.inputs[0] in self.paired:
            return f"{name}_paired({args[0]})"  # see vmath_ir.sin_paired
        return e.prim.lowering.format(*args, **{k: v for k, v in e.params.items()})


def compile(graph, options=None):
    options = options or {}
    parallel = options.get("parallel", "auto")
    fastmath = options.get("fastmath", False)
    _malloc.tune()
    graph = drop_detach_copies(graph)
    steps = split_stages(graph)
    kernels = [obj for kind, obj in steps if kind == "kernel"]
    base = options.get("name", "fn")
    blas = any(kind == "python" and not isinstance(e.prim, str) and e.prim.name == "matmul"
               for kind, e in steps)
    min_work = PARALLEL_MIN_WORK_BESIDE_BLAS if blas else PARALLEL_MIN_WORK
    srcs, chunk_fns = [], []
    verbose = options.get("verbose", False)
    use_disk = options.get("cache", True)  # ng.jit(cache=False): nothing read or written
    for st in kernels:
        em = StageEmitter(st, graph, parallel in ("auto", True), min_work,
                          generic=options.get("generic", False))
        st.name = None
        src = em.source("KERNEL_NAME")
        # Numba's cache ignores parallel=: give the parallel variant its own name.
        st.name = f"{_safe(base)}_{options.get('role', 'fwd')}_{st.index}" + (
            "_par" if em.uses_prange else "")
        srcs.append(src.replace("KERNEL_NAME", st.name))
        chunk_fns += [h.replace("KERNEL_NAME", st.name) for h in em.helpers]
    helpers = "scalar_vec" if options.get("vector_math", True) else "scalar"
    # No fast-math flags by default: every +, -, *, / rounds as eager mode's does (with
    # `contract`, a*b + c became one FMA: other bits, and a product beyond the float range
    # that no longer overflowed; with `reassoc`, x * 1e300 * 1e-300 folded to x). Sums
    # still vectorise: their accumulators add through radd, which carries `reassoc` alone
    # (codegen/accumulate_ir.py), a reordering of additions like any SIMD sum (torch, XLA).
    # The vmath_ir functions pin their own flags, so their accuracy does not depend on these.
    # nnan/ninf stay off unless fastmath=True: NaN and inf must propagate as in eager mode.
    # No `afn`: with it LLVM turns pow(x, float(int or bool)) into llvm.powi, whose
    # library call (__powisf2/__powidf2) Numba's JIT cannot resolve: x ** bool_tensor
    # segfaulted. It bought nothing measurable (W2, W4, W5 within noise).
    # No `nsz` or `arcp` either (tests/compiler/test_jit_special_values.py): with nsz LLVM
    # folds x + 0.0 to x (-0 stays -0; eager gives +0), and with arcp it turns a float32
    # 1 / sqrt(x) into an rsqrt estimate (NaN and wrong infinities at 0, inf, subnormals)
    # and x / c into x * (1 / c) (a different rounding from eager's division).
    flags = set()
    if fastmath:
        flags |= {"contract", "reassoc", "nnan", "ninf", "nsz", "arcp"}
    header = ("# generated by numgrad: one function per fused stage\n"
              "import numpy as np\n"
              "from numba import njit, prange\n"
              f"from numgrad.compiler.codegen.{helpers} import *  # noqa: F401,F403\n\n"
              f"FASTMATH = set({sorted(flags)!r})\n\n")
    chunk_source = ""
    if chunk_fns:
        # Chunk functions get a module of their own that both tiers import: otherwise
        # each tier would compile its own machine code for them, the most expensive part
        # of a long chain (W4's prange tier: 3.8 s with its own copy, 1.1 s importing).
        chunk_source = header + "\n\n".join(chunk_fns)
        try:
            chunk_module, _ = _cache.load_module(chunk_source, verbose=verbose,
                                                 use_disk=use_disk)
        except Exception as exc:
            return _fallback(graph, options, base, chunk_source, exc)
        names = re.findall(r"^def (\w+)\(", chunk_source, flags=re.M)
        header += f"from {chunk_module.__name__} import {', '.join(names)}\n\n"
        chunk_source += "\n\n"
    source = header + "\n\n".join(srcs)
    # Tiered compile: parallel=True costs Numba ~0.3 s more per kernel (its parfors
    # passes), so with parallel="auto" a cold cache first gets the same source compiled
    # with parallel=False (prange runs as range; the chunked loops keep the results
    # bit-identical), and the Program compiles the prange tier at its second call. A call
    # made once never pays for threads; a kernel built before loads at once.
    tiered = ("prange(" in source and parallel == "auto"
              and not (use_disk and _cache.is_built(source)))
    serial = source.replace("parallel=True", "parallel=False") if tiered else source
    if "parallel=True" in serial:
        _omp.tune()
    _progress.note(options.get("role", "fwd"), _cache.module_name(serial),
                   [st.name for st in kernels])
    try:
        module, disk_hit = _cache.load_module(serial, verbose=verbose, use_disk=use_disk)
    except Exception as exc:  # a codegen gap must never reach the user as a Numba traceback
        return _fallback(graph, options, base, source, exc)
    for st in kernels:
        st.fn = getattr(module, st.name)
    if not kernels:
        disk_hit = False
    prog = Program(graph, steps, module, chunk_source + source, disk_hit,
                   upgrade=(source, verbose, use_disk) if tiered else None)
    prog.modules = (module.__name__,) + ((chunk_module.__name__,) if chunk_fns else ())
    return prog


def _fallback(graph, options, base, source, exc):
    import warnings
    from numgrad.compiler.codegen import reference
    first = first_line(exc)
    warnings.warn(f"numgrad could not compile a fused kernel for {base!r} ({first}); "
                  "running this graph with the NumPy reference backend instead",
                  RuntimeWarning, stacklevel=3)
    prog = reference.compile(graph, options)
    prog.source = f"# fused kernel failed to compile: {first}\n{source}"
    return prog


def _safe(name):
    out = "".join(c if c.isalnum() else "_" for c in name)
    return out if out and not out[0].isdigit() else "f_" + out

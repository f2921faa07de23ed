"""backends.cpu.renderer: a ``Schedule`` as fused Numba kernels for the CPU (``numba.njit``,
``prange`` where the schedule says a loop is parallel).

Room: compiler. Fusion is decided by ``compiler.schedule`` (stages, loops, what each
loop reads, computes, reduces and writes, parallel and chunking); ops own their scalar
lowering (the registry's ``scalar``). This module only spells them: one ``njit``
function per kernel, NumPy steps between them (``program``); ``build`` compiles them.

Shapes are static, so every extent and stride is a literal in the source and LLVM
sees fixed-trip-count loops it can vectorise (shape-generic plans read them from the
inputs: ``Extents``; and the constants computed from shapes, a mean's count, are
inputs of theirs, hoisted scalars like any one-element input: ``schedule.build``).
0-d values are kept as 1-element arrays inside kernels.

A parallel loop runs under ``prange``; a chunked one over fixed chunks of its outer
index, each chunk reducing into its own slot; an outlined body goes into a chunk
function (interleaved element streams, in a module of its own). ``render`` also gives
the serial tier (the same source with ``parallel=False``), which ``build`` compiles
first under ``parallel="auto"``: fixed chunks make both tiers, and any thread count,
give the same bits. Long loop bodies are ``llvm.body`` specs; a schedule made only of
them is built by ``llvm.kernel`` without Numba, and the Numba source rendered here is
what ``compiled.source`` shows for it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numgrad.config as config
from numgrad.compiler.backends.cpu import cache as _cache
from numgrad.compiler.backends.cpu.llvm import body as _llvm_body
from numgrad.compiler.backends.cpu.program import cshape
from numgrad.compiler.backends.spelling import Spell
from numgrad.compiler.schedule import PARALLEL_CHUNKS, Alias, Reduce
from numgrad.compiler.schedule import _size

_NB_TYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32",
             "bool": "boolean", "int16": "int16", "int8": "int8", "uint8": "uint8"}


# --------------------------------------------------------------- spelling
# np.nan / np.inf: CPU kernels import NumPy.
SPELL = Spell("np")


def _nb_array_type(v):
    """Numba's type string for a C-contiguous array of ``v``'s canonical shape."""
    dims = [":"] * (len(cshape(v.shape)) - 1) + ["::1"]
    return f"{_NB_TYPES[v.dtype.name]}[{', '.join(dims)}]"


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
    fixed trip counts. Shape-generic plans: every extent other than 1 that a kernel
    input has (``Kernel.extents``) is a name bound from that input's shape at run time
    (``e_a = v_x.shape[0]``), so the source, and the compiled module, is the same for
    every shape with the same ranks, broadcast pattern and equalities between extents.
    An extent no input has (a reshape's product, say) stays a literal: the source then
    differs per shape, which costs a compile, never a wrong result."""

    def __init__(self, extents=(), name=None):
        self.generic = bool(name)
        self.names = {}
        self.lines = []
        self.used = set()   # names spelled since the last reset (chunk-function params)
        for s, v, d in extents:
            k, letters = len(self.names), ""
            while True:
                letters = chr(97 + k % 26) + letters
                k = k // 26 - 1
                if k < 0:
                    break
            self.names[s] = f"e_{letters}"
            self.lines.append(f"e_{letters} = {name(v)}.shape[{d}]")

    def dim(self, s):
        if s in self.names:
            self.used.add(self.names[s])
            return self.names[s]
        return str(s)

    def size(self, shape):
        lit = math.prod(s for s in shape if s not in self.names)
        names = [self.names[s] for s in shape if s in self.names]
        self.used.update(names)
        if lit != 1 or not names:
            names.append(str(lit))
        return " * ".join(names)

    def shape(self, shape):
        dims = [self.dim(s) for s in cshape(shape)]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


_STATIC = Extents()


# ---------------------------------------------------------------- renderer
class KernelRenderer:
    """One ``Kernel`` of a schedule as Numba source; chunk functions into ``helpers``."""

    def __init__(self, kernel, sched, name, options=None):
        self.k = kernel
        self.sched = sched
        self.kname = name
        # Long outlined bodies are LLVM IR written by backends.cpu.llvm.body (Numba compiles
        # only the kernel around them): ``name = chunk_kernel(spec)`` lines, rendered
        # before the kernel in its own module, so both tiers have them.
        self.ir_bodies = (options is not None and options.vector_math
                          and config.get("NUMGRAD_LLVM_BODY"))
        self.fastmath = options is not None and options.fastmath
        self.ir_helpers = []
        self.ext = Extents(kernel.extents, self.name if sched.generic else None)
        self.lines = []
        self.helpers = []   # (name, source) of chunk functions, rendered before the kernel
        self.used = set()   # array and scalar names spelled in the current loop body

    # names of a Var's array, flat view, hoisted scalar, local scalar
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

    def source(self, parallel):
        """The kernel's function; ``parallel``: the decorator's flag (the tier)."""
        k = self.k
        self.lines = []
        self.helpers = []
        self.ir_helpers = []
        for line in self.ext.lines:
            self.emit(line)
        for v in k.inputs:
            self.emit(f"{self.flat(v)} = view({self.name(v)}, {self.ext.size(cshape(v.shape))})")
        for b in k.body:
            if isinstance(b, Alias):
                self.alias(b)
            else:
                self.loop(b)
        rets = [self.name(v) if v not in k.literals
                else f"full(1, {SPELL.lit(k.literals[v].value, v.dtype)})" for v in k.outputs]
        self.emit("return (" + ", ".join(rets) + ("," if len(rets) == 1 else "") + ")")
        graph = self.sched.graph
        if self.sched.generic:  # no extents in comments: the source must not depend on them
            eqn_lines = "\n".join(f"#   {e.out.name} = {e.name} " + " ".join(
                v.name for v in e.inputs) for e in k.eqns)
        else:
            eqn_lines = "\n".join(f"#   {e.format(graph.consts)}" for e in k.eqns)
        sig = "(" + ", ".join(_nb_array_type(v) for v in k.inputs) + (
            "," if len(k.inputs) == 1 else "") + ")"
        args = ", ".join(self.name(v) for v in k.inputs)
        head = (f"# stage {k.index}: fuses\n{eqn_lines}\n"
                f"@njit({sig!r}, cache=True, parallel={parallel and k.parallel}, "
                f"fastmath=FASTMATH, error_model='numpy')\n"
                f"def {self.kname}({args}):")
        return ("".join(self.ir_helpers) + head + "\n" + "\n".join(self.lines) + "\n")

    # ------------------------------------------------------------ layout
    def alias(self, a):
        # reshape: the flat data is shared, so it is free.
        if a.fill is not None:
            self.new_array(a.src, fill=SPELL.lit(a.fill.value, a.fill.dtype))
        self.emit(f"{self.flat(a.out)} = {self.flat(a.src)}")
        self.emit(f"{self.name(a.out)} = view({self.flat(a.out)}, {self.ext.shape(a.out.shape)})")

    # -------------------------------------------------------------- loops
    def loop(self, L):
        S, ext = L.shape, self.ext
        for a in L.allocs:
            self.new_array(a.var, None if a.fill is None
                           else SPELL.lit(a.fill.value, a.fill.dtype))
        for r in L.full_reductions:
            self.emit(f"acc_{r.out.name} = {SPELL.lit(r.identity.value, r.dtype)}")
        for h in L.hoisted:
            if h.kind == "scalar":
                self.emit(f"s_{h.var.name} = {self.flat(h.var)}[0]")
        if L.runtime_size:
            # The same loop twice: threaded above the work threshold, serial below it
            # (a prange loop on few elements costs more than it saves). Both run the same
            # chunks in the same order, so the bits do not depend on the branch (they may
            # differ from a static plan's in the last place: with a literal chunk count
            # LLVM sums the partial sums in another order).
            threaded = self.loop_block(L, "prange")
            serial = self.loop_block(L, "range", outline=False)
            self.lines += ([f"    if ({ext.size(S)}) * {L.weight} >= {self.sched.min_work}:"]
                           + ["    " + line for line in threaded] + ["    else:"]
                           + ["    " + line for line in serial])
        else:
            self.lines += self.loop_block(L, "prange" if L.parallel else "range")
        # Finish reductions.
        for r in L.full_reductions:
            acc = f"acc_{r.out.name}"
            if r.mean:
                acc = (f"{acc} / {SPELL.cast(ext.size(S), r.dtype)}" if ext.generic
                       else f"{acc} / {SPELL.lit(_size(S), r.dtype)}")
            # In its own shape: a keepdim sum of a (1, 1) value is (1, 1), not (1,).
            self.new_array(r.out)
            self.emit(f"{self.flat(r.out)}[0] = {acc}")
        for r in L.partial_reductions:
            if not r.mean:
                continue
            if ext.generic:
                full = cshape(r.eqn.inputs[0].shape)
                cnt = ext.size([s for s, k in zip(full, cshape(r.keep)) if k == 1])
                self.emit(f"{self.flat(r.out)} /= {SPELL.cast(cnt, r.dtype)}")
            else:
                # NOTE: an empty output has nothing to divide (and would divide by zero).
                self.emit(f"{self.flat(r.out)} /= {SPELL.lit(r.count, r.dtype)}")

    def loop_block(self, L, prange, outline=True):
        """The loop's lines at depth 1 (chunk set-up included), with ``prange`` the
        spelling of its outer loop; an outlined body's chunk function is added to
        ``helpers`` once (``outline``), and called."""
        S, ext = L.shape, self.ext
        saved, self.lines = self.lines, []
        chunk = L.chunked
        if ext.generic:
            outer = ext.dim(S[0]) if not L.flat else ext.size(S)
        else:
            outer = S[0] if not L.flat else _size(S)
        if chunk:
            if ext.generic:  # the schedule's static formula, evaluated in the kernel
                n = L.index
                self.emit(f"csize{n} = max(1, -(-({outer}) // {PARALLEL_CHUNKS}))")
                self.emit(f"nchunks{n} = -(-({outer}) // csize{n})")
                size, chunks = f"csize{n}", f"nchunks{n}"
            else:
                size, chunks = L.chunk_size, L.chunks
            for r in L.full_reductions:
                self.emit(f"parts_{r.out.name} = alloc({chunks}, np.{r.dtype.name})")
        head = self.lines
        self.lines = []
        self.used, ext.used = set(), set()
        streams = L.streams if L.outlined else 1
        serial = not chunk and not L.parallel and len(L.body) >= _llvm_body.SERIAL_MIN_BODY
        spec = (_llvm_body.build_spec(L, self.fastmath)
                if (L.outlined or serial) and self.ir_bodies else None)
        bodies = [] if spec else [self.body(L, outer, prange, k if streams > 1 else None)
                                  for k in range(streams)]
        params = sorted(self.used | ext.used)
        self.lines = head
        if spec:
            self.k.ir_specs[L.index] = spec
        if chunk:
            self.chunks(L, bodies, params, chunks, size, outer, prange, outline, spec)
        elif spec:  # a serial loop: the IR body over all of it, in one call
            text, names = spec
            name = f"{self.kname}_b{len(self.ir_helpers)}"
            self.ir_helpers.append(f"{name} = chunk_kernel({text!r})\n")
            rets = "".join(self.acc(r, L) + ", " for r in L.full_reductions)
            self.emit((f"{rets}= " if rets else "") + f"{name}(0, {outer}"
                      + "".join(", " + p for p in names) + ")")
        else:
            self.lines += bodies[0]
        out, self.lines = self.lines, saved
        return out

    def acc(self, r, L):
        return f"a_{r.out.name}" if L.chunked else f"acc_{r.out.name}"

    def body(self, L, outer, prange, stream=None):
        """The loop nest (depth 1) and its statements; ``stream`` k: the statements only,
        for stream k of an interleaved chunk function (arrays read at ``[j]`` of the
        stream's views, locals ``t<k>_``, stream k > 0 counting duplicated elements once)."""
        S, ext = L.shape, self.ext
        lines = []
        first = ("range(m)" if L.chunked else f"{prange}({outer})")
        depth = 1
        if L.flat:
            lines.append(f"    for {'j' if L.chunked else 'i'} in {first}:")
            depth = 2
            if L.chunked:
                lines.append("        i = lo + j")
            idx = ["i"]
        else:
            for d, s in enumerate(S):
                pad = "    " * depth
                if d == 0 and L.chunked:
                    lines.append(f"{pad}for j in {first}:")
                    lines.append(f"{pad}    i0 = lo + j")
                else:
                    lines.append(f"{pad}for i{d} in "
                                 f"{first if d == 0 else f'range({ext.dim(s)})'}:")
                depth += 1
            idx = [f"i{d}" for d in range(len(S))]
        if stream is not None:
            lines = []
        pad = "    " * depth
        tname = ("t_" if not stream else f"t{stream}_")

        def at(v, shape):
            self.used.add(self.flat(v))
            if stream is not None:
                return f"{self.flat(v)}_s{stream}[j]"
            off = "i" if L.flat else _broadcast_offset(shape, len(S), idx, ext)
            return f"{self.flat(v)}[{off}]"

        def read(ref):
            if ref.kind == "local":
                return tname + ref.var.name
            if ref.kind == "literal":
                return SPELL.lit(ref.literal.value, ref.literal.dtype)
            if ref.kind == "scalar":
                self.used.add(f"s_{ref.var.name}")
                return f"s_{ref.var.name}"
            return at(ref.var, ref.shape)

        for st in L.body:
            if isinstance(st, Reduce):
                val = read(st.arg)
                if st.full:
                    target = self.acc(st, L)
                else:
                    self.used.add(self.flat(st.out))
                    target = (f"{self.flat(st.out)}"
                              f"[{_broadcast_offset(st.keep, len(S), idx, ext)}]")
                if st.additive:
                    # radd: the one reassociable addition (backends/cpu/accumulate_ir.py).
                    if stream:  # a duplicated element (see interleave) counts once
                        zero = SPELL.lit(st.identity.value, st.dtype)
                        b = f"b{stream}_{st.out.name}"
                        lines.append(f"{pad}{b} = radd({b}, ({val} if j >= "
                                     f"d{stream} else {zero}))")
                    else:
                        lines.append(f"{pad}{target} = radd({target}, {val})")
                else:
                    expr = st.combine.scalar([target, val], st.dtype, {}, SPELL)
                    lines.append(f"{pad}{target} = {expr}")
                continue
            args = [read(a) for a in st.args]
            if st.paired:  # sin and cos of one argument: see llvm.vmath.sin_paired
                expr = f"{st.op.name}_paired({args[0]})"
            else:
                expr = SPELL.wrapped(st.op.scalar(args, st.dtype, st.params, SPELL), st.dtype)
            t = tname + st.out.name
            lines.append(f"{pad}{t} = {expr}")
            if st.store:
                lines.append(f"{pad}{at(st.out, st.out.shape)} = {t}")
        return lines

    def chunks(self, L, bodies, params, chunks, size, outer, prange, outline, spec=None):
        """The chunk loop around the loop body (``bodies[0]``; one per stream)."""
        reds = L.full_reductions
        inits = [f"{self.acc(r, L)} = {SPELL.lit(r.identity.value, r.dtype)}" for r in reds]
        self.emit(f"for c in {prange}({chunks}):")
        self.emit(f"lo = c * {size}", 2)
        self.emit(f"m = min({size}, {outer} - lo)", 2)
        if spec is not None:
            # The body is LLVM IR (backends.cpu.llvm.body): Numba sees one call per chunk.
            text, names = spec
            name = f"{self.kname}_b{len(self.ir_helpers)}"
            if outline:
                self.ir_helpers.append(f"{name} = chunk_kernel({text!r})\n")
            else:
                name = f"{self.kname}_b{len(self.ir_helpers) - 1}"
            rets = "".join(self.acc(r, L) + ", " for r in reds)
            self.emit((f"{rets}= " if reds else "") + f"{name}(lo, m"
                      + "".join(", " + p for p in names) + ")", 2)
        elif L.outlined:
            # The body becomes its own serial function over one chunk; the parallel loop
            # only calls it (schedule.PARALLEL_INLINE_MAX_BODY).
            name = f"{self.kname}_g{len(self.helpers) if outline else len(self.helpers) - 1}"
            args = "".join(", " + p for p in params)
            rets = "".join(self.acc(r, L) + ", " for r in reds)
            if L.streams > 1:
                head, body, tail = self.interleave(L, bodies)
            else:
                head = ["    " + line for line in inits]
                body = bodies[0]
                tail = [f"    return ({rets})"]
            if outline:
                self.helpers.append((name, "\n".join(
                    ["@njit(cache=True, fastmath=FASTMATH, error_model='numpy')",
                     f"def {name}(lo, m{args}):", "    noalias_args()"] + head + body + tail)
                    + "\n"))
            self.emit((f"{rets}= " if reds else "") + f"{name}(lo, m{args})", 2)
        else:
            for line in inits:
                self.emit(line, 2)
            self.lines.extend("    " + line for line in bodies[0])
        for r in reds:
            self.emit(f"parts_{r.out.name}[c] = {self.acc(r, L)}", 2)
        for r in reds:
            self.emit(f"for c in range({chunks}):")
            self.emit(f"acc_{r.out.name} += parts_{r.out.name}[c]", 2)

    def interleave(self, L, bodies):
        """A flat chunk loop as ``L.streams`` interleaved element streams, statement by
        statement: stream 0 keeps the t_ names, stream s uses t<s>_, each on its own
        stretch of the chunk.

        A long fused chain is one dependency chain per element: in a vectorised loop each
        vector waits on the latency of every transcendental, and its body is far too long
        for the CPU to overlap the next iteration. Independent streams overlap those
        waits (``schedule``: a long or heavy parallel body). When m does not divide,
        the last streams start early, so some elements are computed twice: written twice
        with the same value, and counted once in sums."""
        n = L.streams
        head = [f"    q = (m + {n - 1}) // {n}"]
        for k in range(1, n):
            head += [f"    st{k} = min({k} * q, m - q)", f"    d{k} = {k} * q - st{k}"]
        # Each stream indexes its own views: two offsets into one array would be an
        # unknown-distance dependence, which stops LLVM's loop vectoriser.
        arrays = sorted({self.flat(r.var) for st in L.body
                         for r in (st.args if not isinstance(st, Reduce) else [st.arg])
                         if r.kind == "array"}
                        | {self.flat(st.out) for st in L.body
                           if not isinstance(st, Reduce) and st.store})
        for a in arrays:
            head.append(f"    {a}_s0 = {a}[lo:lo + q]")
            head += [f"    {a}_s{k} = {a}[lo + st{k}:lo + st{k} + q]" for k in range(1, n)]
        reds = L.full_reductions
        for r in reds:
            zero = SPELL.lit(r.identity.value, r.dtype)
            head += [f"    {self.acc(r, L)} = {zero}"]
            head += [f"    b{k}_{r.out.name} = {zero}" for k in range(1, n)]
        out = ["    for j in range(q):"]
        for lines in zip(*bodies):
            out.extend(lines)
        sums = ["(" + " + ".join([self.acc(r, L)] + [f"b{k}_{r.out.name}" for k in range(1, n)])
                + ")" for r in reds]
        tail = ["    return (" + "".join(t + ", " for t in sums) + ")"]
        return head, out, tail


# ------------------------------------------------------------------ compile
def render(sched, parallel=True, options=None):
    """``(kernel sources, chunk-function sources)`` of a schedule, kernels named; with
    ``parallel=False`` the serial tier (same code, ``parallel=False`` decorators)."""
    srcs, helpers = [], []
    for k in sched.kernels:
        # Numba's cache ignores parallel=: give the parallel variant its own name.
        k.name = f"{_safe(sched.name)}_{sched.role}_{k.index}" + ("_par" if k.parallel else "")
        r = KernelRenderer(k, sched, k.name, options)
        srcs.append(r.source(parallel))
        helpers += r.helpers
    return srcs, helpers


def _header(options):
    helpers = "scalar_vec" if options.vector_math else "scalar"
    # No fast-math flags by default: every +, -, *, / rounds as eager mode's does (with
    # `contract`, a*b + c became one FMA: other bits, and a product beyond the float range
    # that no longer overflowed; with `reassoc`, x * 1e300 * 1e-300 folded to x). Sums
    # still vectorise: their accumulators add through radd, which carries `reassoc` alone
    # (backends/cpu/accumulate_ir.py), a reordering of additions like any SIMD sum (torch, XLA).
    # The llvm.vmath functions pin their own flags, so their accuracy does not depend on these.
    # nnan/ninf stay off unless fastmath=True: NaN and inf must propagate as in eager mode.
    # No `afn`: with it LLVM turns pow(x, float(int or bool)) into llvm.powi, whose
    # library call (__powisf2/__powidf2) Numba's JIT cannot resolve: x ** bool_tensor
    # segfaulted. It bought nothing measurable (docs/design-notes.md, "Fast-math flags").
    # No `nsz` or `arcp` either (tests/compiler/test_jit_special_values.py): with nsz LLVM
    # folds x + 0.0 to x (-0 stays -0; eager gives +0), and with arcp it turns a float32
    # 1 / sqrt(x) into an rsqrt estimate (NaN and wrong infinities at 0, inf, subnormals)
    # and x / c into x * (1 / c) (a different rounding from eager's division).
    flags = set()
    if options.fastmath:
        flags |= {"contract", "reassoc", "nnan", "ninf", "nsz", "arcp"}
    return ("# generated by numgrad: one function per fused stage\n"
            "import numpy as np\n"
            "from numba import njit, prange\n"
            f"from numgrad.compiler.backends.cpu.{helpers} import *  # noqa: F401,F403\n\n"
            f"FASTMATH = set({sorted(flags)!r})\n\n")


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """A schedule's Numba source, as ``build`` compiles it."""
    sched: object
    header: str            # imports and FASTMATH, shared by every module of the plan
    source: str            # the kernels' module (prange tier)
    chunk_fns: list        # (name, source) of chunk functions
    chunk_source: str      # their module ("" without any): both tiers import it

    @property
    def sources(self):
        """The modules to load, the chunk functions' first."""
        return (self.chunk_source, self.source) if self.chunk_fns else (self.source,)

    def serial(self, options):
        """The kernels' module of the serial tier (``parallel=False`` decorators)."""
        return self.header + "\n\n".join(render(self.sched, parallel=False,
                                                 options=options)[0])


def render_program(sched, options):
    """A schedule -> its ``Rendered`` modules (nothing compiled)."""
    srcs, chunk_fns = render(sched, parallel=True, options=options)
    header = _header(options)
    if any("= chunk_kernel(" in src for src in srcs):
        header += "from numgrad.compiler.backends.cpu.llvm.body import chunk_kernel\n\n"
    chunk_source = ""
    if chunk_fns:
        # Chunk functions get a module of their own that both tiers import: otherwise
        # each tier would compile its own machine code for them, the most expensive part
        # of a long chain (docs/design-notes.md, "Tiers").
        chunk_source = header + "\n\n".join(src for _, src in chunk_fns)
        header += (f"from {_cache.module_name(chunk_source)} import "
                   f"{', '.join(name for name, _ in chunk_fns)}\n\n")
    return Rendered(sched=sched, header=header, source=header + "\n\n".join(srcs),
                    chunk_fns=chunk_fns, chunk_source=chunk_source)


def _safe(name):
    out = "".join(c if c.isalnum() else "_" for c in name)
    return out if out and not out[0].isdigit() else "f_" + out


__all__ = ["SPELL", "Extents", "KernelRenderer", "Rendered", "render", "render_program"]

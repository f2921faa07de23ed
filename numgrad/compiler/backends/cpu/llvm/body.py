"""backends.cpu.llvm.body: a long fused loop body rendered straight to LLVM IR, vectorised by hand.

Room: compiler. A long elementwise chain (hundreds of statements forward, more in the
backward) used to become a Python chunk function that Numba typed, lowered and handed
to LLVM's loop vectoriser, and most of a cold compile went there (docs/design-notes.md,
"LLVM bodies"). Here the body is written as IR from a compact *spec* (a JSON
string in the kernel source, so Numba's disk cache keys on it like any other source):

- the loop walks ``STREAMS`` vectors of the machine's width per iteration, statement by
  statement interleaved (as ``KernelRenderer.interleave`` does with element streams);
  the last, partial block uses masked loads and stores, so every element goes through
  the same instructions;
- each statement is its op's own scalar lowering from the registry (``op.scalar`` over
  named operands and literals) evaluated on IR values: Python's operators emit the IR
  instruction, helpers (``_Helpers`` and llvm.vmath's transcendentals) their IR; a helper
  whose registry row says ``llvm="numba"`` leaves the loop to Numba, on purpose, and one
  that says nothing (or that no row carries) is an error (``UnknownHelper``). Other
  constructs (comparisons, conditionals) leave the loop to Numba. Transcendentals call
  llvm.vmath's bodies at the one vector width (the first INLINE_CALL_SITES sites inlined,
  as in Numba loops), and the two members of a registry pair (sin and cos of one value)
  one function with both bodies, which LLVM merges once per module;
- the kernels carry no fast-math flags (unless fastmath=True), so elementwise values are
  bit-identical to the Numba-lowered loop, also across segment cuts (SEGMENT_OPS); a sum
  adds lane by lane into per-stream vector accumulators and folds them in a fixed order
  (the same in both tiers and for any thread count; not radd's order).

Numba sees only the stage shell: ``chunk_kernel(spec)`` is an intrinsic that defines the
body function in the shell's LLVM module and calls it once per chunk.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re

import numpy as np
from llvmlite import ir

from numgrad.compiler.backends.cpu.llvm import vmath as _vm
from numgrad.compiler.backends.cpu.llvm.attrs import add_string_attribute, declare
from numgrad.ops import registry as _registry

# Long flat chunk bodies are rendered here unless NUMGRAD_LLVM_BODY=0 (then the Numba chunk
# functions, for comparison; read by backends.cpu.renderer at each render).
# A serial (unchunked) flat loop of at least this many statements is rendered here too,
# as one call over the whole loop: a 5-step chain (26 statements) is below the work at
# which loops go parallel, and Numba's front end and LLVM's vectoriser were most of its
# compile. Shorter loops keep Numba's, which ran them faster (docs/design-notes.md,
# "LLVM bodies").
SERIAL_MIN_BODY = 25
# Vectors per loop iteration, interleaved statement by statement: a long chain is one
# dependency chain per element, and two independent ones hide each other's latency.
STREAMS = 2
# Segment functions (_Body._plan). One function holding a whole long body is one basic
# block of thousands of instructions, and LLVM's register allocation and instruction
# selection grow faster than linearly in that. But a cut costs run time (the values that
# cross it go through memory, and each segment call spills the vector registers;
# docs/design-notes.md, "LLVM bodies"). So only bodies over SEGMENT_MIN_BODY statements are cut,
# into segments of SEGMENT_OPS.
SEGMENT_MIN_BODY = 1000
SEGMENT_OPS = 250

_FLOATS = {"float64": 64, "float32": 32}


class _Decline(Exception):
    """The body holds something this renderer does not write (the Numba loop stays)."""


class _SpellIR:
    """The registry's scalar lowerings (``op.scalar(args, dtype, params, spell)``) spell
    literals through this: each becomes a named constant ``c<n>`` of the spec."""

    def __init__(self, dtype):
        self.dtype, self.consts = dtype, []

    def lit(self, value, dtype):
        if np.dtype(dtype) != self.dtype:
            raise _Decline
        self.consts.append(float(value).hex())
        return f"c{len(self.consts) - 1}"

    def cast(self, expr, dtype):
        if np.dtype(dtype) != self.dtype:
            raise _Decline
        return expr


_ALIAS = re.compile(r"a(\d+)")


class UnknownHelper(LookupError):
    """A lowering calls a helper this renderer cannot place: no registry row carries it,
    or its ``Helper`` row says nothing of LLVM bodies (``llvm=``)."""


def _helper_written(name, op):
    """Whether a body may call the helper ``name`` (from ``op``'s lowering): True when
    _Eval writes it, False when its Helper row says on purpose that the loop stays Numba's;
    anything else raises UnknownHelper, at build time, rather than falling back unseen."""
    h = _registry.HELPERS.get(name)
    if h is None:
        raise UnknownHelper(
            f"the lowering of {op.name!r} calls {name!r}, which no registry row carries "
            "(give the row helpers=(Helper(...),))")
    if h.llvm == "numba":
        return False
    if h.llvm is None:
        raise UnknownHelper(
            f"helper {name!r} (called by {op.name!r}) does not say how a long LLVM loop body "
            "spells it: give its Helper llvm='numba' to keep such loops in Numba")
    if name not in _Eval.functions():
        raise UnknownHelper(f"helper {name!r} says llvm={h.llvm!r}, but backends.cpu.llvm "
                            "has no IR version of it")
    return True


def _renders(expr, nargs, nconsts, op):
    """Whether ``expr`` (a lowering over a0.., c0.. of ``op``) is made only of what _Eval
    has (an unknown helper raises: ``_helper_written``)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and not _helper_written(node.func.id, op)):
            return False
    allowed = {f"a{i}" for i in range(nargs)} | {f"c{i}" for i in range(nconsts)} | set(
        _Eval.functions())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in allowed:
            return False
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            return False
        if isinstance(node, ast.BinOp) and not isinstance(
                node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            return False
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.USub):
            return False
        if isinstance(node, (ast.Compare, ast.BoolOp, ast.IfExp, ast.Attribute,
                             ast.Subscript, ast.Constant)):
            return False
    return True


def build_spec(loop, fastmath=False):
    """``(spec, argument names)`` of a flat, chunked schedule ``Loop``'s body (the
    arguments in the order the chunk call passes them), or None when something in it is
    not rendered here: another op, a dtype other than float32/float64 or mixed dtypes, a
    partial or non-additive reduction. Arrays are ``f_<var>``, hoisted scalars
    ``s_<var>``, as ``backends.cpu.renderer`` names them."""
    if not loop.flat or loop.partial_reductions:
        return None
    from numgrad.compiler.schedule import Reduce
    dtype = None
    for st in loop.body:
        dt = np.dtype(st.dtype)
        dtype = dtype or dt
        refs = [st.arg] if isinstance(st, Reduce) else st.args
        if dt != dtype or dt.name not in _FLOATS or any(
                np.dtype(r.var.dtype if r.kind != "literal" else r.literal.dtype) != dtype
                for r in refs):
            return None
        if isinstance(st, Reduce) and not (st.full and st.additive):
            return None
    if dtype is None:
        return None
    params, ops, temp, loads = [], [], {}, {}

    def arg(name):
        if name not in params:
            params.append(name)
        return name

    def new_temp():
        return len(ops)

    def ref(r):
        v = r.var
        if r.kind == "local":
            return temp[v]
        if r.kind == "literal" or r.kind == "scalar":
            key = (r.kind, v)
            if key not in temp:
                t = new_temp()
                if r.kind == "scalar":
                    ops.append(["sc", t, arg(f"s_{v.name}")])
                else:
                    ops.append(["k", t, float(r.literal.value).hex()])
                temp[key] = t
            return temp[key]
        name = f"f_{v.name}"
        if name not in loads:
            t = new_temp()
            ops.append(["ld", t, arg(name)])
            loads[name] = t
        return loads[name]

    nred = 0
    for st in loop.body:
        if isinstance(st, Reduce):
            ops.append(["red", nred, ref(st.arg)])
            nred += 1
            continue
        srcs = [ref(r) for r in st.args]
        spell = _SpellIR(dtype)
        try:  # the registry's own scalar lowering, over named operands
            expr = st.op.scalar([f"a{i}" for i in range(len(srcs))], st.dtype, st.params,
                                spell)
        except _Decline:
            return None
        if not _renders(expr, len(srcs), len(spell.consts), st.op):
            return None
        m = _ALIAS.fullmatch(expr)
        if m:  # the identity at run time (detach, expand, x ** 1...)
            temp[st.out] = srcs[int(m.group(1))]
        else:
            t = new_temp()
            pair = list(st.op.cost.pairs) if st.paired and st.op.cost.pairs else None
            ops.append(["op", t, expr, srcs, spell.consts, pair])
            temp[st.out] = t
        if st.store:
            ops.append(["st", arg(f"f_{st.out.name}"), temp[st.out]])
    # The kernels' flags (backends.cpu.renderer._header): none unless fastmath=True, so every
    # operation rounds as eager mode's does.
    flags = ("contract", "reassoc", "nnan", "ninf", "nsz", "arcp") if fastmath else ()
    # Arguments in the order the shell passes them (cpu._emit_chunks sorts its names).
    params = tuple(sorted(params))
    # The segment size and stream count are part of the spec (and so of the cache key):
    # the streams decide the order of a sum's additions.
    return json.dumps([1, dtype.name, params, flags, nred, ops, SEGMENT_OPS, SEGMENT_MIN_BODY,
                       STREAMS],
                      separators=(",", ":")), params


# ------------------------------------------------------------------ rendering
def _lanes(bits):
    """Elements per vector: the widest registers the host has (AVX-512: 8 float64)."""
    from llvmlite import binding as llb
    feats = llb.get_host_cpu_features()
    width = 512 if feats.get("avx512f") else 256 if feats.get("avx") else 128
    return width // bits


class _Body:
    """One body function in an LLVM module (see the module docstring)."""

    def __init__(self, module, spec, fname):
        (_, dtype, self.params, self.flags, self.nred, self.ops, self.seg, self.seg_min,
         self.U) = spec
        self.bits = _FLOATS[dtype]
        self.ft = ir.DoubleType() if self.bits == 64 else ir.FloatType()
        self.W = _lanes(self.bits)
        self.vt = ir.VectorType(self.ft, self.W)
        self.module = module
        i64 = ir.IntType(64)
        argtys = [i64, i64] + [ir.PointerType(self.ft) if p.startswith("f_") else self.ft
                               for p in self.params]
        ret = ir.LiteralStructType([self.ft] * self.nred) if self.nred else ir.VoidType()
        self.fn = self._function(fname, ir.FunctionType(ret, argtys))
        self._emit()

    def _function(self, name, fnty, inline=False):
        """An internal noinline (or alwaysinline) function ``(lo or base, m or valid,
        *params, ...)`` of the body: wide vectors preferred, the params named, the
        arrays noalias."""
        fn = ir.Function(self.module, fnty, name)
        fn.linkage = "internal"
        for a in ("alwaysinline" if inline else "noinline", "nounwind"):
            fn.attributes.add(a)
        add_string_attribute(fn, f'"prefer-vector-width"="{_vm.PREFER_VECTOR_WIDTH}"')
        for a, p in zip(fn.args[2:], self.params):
            a.name = p
            if p.startswith("f_"):
                a.add_attribute("noalias")  # kernels only write arrays they allocated
        return fn

    # -- helpers ---------------------------------------------------------------
    def _masked(self, kind, ptr, mask, value=None):
        b = self.b
        vp = b.bitcast(ptr, ir.PointerType(self.vt))
        i32 = ir.IntType(32)
        align = ir.Constant(i32, self.bits // 8)
        mt = ir.VectorType(ir.IntType(1), self.W)
        sfx = f"v{self.W}f{self.bits}"
        if kind == "load":
            f = declare(
                self.module, ir.FunctionType(self.vt, [vp.type, i32, mt, self.vt]),
                f"llvm.masked.load.{sfx}.p0")
            return b.call(f, [vp, align, mask, ir.Constant(self.vt, None)])
        f = declare(
            self.module, ir.FunctionType(ir.VoidType(), [self.vt, vp.type, i32, mt]),
            f"llvm.masked.store.{sfx}.p0")
        return b.call(f, [value, vp, align, mask])

    def _splat(self, x):
        b = self.b
        v = b.insert_element(ir.Constant(self.vt, None), x, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(v, ir.Constant(self.vt, None),
                                ir.Constant(ir.VectorType(ir.IntType(32), self.W), [0] * self.W))

    def _const(self, hexval):
        x = float.fromhex(hexval)
        if self.bits == 32:
            x = float(np.float32(x))
        return ir.Constant(self.vt, [ir.Constant(self.ft, x)] * self.W)

    def _inline(self, name):
        """Whether this call site of ``name`` gets the body inlined: the first
        ``llvm.vmath.INLINE_CALL_SITES`` of a body, as in Numba-compiled loops. A call costs
        little next to a long body, but in a short one the spills around each call show
        (docs/design-notes.md, "LLVM bodies")."""
        n = self.sites.get(name, 0)
        self.sites[name] = n + 1
        return n < _vm.INLINE_CALL_SITES

    def _vector_fn(self, name, inline=False):
        """``name`` at this vector width: llvm.vmath's body, emitted once per module (once
        more for inlining), and only at the one width called (llvm.vmath's outlined set
        has four, weak_odr, each of which LLVM would optimise and emit)."""
        fname = f"numgrad_body_{name}_v{self.W}f{self.bits}" + ("_inl" if inline else "")
        fn = self.module.globals.get(fname)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(self.vt, [self.vt]), fname)
            fn.linkage = "internal"
            for a in ("alwaysinline" if inline else "noinline", "nounwind", "readnone"):
                fn.attributes.add(a)
            _vm._emit_body(fn, name, self.bits, self.W)
        return fn

    def _pair_fn(self, heads, inline=False):
        """Both members of a registry pair (sin and cos: ``pairs``) of one vector, in slot
        order: their bodies in one function, which LLVM merges (range reduction,
        polynomials) once per module (once more for inlining)."""
        fname = (f"numgrad_body_{'_'.join(heads)}_v{self.W}f{self.bits}"
                 + ("_inl" if inline else ""))
        fn = self.module.globals.get(fname)
        if fn is not None:
            return fn
        st = ir.LiteralStructType([self.vt] * len(heads))
        fn = ir.Function(self.module, ir.FunctionType(st, [self.vt]), fname)
        fn.linkage = "internal"
        for a in ("alwaysinline" if inline else "noinline", "nounwind", "readnone"):
            fn.attributes.add(a)
        add_string_attribute(fn, f'"prefer-vector-width"="{_vm.PREFER_VECTOR_WIDTH}"')
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        e = _vm._E(b, self.bits, self.W)
        x = _vm._V(e, fn.args[0])
        out = ir.Constant(st, None)
        for i, h in enumerate(heads):
            out = b.insert_value(out, e.v(_vm._BODIES[h](e, x)), i)
        b.ret(out)
        return fn

    def _eval(self, expr, args, consts):
        """The registry's scalar lowering ``expr`` (over a0.., c0..) as vector IR: its
        operators under the kernel's flags, its helpers as _Helpers has them."""
        ns = {f"a{i}": _Val(self, v) for i, v in enumerate(args)}
        ns.update({f"c{i}": _Val(self, self._const(c)) for i, c in enumerate(consts)})
        ns.update(_Helpers.bound(self))
        return eval(expr, {"__builtins__": {}}, ns).v  # checked by _renders

    def intrinsic(self, name, x):
        f = declare(
            self.module, ir.FunctionType(self.vt, [self.vt]),
            f"{name}.v{self.W}f{self.bits}")
        return self.b.call(f, [x])

    def vmath(self, head, x):
        return self.b.call(self._vector_fn(head, self._inline(head)), [x])

    # -- the function ----------------------------------------------------------
    def _plan(self):
        """Split the ops into segments: ``(segments, pairs, slots)``.

        Each segment is a function of its own (SEGMENT_OPS), called once per block; a
        value made in one segment and read in a later one goes through a stack slot. A
        body of one segment has it inlined into the block loop: called per block, it
        reloaded every constant (a movabs and a broadcast each) and its sums through
        memory each 16 elements (docs/design-notes.md, "LLVM bodies"). The
        kernels carry no fast-math flags, so no instruction may be fused with another
        (FMA contraction, reassociation) and a cut changes no result's bits; under
        fastmath=True (contract, reassoc) the body stays one function."""
        ops = self.ops
        last, seen = {}, {}
        for j, op in enumerate(ops):
            if op[0] == "op":
                for t in op[3]:
                    last[t] = j
                if op[5]:  # a member of a registry pair (sin and cos): by slot
                    seen.setdefault((op[5][0], op[3][0]), {}).setdefault(op[5][1], j)
            elif op[0] in ("st", "red"):
                last[op[2]] = j
        # (first, second) in program order: whichever of the pair comes first computes both
        # (a cos before its sin read the pair's second value before it existed).
        pairs = {k: tuple(sorted((d[0], d[1]))) for k, d in seen.items() if len(d) == 2}
        defs = {}     # value -> op index
        for j, op in enumerate(ops):
            if op[0] in ("ld", "op"):
                defs[op[1]] = j
        for key, (first, second) in pairs.items():
            defs[("pair", key)] = first
            last[("pair", key)] = second
        segments, start, work = [], 0, 0
        n_work = sum(op[0] in ("op", "red", "st") for op in ops)
        cut = not self.flags and n_work > self.seg_min
        for j, op in enumerate(ops):
            work += op[0] in ("op", "red", "st")
            if cut and work >= self.seg and j + 1 < len(ops):
                segments.append((start, j + 1))
                start, work = j + 1, 0
        segments.append((start, len(ops)))
        seg_of = {}
        for i, (a, z) in enumerate(segments):
            for j in range(a, z):
                seg_of[j] = i
        slots = {}
        for v, j in defs.items():
            if seg_of[last.get(v, j)] != seg_of[j]:
                for u in range(self.U):
                    slots[v, u] = len(slots)
        for r in range(self.nred):
            for u in range(self.U):
                slots[("acc", r), u] = len(slots)
        return segments, pairs, slots

    def _emit(self):
        fn, W, U = self.fn, self.W, self.U
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        segments, pairs, slots = self._plan()
        self.kinds = {op[1]: op for op in self.ops if op[0] in ("sc", "k")}
        self.sites = {}   # vmath function -> call sites so far (_inline)
        seg_fns = [self._segment(i, a, z, pairs, slots, inline=len(segments) == 1)
                   for i, (a, z) in enumerate(segments)]
        entry = fn.append_basic_block("entry")
        loop = fn.append_basic_block("loop")
        done = fn.append_basic_block("done")
        b = self.b = ir.IRBuilder(entry)
        lo, m = fn.args[0], fn.args[1]
        zero = ir.Constant(self.vt, [ir.Constant(self.ft, 0.0)] * W)
        scratch = b.alloca(self.vt, size=ir.Constant(i32, max(len(slots), 1)), name="slots")
        scratch.align = 64

        def slot(key):
            return b.gep(scratch, [ir.Constant(i32, slots[key])])

        for r in range(self.nred):
            for u in range(U):
                b.store(zero, slot((("acc", r), u)))
        block = ir.Constant(i64, W * U)
        nblocks = b.sdiv(b.add(m, ir.Constant(i64, W * U - 1)), block)
        b.cbranch(b.icmp_signed(">", nblocks, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        k = b.phi(i64, "k")
        k.add_incoming(ir.Constant(i64, 0), entry)
        start = b.mul(k, block)
        call_args = [b.add(lo, start), b.sub(m, start)] + list(fn.args[2:]) + [scratch]
        for f in seg_fns:
            b.call(f, call_args)
        k2 = b.add(k, ir.Constant(i64, 1))
        k.add_incoming(k2, loop)
        b.cbranch(b.icmp_signed("<", k2, nblocks), loop, done)
        b.position_at_end(done)
        if not self.nred:
            b.ret_void()
            return
        out = ir.Constant(fn.return_value.type, None)
        for r in range(self.nred):
            # Fixed order, no reassoc: lane 0..W-1 of stream 0, then stream 1, ...
            tot = None
            for u in range(U):
                acc = b.load(slot((("acc", r), u)))
                s = None
                for i in range(W):
                    x = b.extract_element(acc, ir.Constant(i32, i))
                    s = x if s is None else b.fadd(s, x)
                tot = s if tot is None else b.fadd(tot, s)
            out = b.insert_value(out, tot, r)
        b.ret(out)

    def _segment(self, index, a, z, pairs, slots, inline):
        """The function for ops [a, z) of one block: ``(base, valid, *args, slots)``;
        stream u covers elements [base + u*W, base + (u+1)*W), those below ``valid``."""
        W, U = self.W, self.U
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        argtys = ([i64, i64] + [a_.type for a_ in self.fn.args[2:]]
                  + [ir.PointerType(self.vt)])
        fn = self._function(f"{self.fn.name}_s{index}", ir.FunctionType(ir.VoidType(), argtys),
                            inline=inline)
        fn.args[-1].add_attribute("noalias")
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        base0, valid = fn.args[0], fn.args[1]
        args = dict(zip(self.params, fn.args[2:-1]))
        scratch = fn.args[-1]
        lane = ir.Constant(ir.VectorType(i64, W), list(range(W)))
        base, masks = [], []
        for u in range(U):
            off = ir.Constant(i64, u * W)
            base.append(b.add(base0, off))
            masks.append(b.icmp_signed("<", lane, self._splat_i64(b.sub(valid, off))))
        kinds = self.kinds
        val = {}

        def slot(key):
            return b.gep(scratch, [ir.Constant(i32, slots[key])])

        def get(t, u):
            v = val.get((t, u))
            if v is None:
                op = kinds.get(t)
                if op is not None and op[0] == "sc":
                    v = self._splat(args[op[2]])
                elif op is not None:
                    v = self._const(op[2])
                else:  # made in an earlier segment
                    v = b.load(slot((t, u)))
                val[t, u] = v
            return v

        def put(t, u, v):
            val[t, u] = v
            if (t, u) in slots:
                b.store(v, slot((t, u)))

        accs = {}
        for j in range(a, z):
            op = self.ops[j]
            kind = op[0]
            if kind in ("sc", "k"):
                continue
            for u in range(U):  # the streams interleaved statement by statement
                if kind == "ld":
                    put(op[1], u, self._masked("load", b.gep(args[op[2]], [base[u]]),
                                               masks[u]))
                elif kind == "op":
                    _, t, expr, srcs, consts, pair = op
                    key = (pair[0], srcs[0]) if pair else None
                    if key in pairs:
                        first, second = pairs[key]
                        if j == first:  # both now; the other is op `second`'s value
                            if u == 0:
                                self.pair_inline = self._inline(tuple(pair[:1]))
                            heads = [_head(self.ops[i][2]) for i in (first, second)]
                            res = b.call(self._pair_fn(heads, self.pair_inline),
                                         [get(srcs[0], u)])
                            put(t, u, b.extract_value(res, 0))
                            put(("pair", key), u, b.extract_value(res, 1))
                        else:
                            put(t, u, get(("pair", key), u))
                    else:
                        if u == 0:
                            self.sites_mark = dict(self.sites)
                        else:  # each stream's call site counts as the first stream's
                            self.sites = dict(self.sites_mark)
                        put(t, u, self._eval(expr, [get(x, u) for x in srcs], consts))
                elif kind == "st":
                    self._masked("store", b.gep(args[op[1]], [base[u]]), masks[u],
                                 get(op[2], u))
                else:  # ("red", r, src): a masked-off lane keeps its partial sum
                    key = (("acc", op[1]), u)
                    acc = accs.get(key)
                    if acc is None:
                        acc = b.load(slot(key))
                    s = b.fadd(acc, get(op[2], u), flags=self.flags)
                    accs[key] = b.select(masks[u], s, acc)
        for key, v in accs.items():
            b.store(v, slot(key))
        b.ret_void()
        return fn

    def _splat_i64(self, x):
        b, W = self.b, self.W
        vt = ir.VectorType(ir.IntType(64), W)
        v = b.insert_element(ir.Constant(vt, None), x, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(v, ir.Constant(vt, None),
                                ir.Constant(ir.VectorType(ir.IntType(32), W), [0] * W))


def _head(expr):
    """The helper a one-call lowering calls (``sin(a0)`` -> ``sin``)."""
    return expr.split("(", 1)[0]


class _Val:
    """A vector value in _Body._eval: Python's operators emit the IR instruction with the
    kernel's fast-math flags (none by default), in the lowering's operand order."""

    def __init__(self, body, v):
        self.body, self.v = body, v

    def _bin(self, other, how):
        fn = getattr(self.body.b, how)
        return _Val(self.body, fn(self.v, other.v, flags=self.body.flags))

    def __add__(self, other):
        return self._bin(other, "fadd")

    def __sub__(self, other):
        return self._bin(other, "fsub")

    def __mul__(self, other):
        return self._bin(other, "fmul")

    def __truediv__(self, other):
        return self._bin(other, "fdiv")

    def __neg__(self):
        return _Val(self.body, self.body.b.fneg(self.v, flags=self.body.flags))


class _Helpers:
    """IR versions of the scalar helpers (``backends.cpu.scalar``) the registry's lowerings
    call, beyond llvm.vmath's transcendentals; the same instructions Numba gives them."""

    @staticmethod
    def sqrt(body, x):
        return body.intrinsic("llvm.sqrt", x)

    @staticmethod
    def abs(body, x):
        return body.intrinsic("llvm.fabs", x)

    @staticmethod
    def relu(body, x, zero):  # PyTorch's x < 0 ? 0 : x (relu(-0) is -0, NaN passes)
        b = body.b
        return b.select(b.fcmp_ordered("<", x, zero, flags=body.flags), zero, x)

    @classmethod
    def names(cls):
        return [n for n, f in vars(cls).items() if isinstance(f, staticmethod)]

    @classmethod
    def bound(cls, body):
        def wrap(f):
            return lambda *a: _Val(body, f(body, *[x.v for x in a]))
        out = {n: wrap(getattr(cls, n)) for n in cls.names()}
        for head in _vm.TEMPLATES.values():
            out[head] = wrap(lambda body_, x, h=head: body_.vmath(h, x))
        return out


class _Eval:
    @staticmethod
    def functions():
        return _Helpers.names() + list(_vm.TEMPLATES.values())


# ------------------------------------------------------------------ the intrinsic
_KERNELS = {}


def chunk_kernel(spec_text):
    """An intrinsic ``(lo, m, *args) -> tuple of sums`` running the body of ``spec_text``
    over elements ``[lo, lo + m)`` of its array arguments (see the module docstring)."""
    fn = _KERNELS.get(spec_text)
    if fn is not None:
        return fn
    from numba import types  # here: llvm.kernel builds bodies without Numba
    from numba.extending import intrinsic
    spec = json.loads(spec_text)
    fname = "numgrad_body_" + hashlib.sha256(spec_text.encode()).hexdigest()[:16]
    nred = spec[4]
    elem = types.float64 if spec[1] == "float64" else types.float32

    def typer(lo, m, *args):
        ret = types.UniTuple(elem, nred) if nred else types.none
        sig = ret(lo, m, *args)

        def codegen(context, builder, signature, llargs):
            module = builder.module
            body = module.globals.get(fname)
            if body is None:
                body = _Body(module, spec, fname).fn
            call_args = [context.cast(builder, llargs[0], signature.args[0], types.int64),
                         context.cast(builder, llargs[1], signature.args[1], types.int64)]
            for ty, a in zip(signature.args[2:], llargs[2:]):
                if isinstance(ty, types.Array):
                    call_args.append(context.make_array(ty)(context, builder, value=a).data)
                else:
                    call_args.append(context.cast(builder, a, ty, elem))
            res = builder.call(body, call_args)
            if not nred:
                return context.get_dummy_value()
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(res, r) for r in range(nred)])

        return sig, codegen

    # Numba's intrinsics take no *args: spell the arguments out.
    names = ", ".join(f"a{i}" for i in range(len(spec[2])))
    ns = {"typer": typer}
    exec(f"def {fname}(typingctx, lo, m, {names}):\n"  # noqa: S102 (names we made)
         f"    return typer(lo, m, {names})\n", ns)
    fn = _KERNELS[spec_text] = intrinsic(ns[fname])
    return fn

"""codegen.cuda: a graph rendered as ``numba.cuda`` kernels and the host steps between them.

Room: compiler. The CUDA renderer. It reads each equation's scalar lowering from the
registry (the same templates the CPU renderer reads; ``cuda_scalar`` defines the
helpers they name for the device) and decides only what is CUDA's own:

- **elementwise** equations of one shape run in one kernel with a grid-stride loop over
  the flat index; values that never leave the kernel stay in registers. Broadcast,
  ``expand`` and ``permute`` reads are strided reads of an input (literal strides).
- **full reductions** (``sum``/``mean``/``amax``/``amin`` over every dim) fold into the
  kernel that computes their input: each thread accumulates, each block reduces in
  shared memory into its slot of a partials buffer, and a one-thread final pass combines
  the slots in order. The grid is fixed per device and shape, so every run adds in the
  same order: the same bits, as the CPU's fixed chunks give.
- **partial reductions** (some dims): one block per output element (grid-stride over
  them), threads stride over the reduced elements, a shared-memory tree combines them.
- **matmul** (1-d/2-d operands, or a batch with equal batch dims or a 2-d right side):
  a tiled shared-memory kernel (16x16 tiles). cuBLAS via nvmath-python is not used: it
  is not a dependency here, and the simulator could not test it.
- **reshape** and ``detach`` cost nothing (every value is a C-ordered flat buffer);
- everything else (gathers, cat, cumsum, argmax, hooks...) is a **host step**: the
  op's NumPy impl on a host copy, its result copied back (hooks get CUDA tensors).

Shapes are static: every extent and stride is a literal. ``compile`` returns a
``Program`` called with the inputs' ``CudaArray``s (or NumPy arrays, uploaded) that
returns the outputs' ``CudaArray``s; ``program.source`` is the CUDA source.
Every kernel rendered in this process is listed in ``RENDERED`` (name, source,
signature): the PTX test compiles each one for sm_90 with the real target.
"""
from __future__ import annotations

import math
import re

import numpy as np

from numgrad.compiler import cuda_device
from numgrad.compiler.ir import Eqn

TILE = 16
_TYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "bool": "boolean"}
_FULL_RED = {"sum": "add", "mean": "add", "amax": "max", "amin": "min"}
# Rendered kernels, by source text: (kernel name, source, Numba signature). The PTX test
# compiles every one with the real CUDA target.
RENDERED = {}


def _size(shape):
    return math.prod(shape) if shape else 1


def _cstrides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))


def literal(value, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "True" if bool(value) else "False"
    if dtype.kind in "iu":
        return f"np.int64({int(value)})"
    v = float(value)
    if math.isnan(v):
        return f"np.{dtype.name}(math.nan)"
    if math.isinf(v):
        return f"np.{dtype.name}({'' if v > 0 else '-'}math.inf)"
    return f"np.{dtype.name}({v!r})"


def scalar_expr(e, args):
    """The expression of an elementwise equation over its operand expressions.

    The registry's template, with the cases that template cannot say alone (typed
    literals, special exponents); the CPU renderer spells the same cases."""
    if isinstance(e.prim, str):  # detach
        return args[0]
    name, dt = e.prim.name, e.out.dtype
    p = e.params
    if name in ("expand", "permute"):  # the read is strided; the value passes through
        return args[0]
    if name == "to_dtype":
        if dt == np.bool_:
            return f"({args[0]} != 0)"
        return f"np.{dt.name}({args[0]})"
    if name == "pow_scalar":
        x, q = args[0], p["exponent"]
        special = {2: f"({x} * {x})", 3: f"({x} * {x} * {x})", 1: x, 0.5: f"sqrt({x})",
                   -0.5: f"({literal(1, dt)} / sqrt({x}))", -1: f"({literal(1, dt)} / {x})"}
        if q in special:
            return special[q]
        return f"power({x}, {literal(q, dt)})"
    if name == "pow_scalar_grad":  # dy * p * x**(p-1)
        q = p["exponent"]
        dy, x = args
        if q == 0:
            return f"({dy} * {literal(0, dt)})"
        if q == 1:
            return dy
        if q == 2:
            return f"({dy} * ({x} * {literal(2, dt)}))"
        return f"({dy} * ({literal(q, dt)} * power({x}, {literal(q - 1, dt)})))"
    if name == "clamp":
        lo, hi, x = p["min"], p["max"], args[0]
        if lo is not None and hi is not None:
            return f"clamp({x}, {literal(lo, dt)}, {literal(hi, dt)})"
        if lo is not None:
            return f"clamp_min({x}, {literal(lo, dt)})"
        return f"clamp_max({x}, {literal(hi, dt)})"
    if name == "fmod" and dt.kind == "f":
        return f"ffmod({args[0]}, {args[1]})"
    if name == "erf" and dt == np.float32:
        return f"np.float32(erf(np.float64({args[0]})))"
    if name == "relu":
        return f"relu({args[0]}, {literal(0, dt)})"
    if name == "sign":
        return args[0] if dt == np.bool_ else \
            f"sign({args[0]}, {literal(0, dt)}, {literal(1, dt)})"
    if name == "pow" and dt.kind in "iu":
        return f"ipower({args[0]}, {args[1]})"
    if name == "abs" and dt == np.bool_:
        return args[0]
    return e.prim.lowering.format(*args, **p)


# ------------------------------------------------------------------ classify
def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % ndim for d in dim)) if ndim else ()


def classify(e):
    """What the CUDA backend does with an equation: "ew", "red", "matmul", "alias", "host"."""
    if isinstance(e.prim, str):
        return "alias" if e.prim == "detach" else "host"
    vs = list(e.inputs) + [e.out]
    if any(v.dtype.name not in _TYPES for v in vs):
        return "host"
    name, kind = e.prim.name, e.prim.kind
    if name == "reshape":
        return "alias"
    if kind in ("elementwise", "compare"):
        return "ew" if e.prim.lowering is not None else "host"
    if name in ("where", "to_dtype", "expand", "permute"):
        return "ew"
    if name in _FULL_RED:
        return "red"
    if name == "matmul" and _matmul_dims(e) is not None:
        return "matmul"
    return "host"


def _matmul_dims(e):
    """(batch, M, K, N, x batched, y batched) for the kernel, or None (host step)."""
    x, y = e.inputs
    if x.dtype != y.dtype or x.dtype.kind != "f" or x.ndim == 0 or y.ndim == 0:
        return None
    xs = (1,) + x.shape if x.ndim == 1 else x.shape
    ys = y.shape + (1,) if y.ndim == 1 else y.shape
    bx, by = xs[:-2], ys[:-2]
    if by and bx != by:
        return None   # broadcast batches: the host's NumPy matmul
    batch = _size(bx)
    if batch > 65535:
        return None
    return batch, xs[-2], xs[-1], ys[-1], bool(bx), bool(by)


# ------------------------------------------------------------------- plan
class Group:
    """One elementwise kernel: eqns of one output shape, maybe full reductions at the end."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.eqns = []
        self.reds = []        # full reductions folded in
        self.locals = set()   # values computed in the kernel
        self.red_outs = set()


class Step:
    def __init__(self, kind, obj):
        self.kind = kind      # "group" | "red" | "matmul" | "alias" | "host"
        self.obj = obj        # Group or Eqn
        self.kernel = None    # (name, fn, launch info)


def _read_strides(v, out_shape, e=None):
    """Strides (in elements of ``v``) per dim of ``out_shape`` with which an element of the
    output reads ``v``: broadcast dims read with stride 0; ``permute`` reads its input
    with the permuted strides."""
    if e is not None and not isinstance(e.prim, str) and e.prim.name == "permute":
        src = _cstrides(v.shape)
        return [src[d % v.ndim] for d in e.params["dims"]]
    src = _cstrides(v.shape)
    lead = len(out_shape) - len(v.shape)
    out = []
    for d, s in enumerate(out_shape):
        k = d - lead
        out.append(0 if k < 0 or v.shape[k] == 1 else src[k])
    return out


def plan(graph):
    steps = []
    cur = None
    for e in graph.eqns:
        kind = classify(e)
        if kind == "ew":
            strided = not isinstance(e.prim, str) and e.prim.name in ("expand", "permute")
            reads_local = cur is not None and any(v in cur.locals for v in e.inputs)
            if (cur is None or cur.shape != e.out.shape or
                    any(v in cur.red_outs for v in e.inputs) or (strided and reads_local)):
                cur = Group(e.out.shape)
                steps.append(Step("group", cur))
            cur.eqns.append(e)
            cur.locals.add(e.out)
            continue
        if kind == "red":
            x = e.inputs[0]
            full = len(_dims(e.params["dim"], x.ndim)) == x.ndim
            if full:
                if cur is None or cur.shape != x.shape or x in cur.red_outs:
                    cur = Group(x.shape)
                    steps.append(Step("group", cur))
                cur.reds.append(e)
                cur.red_outs.add(e.out)
                continue
            steps.append(Step("red", e))
        elif kind == "alias":
            # Free at run time. Unless it reads a value of the open kernel, it goes before
            # that kernel, which may then go on (a reshape between two elementwise chains).
            if cur is not None and not any(v in cur.locals or v in cur.red_outs
                                           for v in e.inputs):
                at = next(i for i, st in enumerate(steps) if st.obj is cur)
                steps.insert(at, Step("alias", e))
                continue
            steps.append(Step("alias", e))
        else:
            steps.append(Step(kind, e))
        cur = None
    return steps


# ------------------------------------------------------------------- render
class _Src:
    def __init__(self):
        self.lines = []

    def __call__(self, depth, text):
        self.lines.append("    " * depth + text)

    def text(self):
        return "\n".join(self.lines) + "\n"


def _index_expr(i, shape, strides):
    """The element offset read at flat output index ``i`` with per-dim ``strides``."""
    if not shape:
        return "0"
    inner = _cstrides(shape)
    if list(strides) == inner:
        return i
    terms = []
    for d, (n, st) in enumerate(zip(shape, strides)):
        if st == 0 or n == 1:
            continue
        q = i if inner[d] == 1 else f"({i} // {inner[d]})"
        q = q if d == 0 else f"({q} % {n})"
        terms.append(q if st == 1 else f"{q} * {st}")
    return " + ".join(terms) if terms else "0"


class Renderer:
    def __init__(self, graph, name, role, threads):
        self.graph = graph
        self.base = re.sub(r"\W", "_", f"{name}_{role}")  # "<lambda>" is no identifier
        self.threads = threads
        self.src = _Src()
        self.kernels = []
        self.consts = graph.consts
        self._names = {}

    def arg(self, v):
        n = self._names.get(v)
        if n is None:
            n = self._names[v] = f"v{len(self._names)}"
        return n

    def lit(self, v):
        """A size-1 constant spelled inline, else None."""
        a = self.consts.get(v)
        if a is not None and a.size == 1:
            return literal(a.reshape(-1)[0], v.dtype)
        return None

    # One kernel: its own source block; returns (name, parameter Vars, signature)
    def _header(self, kname, params):
        self.src(0, "")
        self.src(0, "@cuda.jit")
        self.src(0, f"def {kname}({', '.join(params)}):")

    def group(self, k, g, needed):
        """A grid-stride elementwise kernel (+ folded full reductions)."""
        kname = f"{self.base}_k{k}"
        shape = g.shape
        n = _size(shape)
        ins, reads = [], {}
        for e in g.eqns + g.reds:
            for v in e.inputs:
                if v in g.locals or v in reads or self.lit(v) is not None:
                    continue
                strided = (not isinstance(e.prim, str) and e.prim.name in ("expand", "permute"))
                strides = _read_strides(v, shape, e if strided else None)
                reads[v] = strides
                ins.append(v)
        outs = [e.out for e in g.eqns if e.out in needed]
        parts = [f"p{j}" for j in range(len(g.reds))]
        params = [self.arg(v) for v in ins] + [self.arg(v) for v in outs] + parts
        sig = ([_arr(v.dtype) for v in ins] + [_arr(v.dtype) for v in outs]
               + [_arr(_acc_dtype(r)) for r in g.reds])
        s = self.src
        self._header(kname, params)
        s(1, "i = cuda.grid(1)")
        s(1, "step = cuda.gridsize(1)")
        for j, r in enumerate(g.reds):
            self._shared(1, f"acc{j}", _acc_dtype(r))
            s(1, f"acc{j} = {literal(_identity(r), _acc_dtype(r))}")
        s(1, f"while i < {n}:")
        env = {}
        for v in ins:
            idx = _index_expr("i", shape, reads[v]) if _size(v.shape) > 1 else "0"
            env[v] = f"x_{self.arg(v)}"
            s(2, f"{env[v]} = {self.arg(v)}[{idx}]")
        for e in g.eqns:
            args = [env.get(v) or self.lit(v) for v in e.inputs]
            env[e.out] = f"t_{self.arg(e.out)}"
            s(2, f"{env[e.out]} = {scalar_expr(e, args)}")
            if e.out in needed:
                s(2, f"{self.arg(e.out)}[i] = {env[e.out]}")
        for j, r in enumerate(g.reds):
            x = env.get(r.inputs[0]) or self.lit(r.inputs[0])
            ad = _acc_dtype(r)
            if r.inputs[0].dtype != ad:
                x = f"np.{ad.name}({x})"
            s(2, f"acc{j} = {_combine(_FULL_RED[r.prim.name], f'acc{j}', x)}")
        s(2, "i += step")
        for j, r in enumerate(g.reds):
            self._block_reduce(1, f"acc{j}", _acc_dtype(r), _FULL_RED[r.prim.name],
                               f"p{j}[cuda.blockIdx.x] = ")
        self.kernels.append((kname, sig))
        return kname, ins, outs

    def _shared(self, d, acc, dt):
        self.src(d, f"sm_{acc} = cuda.shared.array({self.threads}, {_TYPES[dt.name]})")

    def _block_reduce(self, d, acc, dt, combine, store):
        """Tree reduction of ``acc`` over the block in shared memory (declared by
        ``_shared``); thread 0 stores the block's result."""
        s = self.src
        s(d, "tid = cuda.threadIdx.x")
        s(d, f"sm_{acc}[tid] = {acc}")
        s(d, "cuda.syncthreads()")
        s(d, "half = cuda.blockDim.x // 2")
        s(d, "while half > 0:")
        s(d + 1, "if tid < half:")
        s(d + 2, f"sm_{acc}[tid] = {_combine(combine, f'sm_{acc}[tid]', f'sm_{acc}[tid + half]')}")
        s(d + 1, "cuda.syncthreads()")
        s(d + 1, "half //= 2")
        s(d, "if tid == 0:")
        s(d + 1, f"{store}sm_{acc}[0]")

    def final(self, k, j, r, count):
        """The deterministic last pass of a full reduction: one thread, slots in order."""
        kname = f"{self.base}_k{k}_final{j}"
        ad, od = _acc_dtype(r), r.out.dtype
        s = self.src
        self._header(kname, ["parts", "nparts", "out"])
        s(1, "if cuda.grid(1) == 0:")
        s(2, "acc = parts[0]")
        s(2, "for j in range(1, nparts):")
        s(3, f"acc = {_combine(_FULL_RED[r.prim.name], 'acc', 'parts[j]')}")
        if r.prim.name == "mean":
            s(2, f"acc = acc / {literal(count, ad)}")
        s(2, f"out[0] = {'acc' if ad == od else f'np.{od.name}(acc)'}")
        self.kernels.append((kname, [_arr(ad), "int64", _arr(od)]))
        return kname

    def reduce(self, k, e):
        """A partial reduction: a block per output element, threads over the reduced ones."""
        kname = f"{self.base}_k{k}"
        x = e.inputs[0]
        rd = _dims(e.params["dim"], x.ndim)
        kept = [d for d in range(x.ndim) if d not in rd]
        xs = _cstrides(x.shape)
        kshape = [x.shape[d] for d in kept]
        rshape = [x.shape[d] for d in rd]
        m, nr = _size(kshape), _size(rshape)
        ad, od = _acc_dtype(e), e.out.dtype
        comb = _FULL_RED[e.prim.name]
        s = self.src
        self._header(kname, ["x", "out"])
        self._shared(1, "acc", ad)
        s(1, "o = cuda.blockIdx.x")
        s(1, f"while o < {m}:")
        base = _index_expr("o", kshape, [xs[d] for d in kept])
        s(2, f"base = {base}")
        s(2, f"acc = {literal(_identity(e), ad)}")
        s(2, "r = cuda.threadIdx.x")
        s(2, f"while r < {nr}:")
        off = _index_expr("r", rshape, [xs[d] for d in rd])
        v = f"x[base + {off}]"
        if x.dtype != ad:
            v = f"np.{ad.name}({v})"
        s(3, f"acc = {_combine(comb, 'acc', v)}")
        s(3, "r += cuda.blockDim.x")
        store = "out[o] = "
        self._block_reduce(2, "acc", ad, comb, store)
        if e.prim.name == "mean":
            s(2 + 1, f"out[o] = out[o] / {literal(nr, ad)}")
        s(2, "cuda.syncthreads()")
        s(2, "o += cuda.gridDim.x")
        if ad != od:  # sum of bools/ints is int64 already; other reductions keep the dtype
            raise AssertionError("reduction accumulates in its output dtype")
        self.kernels.append((kname, [_arr(x.dtype), _arr(od)]))
        return kname, m

    def matmul(self, k, e):
        kname = f"{self.base}_k{k}"
        batch, m, kk, n, bx, by = _matmul_dims(e)
        t = _TYPES[e.out.dtype.name]
        zero = literal(0, e.out.dtype)
        s = self.src
        self._header(kname, ["a", "b", "c"])
        s(1, f"sa = cuda.shared.array(({TILE}, {TILE}), {t})")
        s(1, f"sb = cuda.shared.array(({TILE}, {TILE}), {t})")
        s(1, "tx = cuda.threadIdx.x")
        s(1, "ty = cuda.threadIdx.y")
        s(1, "z = cuda.blockIdx.z")
        s(1, f"row = cuda.blockIdx.y * {TILE} + ty")
        s(1, f"col = cuda.blockIdx.x * {TILE} + tx")
        s(1, f"oa = {f'z * {m * kk}' if bx else '0'}")
        s(1, f"ob = {f'z * {kk * n}' if by else '0'}")
        s(1, f"acc = {zero}")
        s(1, f"for t0 in range(0, {kk}, {TILE}):")
        s(2, f"sa[ty, tx] = a[oa + row * {kk} + t0 + tx] if (row < {m} and t0 + tx < {kk}) "
             f"else {zero}")
        s(2, f"sb[ty, tx] = b[ob + (t0 + ty) * {n} + col] if (col < {n} and t0 + ty < {kk}) "
             f"else {zero}")
        s(2, "cuda.syncthreads()")
        s(2, f"for q in range({TILE}):")
        s(3, "acc += sa[ty, q] * sb[q, tx]")
        s(2, "cuda.syncthreads()")
        s(1, f"if row < {m} and col < {n}:")
        s(2, f"c[z * {m * n} + row * {n} + col] = acc")
        self.kernels.append((kname, [_arr(e.inputs[0].dtype), _arr(e.inputs[1].dtype),
                                     _arr(e.out.dtype)]))
        return kname, (batch, m, n)


def _arr(dt):
    return f"{_TYPES[np.dtype(dt).name]}[::1]"


def _acc_dtype(r):
    return r.out.dtype


def _identity(r):
    name, dt = r.prim.name, _acc_dtype(r)
    if name in ("sum", "mean"):
        return 0
    if dt == np.bool_:
        return name == "amin"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if name == "amax" else info.max
    return -math.inf if name == "amax" else math.inf


def _combine(kind, a, b):
    if kind == "add":
        return f"{a} + {b}"
    return f"{'maximum' if kind == 'max' else 'minimum'}({a}, {b})"


# ------------------------------------------------------------------- compile
def drop_detach_copies(graph):
    """Uses of ``detach`` results pointing at their inputs (detach is free at run time)."""
    outs = set(graph.outputs)
    rename, eqns = {}, []
    for e in graph.eqns:
        ins = [rename.get(v, v) for v in e.inputs]
        if e.prim == "detach" and e.out not in outs:
            rename[e.out] = ins[0]
            continue
        eqns.append(e if ins == list(e.inputs) else Eqn(e.prim, ins, e.params, e.out, e.ann))
    return graph.copy(eqns=eqns) if rename else graph


def render(graph, options=None):
    """(steps, source, renderer) for ``graph``: nothing is compiled or launched."""
    options = options or {}
    graph = drop_detach_copies(graph)
    steps = plan(graph)
    later = {}
    for pos, st in enumerate(steps):
        eqns = (st.obj.eqns + st.obj.reds) if st.kind == "group" else [st.obj]
        for e in eqns:
            for v in e.inputs:
                later.setdefault(v, []).append(pos)
    outs = set(graph.outputs)
    r = Renderer(graph, options.get("name", "fn"), options.get("role", "fwd"),
                 cuda_device.THREADS)
    header = ("import math\nimport numpy as np\nfrom numba import cuda, float32, float64, int64, boolean  # noqa: F401\n"
              "from numgrad.compiler.codegen.cuda_scalar import *  # noqa: F403\n")
    for pos, st in enumerate(steps):
        if st.kind == "group":
            g = st.obj
            needed = {e.out for e in g.eqns
                      if e.out in outs or any(p > pos for p in later.get(e.out, ()))}
            name, ins, kouts = r.group(pos, g, needed)
            finals = [(r.final(pos, j, red, _size(red.inputs[0].shape)), red)
                      for j, red in enumerate(g.reds)]
            st.kernel = ("group", name, ins, kouts, finals, _size(g.shape))
        elif st.kind == "red":
            name, m = r.reduce(pos, st.obj)
            st.kernel = ("red", name, m)
        elif st.kind == "matmul":
            name, dims = r.matmul(pos, st.obj)
            st.kernel = ("matmul", name, dims)
    source = header + r.src.text()
    for name, sig in r.kernels:
        RENDERED[(name, source)] = (name, source, f"void({', '.join(sig)})")
    return graph, steps, source


def compile(graph, options=None):
    from numgrad.compiler.codegen.cuda_program import Program
    graph, steps, source = render(graph, options)
    return Program(graph, steps, source)

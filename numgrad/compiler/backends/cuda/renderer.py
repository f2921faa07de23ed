"""backends.cuda.renderer: a schedule as ``numba.cuda`` kernels and the steps between them.

Room: compiler. The CUDA renderer of ``compiler.schedule``: the fusion decisions
(which equations share a loop, what each loop reads, computes, reduces and writes) are
the schedule's, and every scalar expression is the registry's ``scalar`` lowering
(``cuda_scalar`` defines the helpers it names for the device). What is CUDA's own:

- **a loop** becomes a kernel with a grid-stride loop over its flat index; each array
  it reads is indexed by strides from that index (broadcast dims: none); values that
  never leave the loop stay in registers.
- **full reductions** in a loop: each thread accumulates, each block reduces in shared
  memory into its slot of a partials buffer, and a one-block final pass combines the
  slots (each thread a fixed stride of them, then the same tree). Grid and block sizes
  are fixed per device and shape, so every run combines in the same order: the same
  bits on every run, as the CPU's fixed chunks give.
- **partial reductions** (some dims): the loop writes the reduction's input (unless it
  is an array already), then a kernel reduces it with one block per output element
  (grid-stride over them), threads striding over the reduced elements and a
  shared-memory tree combining them: deterministic too, and no atomics.
- **host steps** the device can run itself: matmul (``blas`` in the registry: 1-d/2-d
  operands, or batches whose batch dims match, or are all 1 or absent on one side; see
  ``matmul_kernel.matmul_dims``) as a cuBLAS call through nvmath-python where it loads
  (``blas``), else a register-blocked kernel (``matmul_kernel``); either reads a
  transposed operand (``W.T`` of a linear layer) from its source when only matmuls use
  the transpose. A one-input view op (``permute``, slicing...) is a gather through an
  index map made by running the op's own impl on ``arange`` at
  render time. Everything else runs on the host: the op's NumPy impl on a host copy,
  copied back; a hook (``effects``: calls_user) gets the gradient as a CUDA tensor.
- **layout aliases** (reshape) cost nothing: every value is a C-ordered flat buffer.

A static plan spells extents, strides and the graph's one-element constants as literals.
A shape-generic one (``Schedule.generic``) takes them as by-value kernel arguments
(``Values``), so its source is the same for every shape of its ranks and broadcast
pattern; the steps carry this plan's values for the launch. In either, a traced Python
float (a ``{weak}`` 0-d input) that only loops read is a by-value argument too
(``by_value``), whose value the launch writes per call. Its matmuls render every
blocking of the kernel (the launch runs the one the plan's shape takes), or a cuBLAS
comment that names no extent. Each kernel is declared with its signature and
``cache=True`` (``decorator``): compiled when its module is loaded, through the
verified disk cache. ``render`` gives ``(schedule, run steps, source, kernel names)``,
which ``backends.cuda.cache`` loads and a ``program.Program`` runs with the inputs'
``CudaArray``s; ``program.source`` is the CUDA source. While ``LOG`` is on (the PTX
test turns it on), every kernel rendered is listed there.
"""
from __future__ import annotations

import math
import re

import numpy as np

import numgrad.compiler.schedule as _schedule
import numgrad.compiler.backends.cuda.blas as blas
import numgrad.compiler.backends.cuda.matmul_kernel as matmul_kernel
from numgrad.cuda import device as cuda_device
from numgrad.compiler.backends.cuda.matmul_kernel import matmul_dims
from numgrad.compiler.backends.spelling import Spell
from numgrad.compiler.schedule import Alias, HostStep, Loop, Reduce, _size

_TYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32",
          "bool": "boolean", "int16": "int16", "int8": "int8", "uint8": "uint8"}


class KernelLog:
    """Kernels rendered while on, by (name, source): (kernel name, source, Numba
    signature). Off by default: a long process renders kernels without bound."""

    def __init__(self):
        self.kernels = None

    def start(self):
        """Turn the log on (once on, it stays on); returns its dict."""
        if self.kernels is None:
            self.kernels = {}
        return self.kernels


LOG = KernelLog()


def signature(sig):
    """The Numba signature of a kernel taking parameters of types ``sig``."""
    return f"void({', '.join(sig)})"


def decorator(sig):
    """A kernel's decorator: compiled for its one signature when its module is loaded,
    into numba-cuda's on-disk cache (``backends.cuda.cache``)."""
    return f'@cuda.jit("{signature(sig)}", cache=True)'


def lazy(source):
    """``source`` with its kernels compiled at first launch and uncached (``@cuda.jit``):
    what ``ptx`` compiles without a device."""
    return re.sub(r"^@cuda\.jit\(.*\)$", "@cuda.jit", source, flags=re.MULTILINE)


# math.nan / math.inf in CUDA kernels.
SPELL = Spell("math")


def _arr(dt):
    return f"{_TYPES[np.dtype(dt).name]}[::1]"


# Scalar kernel parameters numgrad passes by value (numba-cuda has no bool argument).
BY_VALUE = ("int64", "float64", "float32")


class Values:
    """What one kernel's source spells that a shape-generic plan passes as arguments.

    Extents: ``prod(ds)`` spells the product of dims ``ds`` (positions) of the kernel's
    reference shape ``dims`` (a loop's iteration space; a matmul's (batch, M, K, N)),
    dims of extent 1 left out (so where they are is part of the source, as broadcasting
    is). Constants: ``constant(name, literal)`` spells a one-element constant of the
    graph. A static plan spells both as literals; a shape-generic one as parameters
    (``n0_2``: the product of dims 0 and 2; ``c_v3``: constant v3, a mean's 1/count for
    one) whose values the launch passes (``params``: name -> (value, type), in order of
    first use). Its source then depends on the ranks and on which extents are 1, never
    on the extents or the constants' values."""

    def __init__(self, dims, generic, name=None):
        self.dims = tuple(int(d) for d in dims)
        self.generic = generic
        self.name = name or (lambda ds: "n" + "_".join(map(str, ds)))
        self.params = {}

    def live(self, ds):
        """``ds`` without the dims of extent 1."""
        return tuple(d for d in ds if self.dims[d] != 1)

    def prod(self, ds):
        """The product of dims ``ds``, spelled for this plan ("1" when none is live)."""
        ds = self.live(ds)
        if not ds:
            return "1"
        if not self.generic:
            return str(math.prod(self.dims[d] for d in ds))
        name = self.name(ds)
        self.params[name] = (math.prod(self.dims[d] for d in ds), "int64")
        return name

    def constant(self, name, literal):
        """A one-element constant, spelled for this plan (as the parameter ``name``)."""
        dt = np.dtype(literal.dtype).name
        if not self.generic or dt not in BY_VALUE:
            return SPELL.lit(literal.value, literal.dtype)
        value = literal.value.item() if isinstance(literal.value, np.generic) else literal.value
        self.params[name] = (int(value) if dt == "int64" else float(value), dt)
        return name


def _read_strides(shape, loop_shape):
    """Per dim of ``loop_shape``: the dims of the loop whose extents multiply to the
    stride at which an array of ``shape`` (broadcastable to it) is read, or None where
    it broadcasts."""
    shape = tuple(shape)
    lead = len(loop_shape) - len(shape)
    live = [d for d in range(len(loop_shape)) if d >= lead and shape[d - lead] != 1]
    return [tuple(e for e in live if e > d) if d in live else None
            for d in range(len(loop_shape))]


def _index_expr(i, vals, dims, strides):
    """The element offset read at flat index ``i`` of the index space made of the
    reference dims ``dims`` (positions in ``vals.dims``), dim ``dims[k]`` read at the
    stride ``strides[k]`` (dims whose product it is; None: broadcast)."""
    dims = list(dims)
    live = vals.live(dims)
    if all(st is not None and vals.live(st) == live[live.index(d) + 1:]
           for d, st in zip(dims, strides) if d in live):
        return i if live else "0"  # read as the index space is laid out
    terms = []
    first = True
    for k, (d, st) in enumerate(zip(dims, strides)):
        if d not in live:
            continue
        if st is not None:
            inner = vals.prod(dims[k + 1:])
            q = i if inner == "1" else f"({i} // {inner})"
            q = q if first else f"({q} % {vals.prod((d,))})"
            stride = vals.prod(st)
            terms.append(q if stride == "1" else f"{q} * {stride}")
        first = False
    return " + ".join(terms) if terms else "0"


def gather_map(e):
    """The flat source index of every output element of a one-input data-movement op
    (a view: permute, slicing, expand...), from the op's own impl run on ``arange``;
    None where the op is not one."""
    if not e.prim.view or len(e.inputs) != 1 or e.prim.effects:
        return None
    x = e.inputs[0]
    try:
        idx = np.asarray(e.prim.impl(np.arange(_size(x.shape), dtype=np.int64)
                                     .reshape(x.shape), **e.params))
    except Exception:  # noqa: BLE001  (an impl that needs real data: a host step)
        return None
    if idx.shape != tuple(e.out.shape) or idx.dtype != np.int64:
        return None
    return np.ascontiguousarray(idx).reshape(-1)


# ------------------------------------------------------------------- render
class _Src:
    def __init__(self):
        self.lines = []

    def __call__(self, depth, text):
        self.lines.append("    " * depth + text)

    def text(self):
        return "\n".join(self.lines) + "\n"


class Renderer:
    """Renders kernels into one source; ``kernels`` lists (name, Numba signature);
    ``by_value``: the graph's inputs kernels take as scalar arguments (``by_value``)."""

    def __init__(self, sched, threads, by_value=frozenset()):
        self.graph = sched.graph  # (temporaries are new values of it)
        self.by_value = by_value
        self.generic = sched.generic
        self.base = re.sub(r"\W", "_", f"{sched.name}_{sched.role}")  # "<lambda>": no name
        self.threads = threads
        self.src = _Src()
        self.kernels = []
        self._names = {}
        self._n = 0

    def name(self, tag=""):
        self._n += 1
        return f"{self.base}_k{self._n - 1}{tag}"

    def arg(self, v):
        n = self._names.get(v)
        if n is None:
            n = self._names[v] = f"v{len(self._names)}"
        return n

    def values(self, dims, name=None):
        """A ``Values`` for a kernel over the reference dims ``dims``, spelled as this
        plan spells extents."""
        return Values(dims, self.generic, name)

    def _header(self, kname, params, sig):
        # Written by _close, once the body has asked for its by-value arguments.
        self.src(0, "")
        self._open = (len(self.src.lines), len(self.kernels), kname, list(params), list(sig))
        self.src(0, "")
        self.src(0, "")
        self.kernels.append((kname, sig))

    def _close(self, vals):
        """Write the header of the kernel just rendered, its parameters followed by the
        by-value ones its body asked ``vals`` for; returns their (value, type), in order."""
        at, k, kname, params, sig = self._open
        params += list(vals.params)
        sig += [t for _, t in vals.params.values()]
        self.src.lines[at] = decorator(sig)
        self.src.lines[at + 1] = f"def {kname}({', '.join(params)}):"
        self.kernels[k] = (kname, sig)
        return list(vals.params.values())

    def _shared(self, d, acc, dt):
        self.src(d, f"sm_{acc} = cuda.shared.array({self.threads}, {_TYPES[np.dtype(dt).name]})")

    def _block_reduce(self, d, acc, dt, combine, store):
        """Tree reduction of ``acc`` over the block in shared memory (declared by
        ``_shared``); thread 0 runs ``store``, a line with ``{}`` for the block's result."""
        s = self.src
        s(d, "tid = cuda.threadIdx.x")
        s(d, f"sm_{acc}[tid] = {acc}")
        s(d, "cuda.syncthreads()")
        s(d, "half = cuda.blockDim.x // 2")
        s(d, "while half > 0:")
        s(d + 1, "if tid < half:")
        both = combine.scalar([f"sm_{acc}[tid]", f"sm_{acc}[tid + half]"], dt, {}, SPELL)
        s(d + 2, f"sm_{acc}[tid] = {both}")
        s(d + 1, "cuda.syncthreads()")
        s(d + 1, "half //= 2")
        s(d, "if tid == 0:")
        s(d + 1, store.format(f"sm_{acc}[0]"))

    # ---------------------------------------------------------------- loops
    def loop(self, L, literals):
        """A schedule Loop as one grid-stride kernel. Returns the launch step."""
        S = _schedule.cshape(L.shape)
        n = _size(S)
        vals = Values(S, self.generic)
        every = range(len(S))
        kname = self.name()
        full = [r for r in L.body if isinstance(r, Reduce) and r.full]
        part = [r for r in L.body if isinstance(r, Reduce) and not r.full]
        ins, seen = [], set()

        scalars = []  # inputs taken by value (a traced Python float): after the arrays

        def need(ref):
            if ref.kind in ("array", "scalar") and ref.var not in seen:
                seen.add(ref.var)
                (scalars if ref.var in self.by_value else ins).append(ref.var)
        for ref in L.hoisted:
            need(ref)
        for st in L.body:
            for ref in ([st.arg] if isinstance(st, Reduce) else st.args):
                need(ref)
        stored = [st.out for st in L.body if not isinstance(st, Reduce) and st.store]
        # A partial reduction reduces an array of the loop's shape: its input, stored by
        # this loop unless it is such an array already (or stored anyway).
        temps, red_src = [], {}
        for r in part:
            a = r.arg
            if (a.kind == "array" and _schedule.cshape(a.shape) == S) or a.var in stored:
                red_src[id(r)] = a.var
            else:
                t = self.graph.new_var(S, a.var.dtype)
                temps.append(t)
                red_src[id(r)] = t
        outs = stored + temps
        params = ([self.arg(v) for v in ins] + [self.arg(v) for v in outs]
                  + [f"p{j}" for j in range(len(full))] + [self.arg(v) for v in scalars])
        sig = ([_arr(v.dtype) for v in ins] + [_arr(v.dtype) for v in outs]
               + [_arr(r.dtype) for r in full] + [np.dtype(v.dtype).name for v in scalars])
        s = self.src
        self._header(kname, params, sig)
        s(1, "i = cuda.grid(1)")
        s(1, "step = cuda.gridsize(1)")
        for j, r in enumerate(full):
            self._shared(1, f"acc{j}", r.dtype)
            s(1, f"acc{j} = {SPELL.lit(r.identity.value, r.dtype)}")
        env = {}

        def constant(var, literal):
            return vals.constant(f"c_{self.arg(var)}" if self.generic else None, literal)
        for ref in L.hoisted:
            if ref.kind == "literal":
                env[ref.var] = constant(ref.var, ref.literal)
            elif ref.var in self.by_value:
                env[ref.var] = self.arg(ref.var)
            else:
                env[ref.var] = f"h_{self.arg(ref.var)}"
                s(1, f"{env[ref.var]} = {self.arg(ref.var)}[0]")
        s(1, f"while i < {vals.prod(every)}:")

        def expr(ref):
            if ref.kind == "literal":
                return constant(ref.var, ref.literal)
            if ref.var in env:
                return env[ref.var]
            if ref.kind == "array":
                name = f"x_{self.arg(ref.var)}"
                idx = (_index_expr("i", vals, every,
                                   _read_strides(_schedule.cshape(ref.shape), S))
                       if _size(ref.shape) > 1 else "0")
                s(2, f"{name} = {self.arg(ref.var)}[{idx}]")
                env[ref.var] = name
                return name
            lit = literals.get(ref.var)
            if lit is not None:
                return constant(ref.var, lit)
            raise AssertionError(f"no value for {ref}")

        for st in L.body:
            if isinstance(st, Reduce):
                x = expr(st.arg)
                if st.full:
                    if np.dtype(st.arg.var.dtype) != np.dtype(st.dtype):
                        x = SPELL.cast(x, st.dtype)
                    j = full.index(st)
                    s(2, f"acc{j} = {st.combine.scalar([f'acc{j}', x], st.dtype, {}, SPELL)}")
                elif red_src[id(st)] in temps:
                    s(2, f"{self.arg(red_src[id(st)])}[i] = {x}")
                continue
            value = SPELL.wrapped(st.op.scalar([expr(a) for a in st.args], st.dtype, st.params,
                                               SPELL), st.dtype)
            env[st.out] = f"t_{self.arg(st.out)}"
            s(2, f"{env[st.out]} = {value}")
            if st.store:
                s(2, f"{self.arg(st.out)}[i] = {env[st.out]}")
        s(2, "i += step")
        for j, r in enumerate(full):
            self._block_reduce(1, f"acc{j}", r.dtype, r.combine, "p%d[cuda.blockIdx.x] = {}" % j)
        values = self._close(vals)
        finals = [(self.final(r, S), r) for r in full]
        reduces = [(self.reduce(r, S), r, red_src[id(r)]) for r in part]
        return ("loop", kname, ins, outs, finals, n, reduces, values, scalars)

    def final(self, r, S):
        """The last pass of a full reduction of a loop over ``S``: one block, each thread
        combining a fixed stride of the slots, then the shared-memory tree (fixed order:
        same bits). Returns (kernel name, its by-value arguments)."""
        vals = Values(S, self.generic)
        kname = self.name("_final")
        s = self.src
        od = np.dtype(r.out.dtype)
        self._header(kname, ["parts", "nparts", "out"], [_arr(r.dtype), "int64", _arr(od)])
        self._shared(1, "acc", r.dtype)
        s(1, f"acc = {SPELL.lit(r.identity.value, r.dtype)}")
        s(1, "j = cuda.threadIdx.x")
        s(1, "while j < nparts:")
        s(2, f"acc = {r.combine.scalar(['acc', 'parts[j]'], r.dtype, {}, SPELL)}")
        s(2, "j += cuda.blockDim.x")
        total = "{}"
        if r.mean:
            count = vals.prod(range(len(S)))
            count = SPELL.lit(r.count, r.dtype) if count.isdigit() else SPELL.cast(count, r.dtype)
            total = f"{total} / {count}"
        if np.dtype(r.dtype) != od:
            total = SPELL.cast(total, od)
        self._block_reduce(1, "acc", r.dtype, r.combine, f"out[0] = {total}")
        return kname, self._close(vals)

    def reduce(self, r, S):
        """A partial reduction of an array of shape ``S`` to ``r.keep``: a block per output
        element, threads over the reduced ones, a shared-memory tree."""
        kname = self.name("_reduce")
        vals = Values(S, self.generic)
        keep = tuple(r.keep) if len(r.keep) == len(S) else S
        rd = [d for d in range(len(S)) if keep[d] == 1 and S[d] != 1]
        kept = [d for d in range(len(S)) if d not in rd]
        xs = [tuple(range(d + 1, len(S))) for d in range(len(S))]  # C strides, as dims
        m = _size([S[d] for d in kept])
        ad = np.dtype(r.dtype)
        src_dt = np.dtype(r.arg.var.dtype)
        s = self.src
        self._header(kname, ["x", "out"], [_arr(src_dt), _arr(r.out.dtype)])
        self._shared(1, "acc", ad)
        s(1, "o = cuda.blockIdx.x")
        s(1, f"while o < {vals.prod(kept)}:")
        s(2, f"base = {_index_expr('o', vals, kept, [xs[d] for d in kept])}")
        s(2, f"acc = {SPELL.lit(r.identity.value, ad)}")
        s(2, "r = cuda.threadIdx.x")
        nr = vals.prod(rd)
        s(2, f"while r < {nr}:")
        v = f"x[base + {_index_expr('r', vals, rd, [xs[d] for d in rd])}]"
        if src_dt != ad:
            v = SPELL.cast(v, ad)
        s(3, f"acc = {r.combine.scalar(['acc', v], ad, {}, SPELL)}")
        s(3, "r += cuda.blockDim.x")
        self._block_reduce(2, "acc", ad, r.combine, "out[o] = {}")
        if r.mean:
            count = SPELL.lit(int(nr), ad) if nr.isdigit() else SPELL.cast(nr, ad)
            s(3, f"out[o] = out[o] / {count}")
        s(2, "cuda.syncthreads()")
        s(2, "o += cuda.gridDim.x")
        return kname, m, self._close(vals)

    # ------------------------------------------------------------ device steps
    def matmul(self, e, srcs):
        """Matmul ``e``: a cuBLAS call where ``blas.choose`` picks it, else the
        register-blocked kernel (``matmul_kernel``); ``srcs``: per operand, the array it
        is read from and whether that array is the operand transposed."""
        if blas.choose(e) == "cublas":
            step, text = blas.render(e, srcs, self.name("_cublas"), self.generic)
            self.src(0, "")
            for line in text:
                self.src(0, f"# {line}")
            return step
        return matmul_kernel.render(self, e, srcs)

    def gather(self, e, idx):
        kname = self.name("_gather")
        x = e.inputs[0]
        vals = Values(_schedule.cshape(e.out.shape), self.generic)
        s = self.src
        self._header(kname, ["x", "idx", "out"], [_arr(x.dtype), _arr(np.int64),
                                                  _arr(e.out.dtype)])
        s(1, "i = cuda.grid(1)")
        s(1, "step = cuda.gridsize(1)")
        s(1, f"while i < {vals.prod(range(len(vals.dims)))}:")
        s(2, "out[i] = x[idx[i]]")
        s(2, "i += step")
        return ("index_map", kname, idx, e, self._close(vals))


def _is_transpose(e, idx):
    """Whether the index map ``idx`` of view op ``e`` swaps its input's last two dims."""
    x = e.inputs[0]
    if x.ndim < 2 or idx is None:
        return False
    want = np.arange(_size(x.shape), dtype=np.int64).reshape(x.shape).swapaxes(-1, -2)
    return idx.shape == (want.size,) and bool((idx == want.reshape(-1)).all())


def _transposes_into_matmuls(sched):
    """``{transposed value: (its source, True)}`` for transposes that only tiled matmuls
    read (W^T of a linear layer): the matmul reads the source instead of a gathered copy."""
    users = sched.graph.users()
    outs = set(sched.graph.outputs)
    host = {s.eqn.out: s.eqn for s in sched.steps if isinstance(s, HostStep)}
    folded = {}
    for v, e in host.items():
        if v in outs or e.inputs[0].ndim < 2:
            continue
        us = users.get(v, [])
        if not us or not all(u.prim.cost.blas and u.out in host and matmul_dims(u) is not None
                             and u.inputs[0] is not u.inputs[1] for u in us):
            continue
        if _is_transpose(e, gather_map(e)):
            folded[v] = (e.inputs[0], True)
    return folded


HEADER = ("import math\nimport numpy as np\n"
          "from numba import cuda, float32, float64, int64, int32, boolean  # noqa: F401\n"
          "from numba import int16, int8, uint8  # noqa: F401\n"
          "from numgrad.compiler.backends.cuda.scalar import *  # noqa: F403\n")


def by_value(sched):
    """The inputs of ``sched``'s graph that its kernels take by value: traced Python floats
    (``{weak}`` 0-d float inputs) that only loops read, as one-element values hoisted out
    of the loop. The launch writes each call's number into the kernel's parameter, so a
    call with a new float neither allocates nor copies. One a host step, a gather or a
    matmul reads, an alias takes, or the graph returns, stays an array (uploaded per call)."""
    graph = sched.graph
    cands = {v for v in graph.inputs if getattr(v, "_ng_weak", False) and _size(v.shape) == 1
             and np.dtype(v.dtype).name in ("float64", "float32")}
    cands -= set(graph.outputs)
    for step in sched.steps:
        if not cands:
            break
        if isinstance(step, HostStep):
            cands -= set(step.eqn.inputs)
            continue
        for b in step.body:
            if isinstance(b, Alias):
                cands.discard(b.src)
            elif isinstance(b, Loop):
                for st in b.body:
                    for ref in [st.arg] if isinstance(st, Reduce) else st.args:
                        if ref.kind == "array":
                            cands.discard(ref.var)
    return frozenset(cands)


def render(sched, options=None):
    """``(schedule, run steps, source, kernel names)`` of ``sched``: nothing compiled or
    launched. The first step, ``("by_value", inputs)``, names the inputs taken by value
    (``by_value``)."""
    values = by_value(sched)
    r = Renderer(sched, cuda_device.THREADS, values)
    steps = [("by_value", values)]
    folded = _transposes_into_matmuls(sched)
    for step in sched.steps:
        if isinstance(step, HostStep):
            e = step.eqn
            if e.out in folded:
                continue  # read transposed by the matmuls that use it
            if e.prim.cost.blas and matmul_dims(e) is not None:
                steps.append(r.matmul(e, [folded.get(v, (v, False)) for v in e.inputs]))
                continue
            idx = gather_map(e) if e.out.dtype.name in _TYPES else None
            if idx is not None and idx.size:
                steps.append(r.gather(e, idx))
                continue
            steps.append(("host", e))
            continue
        for b in step.body:
            if isinstance(b, Alias):
                steps.append(("alias", b))
            elif isinstance(b, Loop):
                steps.append(r.loop(b, step.literals))
    source = HEADER + r.src.text()
    if LOG.kernels is not None:
        for name, sig in r.kernels:
            LOG.kernels[(name, source)] = (name, source, signature(sig))
    return sched, steps, source, [name for name, _ in r.kernels]

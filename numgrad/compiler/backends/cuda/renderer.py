"""backends.cuda.renderer: a schedule as ``numba.cuda`` kernels and the steps between them.

Room: compiler. The CUDA renderer of ``compiler.schedule``: the fusion decisions
(which equations share a loop, what each loop reads, computes, reduces and writes) are
the schedule's, and every scalar expression is the registry's ``scalar`` lowering
(``cuda_scalar`` defines the helpers it names for the device). What is CUDA's own:

- **a loop** becomes a kernel with a grid-stride loop over its flat index; each array
  it reads is indexed by literal strides from that index (broadcast dims: stride 0);
  values that never leave the loop stay in registers.
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

Shapes are static (a CUDA plan is never shape-generic): extents and strides are
literals. ``render`` gives ``(schedule, run steps, source)``, which a ``program.Program``
runs with the inputs' ``CudaArray``s; ``program.source`` is the CUDA source. While
``LOG`` is on (the PTX test turns it on), every kernel rendered is listed there.
"""
from __future__ import annotations

import re

import numpy as np

from numgrad.compiler import schedule as _schedule
from numgrad.compiler.backends.cuda import blas, matmul_kernel
from numgrad.compiler.backends.cuda import device as cuda_device
from numgrad.compiler.backends.cuda.matmul_kernel import matmul_dims
from numgrad.compiler.backends.spelling import Spell
from numgrad.compiler.schedule import Alias, HostStep, Loop, Reduce, _size

_TYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "bool": "boolean"}


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


def _cstrides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))


# math.nan / math.inf in CUDA kernels.
SPELL = Spell("math")


def _arr(dt):
    return f"{_TYPES[np.dtype(dt).name]}[::1]"


def _read_strides(shape, loop_shape):
    """Per dim of ``loop_shape``: the stride (in elements) at which an array of ``shape``
    is read, 0 where it broadcasts."""
    shape = tuple(shape)
    src = _cstrides(shape)
    lead = len(loop_shape) - len(shape)
    out = []
    for d in range(len(loop_shape)):
        k = d - lead
        out.append(0 if k < 0 or shape[k] == 1 else src[k])
    return out


def _index_expr(i, shape, strides):
    """The element offset read at flat index ``i`` of ``shape`` with per-dim ``strides``."""
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
    """Renders kernels into one source; ``kernels`` lists (name, Numba signature)."""

    def __init__(self, sched, threads):
        self.graph = sched.graph  # (temporaries are new values of it)
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

    def _header(self, kname, params, sig):
        self.src(0, "")
        self.src(0, "@cuda.jit")
        self.src(0, f"def {kname}({', '.join(params)}):")
        self.kernels.append((kname, sig))

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
        kname = self.name()
        full = [r for r in L.body if isinstance(r, Reduce) and r.full]
        part = [r for r in L.body if isinstance(r, Reduce) and not r.full]
        ins, seen = [], set()

        def need(ref):
            if ref.kind in ("array", "scalar") and ref.var not in seen:
                seen.add(ref.var)
                ins.append(ref.var)
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
                  + [f"p{j}" for j in range(len(full))])
        sig = ([_arr(v.dtype) for v in ins] + [_arr(v.dtype) for v in outs]
               + [_arr(r.dtype) for r in full])
        s = self.src
        self._header(kname, params, sig)
        s(1, "i = cuda.grid(1)")
        s(1, "step = cuda.gridsize(1)")
        for j, r in enumerate(full):
            self._shared(1, f"acc{j}", r.dtype)
            s(1, f"acc{j} = {SPELL.lit(r.identity.value, r.dtype)}")
        env = {}
        for ref in L.hoisted:
            if ref.kind == "literal":
                env[ref.var] = SPELL.lit(ref.literal.value, ref.literal.dtype)
            else:
                env[ref.var] = f"h_{self.arg(ref.var)}"
                s(1, f"{env[ref.var]} = {self.arg(ref.var)}[0]")
        s(1, f"while i < {n}:")

        def expr(ref):
            if ref.kind == "literal":
                return SPELL.lit(ref.literal.value, ref.literal.dtype)
            if ref.var in env:
                return env[ref.var]
            if ref.kind == "array":
                name = f"x_{self.arg(ref.var)}"
                idx = (_index_expr("i", S, _read_strides(_schedule.cshape(ref.shape), S))
                       if _size(ref.shape) > 1 else "0")
                s(2, f"{name} = {self.arg(ref.var)}[{idx}]")
                env[ref.var] = name
                return name
            lit = literals.get(ref.var)
            if lit is not None:
                return SPELL.lit(lit.value, lit.dtype)
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
            value = st.op.scalar([expr(a) for a in st.args], st.dtype, st.params, SPELL)
            env[st.out] = f"t_{self.arg(st.out)}"
            s(2, f"{env[st.out]} = {value}")
            if st.store:
                s(2, f"{self.arg(st.out)}[i] = {env[st.out]}")
        s(2, "i += step")
        for j, r in enumerate(full):
            self._block_reduce(1, f"acc{j}", r.dtype, r.combine, "p%d[cuda.blockIdx.x] = {}" % j)
        finals = [(self.final(r), r) for r in full]
        reduces = [(self.reduce(r, S), r, red_src[id(r)]) for r in part]
        return ("loop", kname, ins, outs, finals, n, reduces)

    def final(self, r):
        """The last pass of a full reduction: one block, each thread combining a fixed
        stride of the slots, then the shared-memory tree (fixed order: same bits)."""
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
            total = f"{total} / {SPELL.lit(r.count, r.dtype)}"
        if np.dtype(r.dtype) != od:
            total = SPELL.cast(total, od)
        self._block_reduce(1, "acc", r.dtype, r.combine, f"out[0] = {total}")
        return kname

    def reduce(self, r, S):
        """A partial reduction of an array of shape ``S`` to ``r.keep``: a block per output
        element, threads over the reduced ones, a shared-memory tree."""
        kname = self.name("_reduce")
        xs = _cstrides(S)
        keep = tuple(r.keep) if len(r.keep) == len(S) else S
        rd = [d for d in range(len(S)) if keep[d] == 1 and S[d] != 1]
        kept = [d for d in range(len(S)) if d not in rd]
        kshape = [S[d] for d in kept]
        rshape = [S[d] for d in rd]
        m, nr = _size(kshape), _size(rshape)
        ad = np.dtype(r.dtype)
        src_dt = np.dtype(r.arg.var.dtype)
        s = self.src
        self._header(kname, ["x", "out"], [_arr(src_dt), _arr(r.out.dtype)])
        self._shared(1, "acc", ad)
        s(1, "o = cuda.blockIdx.x")
        s(1, f"while o < {m}:")
        s(2, f"base = {_index_expr('o', kshape, [xs[d] for d in kept])}")
        s(2, f"acc = {SPELL.lit(r.identity.value, ad)}")
        s(2, "r = cuda.threadIdx.x")
        s(2, f"while r < {nr}:")
        v = f"x[base + {_index_expr('r', rshape, [xs[d] for d in rd])}]"
        if src_dt != ad:
            v = SPELL.cast(v, ad)
        s(3, f"acc = {r.combine.scalar(['acc', v], ad, {}, SPELL)}")
        s(3, "r += cuda.blockDim.x")
        self._block_reduce(2, "acc", ad, r.combine, "out[o] = {}")
        if r.mean:
            s(3, f"out[o] = out[o] / {SPELL.lit(nr, ad)}")
        s(2, "cuda.syncthreads()")
        s(2, "o += cuda.gridDim.x")
        return kname, m

    # ------------------------------------------------------------ device steps
    def matmul(self, e, srcs):
        """Matmul ``e``: a cuBLAS call where ``blas.choose`` picks it, else the
        register-blocked kernel (``matmul_kernel``); ``srcs``: per operand, the array it
        is read from and whether that array is the operand transposed."""
        if blas.choose(e) == "cublas":
            step, text = blas.render(e, srcs, self.name("_cublas"))
            self.src(0, "")
            for line in text:
                self.src(0, f"# {line}")
            return step
        return matmul_kernel.render(self, e, srcs)

    def gather(self, e, idx):
        kname = self.name("_gather")
        x = e.inputs[0]
        s = self.src
        self._header(kname, ["x", "idx", "out"], [_arr(x.dtype), _arr(np.int64),
                                                  _arr(e.out.dtype)])
        s(1, "i = cuda.grid(1)")
        s(1, "step = cuda.gridsize(1)")
        s(1, f"while i < {idx.size}:")
        s(2, "out[i] = x[idx[i]]")
        s(2, "i += step")
        return ("index_map", kname, idx, e)


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
          "from numba import cuda, float32, float64, int64, boolean  # noqa: F401\n"
          "from numgrad.compiler.backends.cuda.scalar import *  # noqa: F403\n")


def render(sched, options=None):
    """``(schedule, run steps, source)`` of ``sched``: nothing compiled or launched."""
    r = Renderer(sched, cuda_device.THREADS)
    steps = []
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
            LOG.kernels[(name, source)] = (name, source, f"void({', '.join(sig)})")
    return sched, steps, source

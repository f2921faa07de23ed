"""backends.cuda.matmul_kernel: which matmuls the device runs, and the register-blocked kernel.

Room: compiler. ``matmul_dims`` says whether a ``blas`` equation (the registry's matmul:
dot, mv, mm, batched) runs on the device and with which extents; ``render`` writes it
as a ``numba.cuda`` kernel for the CUDA renderer when cuBLAS does not take it
(``backends.cuda.blas``).

**The kernel.** A block computes a ``bm x bn`` tile of C, each thread a ``tm x tn``
block of it held in registers (one variable per element: the source is unrolled here,
so nothing depends on NVVM promoting a local array). The K loop is staged through
shared memory ``bk`` at a time: per stage every thread loads a fixed share of the A and
B tiles (zero beyond the edges), then, for each of the ``bk`` steps, reads ``tm``
values of A and ``tn`` of B and does ``tm * tn`` multiply-adds: one (2x2) or two (4x4)
per shared load, where a plain 16x16 tiled kernel does one per two loads. ``UNROLL``
steps per loop iteration are unrolled in the source, so every shared read is a base
plus a constant (unrolling all 16 triples the compile time and saves a few integer
instructions per 64 multiply-adds). A thread's elements of C are a thread-block width
apart (rows ``ty + i * threads_y``, columns ``tx + j * threads_x``), so the shared
reads of a warp hit distinct banks or broadcast, and the stores of C are coalesced. The
shared tiles are stored k-major with one element of padding per row, so that the
stores of a tile read along k do not all hit one bank. Indices are typed unsigned
(never negative), which spares every access Numba's negative-index fix-up.

- **Transposed operands** (``W.T`` of a linear layer, folded by the renderer): the tile
  is loaded from the stored matrix, each thread's loads running along its stored rows,
  so global reads stay coalesced either way.
- **Batches**: ``blockIdx.z``; an operand without batch dims (or with all of them 1)
  is read at offset 0 by every batch (stride 0).
- **Determinism**: every element of C sums its K products in increasing ``k`` in one
  thread, with no atomics: the same bits on every run for a given shape.
- **Tiles**: 64x64 with 4x4 per thread for outputs of at least ``BIG_OUTPUT`` elements
  and 64 rows and columns; 16x16 with 2x2 per thread (64 threads) where C has at most 16
  rows or columns (the W3 MLP's last layer: a 32-wide tile would idle half its
  threads); else 32x32 with 2x2 per thread. 16 results per thread leave too few threads
  to hide memory latency on a small output (the W3 MLP's largest is 256x512).

- **Shapes**: a static plan renders the one blocking its shape takes, extents as
  literals. A shape-generic plan renders all three, each taking its extents as int64
  arguments (``m``, ``k``, ``n`` and the products ``mk``, ``kn``, ``mn``; the
  renderer's ``Values``), so one source serves every shape; its launch
  (``launch.Prepared``, once per plan) runs the one ``tiling`` picks for the plan's
  shape, and each element sums its products in the same order under every blocking.

int64 matmul runs here too (cuBLAS has none).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from numgrad.compiler.backends.spelling import Spell
from numgrad.compiler.schedule import _size

SPELL = Spell("math")
MAX_GRID_YZ = 65535          # CUDA's limit on gridDim.y and gridDim.z
UNROLL = 4                   # K steps per iteration of the inner loop, unrolled in the source
BIG_OUTPUT = 1 << 19         # elements of C (all batches) from which 64x64 tiles are used


class Dims(NamedTuple):
    """A device matmul's extents: C[batch, m, n] = A[batch?, m, k] @ B[batch?, k, n];
    ``x_batched``/``y_batched``: whether that operand advances with the batch (else
    every batch reads its one matrix)."""
    batch: int
    m: int
    k: int
    n: int
    x_batched: bool
    y_batched: bool


@dataclass(frozen=True)
class Tiling:
    """A kernel's blocking: ``bm x bn`` of C per block, ``tm x tn`` per thread, ``bk``
    of K per shared-memory stage."""
    bm: int
    bn: int
    tm: int
    tn: int
    bk: int = 16

    @property
    def threads(self):
        """(threads along x = columns of C, along y = rows)."""
        return self.bn // self.tn, self.bm // self.tm


LARGE = Tiling(64, 64, 4, 4)
SMALL = Tiling(32, 32, 2, 2)
THIN = Tiling(16, 16, 2, 2)
TILINGS = (LARGE, SMALL, THIN)


def tiling(dims):
    """The blocking used for ``dims``."""
    if min(dims.m, dims.n) <= THIN.bm:
        return THIN
    if dims.batch * dims.m * dims.n >= BIG_OUTPUT and min(dims.m, dims.n) >= LARGE.bm:
        return LARGE
    return SMALL


def _advances(b, batch):
    # Whether an operand with batch dims ``b`` steps with the broadcast batch (True), reads
    # one matrix for all of it (False), or broadcasts some dims only (None: not one stride).
    if _size(b) == 1:
        return False
    padded = (1,) * (len(batch) - len(b)) + tuple(b)
    return True if padded == tuple(batch) else None


def matmul_dims(e):
    """The ``Dims`` of matmul equation ``e`` on the device, or None where it runs on the
    host: other dtypes than float32/float64/int64 (or mixed), 0-d operands, an empty
    result, batch dims broadcast other than whole (``(2, 3) x (3,)`` is, ``(2, 1) x
    (1, 3)`` is not), or more batches or rows than a grid holds."""
    x, y = e.inputs
    if x.dtype != y.dtype or x.dtype.kind not in "fi" or x.ndim == 0 or y.ndim == 0:
        return None
    xs = (1,) + tuple(x.shape) if x.ndim == 1 else tuple(x.shape)
    ys = tuple(y.shape) + (1,) if y.ndim == 1 else tuple(y.shape)
    bx, by = xs[:-2], ys[:-2]
    batch_shape = np.broadcast_shapes(bx, by)
    ax, ay = _advances(bx, batch_shape), _advances(by, batch_shape)
    if ax is None or ay is None:
        return None
    batch, m = _size(batch_shape), xs[-2]
    if batch > MAX_GRID_YZ or -(-m // min(t.bm for t in TILINGS)) > MAX_GRID_YZ:
        return None
    if _size(e.out.shape) == 0:
        return None
    return Dims(batch, m, xs[-1], ys[-1], ax, ay)


def kernel_lines(dtype, dims, ta, tb, til, spell=None):
    """The body of the kernel ``(a, b, c)`` as ``[(indent depth, line)]``: C = A @ B of
    ``dims`` in ``dtype``; ``ta``/``tb``: A (B) is read from its transpose's storage
    (A stored ``(k, m)``, B stored ``(n, k)``). ``spell(ds)``: the product of the
    extents at positions ``ds`` of ``dims`` (1: m, 2: k, 3: n) as the kernel spells it,
    a literal by default (a shape-generic plan's ``renderer.Values.prod`` names a
    parameter instead)."""
    if spell is None:
        def spell(ds):
            return str(math.prod(dims[d] for d in ds))
    bx, by = dims.x_batched, dims.y_batched
    m, k, n = spell((1,)), spell((2,)), spell((3,))
    t = np.dtype(dtype).name
    zero = SPELL.lit(0, dtype)
    bm, bn, tm, tn, bk = til.bm, til.bn, til.tm, til.tn, til.bk
    nx, ny = til.threads
    nt = nx * ny
    assert nt % bk == 0 and nt % bm == 0 and nt % bn == 0 and bk % UNROLL == 0
    assert (bm * bk) % nt == 0 and (bn * bk) % nt == 0
    sa, sb = bm + 1, bn + 1   # shared row lengths (padded)
    out = []

    def s(depth, text):
        out.append((depth, text))

    def u(index):
        # Indices are never negative: typed unsigned, Numba drops its wraparound fix-up
        # (a sign test and an add per access).
        return f"np.uint64({index})"

    s(1, f"sa = cuda.shared.array({bk * sa}, {t})")
    s(1, f"sb = cuda.shared.array({bk * sb}, {t})")
    s(1, "tx = cuda.threadIdx.x")
    s(1, "ty = cuda.threadIdx.y")
    s(1, f"tid = ty * {nx} + tx")
    s(1, f"row0 = cuda.blockIdx.y * {bm}")
    s(1, f"col0 = cuda.blockIdx.x * {bn}")
    s(1, "z = cuda.blockIdx.z")
    s(1, f"oa = {f'z * {spell((1, 2))}' if bx else '0'}")
    s(1, f"ob = {f'z * {spell((2, 3))}' if by else '0'}")
    # The two tile loads are one pattern: per operand, its name, the extent of C its tile
    # spans (rows of A, columns of B), the tile's width and first index, whether its
    # stored rows run along K (A stored (m, k), B stored (n, k)), and the name of its
    # index across K. Each thread's place in a load: ``f`` along the stored rows
    # (coalesced), ``q`` across them, advancing by nt // (fast extent) per pass.
    operands = (("a", m, bm, "row0", not ta, "ra"), ("b", n, bn, "col0", tb, "cb"))
    for x, _, width, _, along_k, _ in operands:
        fast = bk if along_k else width
        s(1, f"f{x} = tid % {fast}")
        s(1, f"q{x} = tid // {fast}")
    for i in range(tm):
        for j in range(tn):
            s(1, f"c{i}_{j} = {zero}")
    s(1, f"for t0 in range(0, {k}, {bk}):")
    for x, ext, width, first, along_k, across in operands:
        fast, row = (bk if along_k else width), width + 1   # row: sa or sb, padded
        f, o = f"f{x}", f"o{x}"
        for p in range(width * bk // nt):
            q = f"q{x} + {p * (nt // fast)}"
            if along_k:   # storage row first + q, column t0 + f
                s(2, f"{across} = {first} + {q}")
                at, src = f"{f} * {row} + {q}", f"{o} + {across} * {k} + t0 + {f}"
                inside = f"{across} < {ext} and t0 + {f} < {k}"
            else:         # storage row t0 + q, column first + f
                s(2, f"k{x} = t0 + {q}")
                at, src = f"({q}) * {row} + {f}", f"{o} + k{x} * {ext} + {first} + {f}"
                inside = f"k{x} < {k} and {first} + {f} < {ext}"
            s(2, f"s{x}[{u(at)}] = {x}[{u(src)}] if {inside} else {zero}")
    s(2, "cuda.syncthreads()")
    s(2, f"for kk in range(0, {bk}, {UNROLL}):")
    s(3, f"pa = kk * {sa} + ty")
    s(3, f"pb = kk * {sb} + tx")
    for q in range(UNROLL):
        for i in range(tm):
            s(3, f"a{i} = sa[{u(f'pa + {q * sa + i * ny}')}]")
        for j in range(tn):
            s(3, f"b{j} = sb[{u(f'pb + {q * sb + j * nx}')}]")
        for i in range(tm):
            for j in range(tn):
                s(3, f"c{i}_{j} += a{i} * b{j}")
    s(2, "cuda.syncthreads()")
    s(1, "col = col0 + tx")
    for i in range(tm):
        s(1, f"row = row0 + ty + {i * ny}")
        s(1, f"if row < {m}:")
        s(2, f"o = z * {spell((1, 3))} + row * {n} + col")
        for j in range(tn):
            s(2, f"if col + {j * nx} < {n}:")
            s(3, f"c[{u(f'o + {j * nx}')}] = c{i}_{j}")
    return out


def launch_shape(dims, til):
    """(grid, block) of the kernel for ``dims``."""
    return ((math.ceil(dims.n / til.bn), math.ceil(dims.m / til.bm), dims.batch),
            til.threads)


def render(r, e, srcs):
    """Matmul ``e`` as kernels of renderer ``r`` (``backends.cuda.renderer.Renderer``);
    ``srcs``: per operand, (the array read, whether it is the operand's transpose's
    storage). A static plan renders the one blocking ``tiling`` picks for its shape, with
    literal extents; a shape-generic plan renders every blocking, extents as arguments,
    and the launch takes the one ``tiling`` picks for the plan's shape. Returns the step
    ``("tiled_mm", {tiling: (kernel name, by-value arguments)}, dims, e, operands)``."""
    dims = matmul_dims(e)
    (va, ta), (vb, tb) = srcs
    sig = [f"{np.dtype(v.dtype).name}[::1]" for v in (va, vb, e.out)]
    variants = {}
    for til in TILINGS if r.generic else (tiling(dims),):
        kname = r.name(f"_matmul{til.bm}x{til.bn}")
        vals = r.values((dims.batch, dims.m, dims.k, dims.n), _extent_name)
        r._header(kname, ["a", "b", "c"], sig)
        for depth, line in kernel_lines(e.out.dtype, dims, ta, tb, til, vals.prod):
            r.src(depth, line)
        variants[til] = (kname, r._close(vals))
    return ("tiled_mm", variants, dims, e, [va, vb])


def _extent_name(ds):
    # A generic kernel's extent parameters: ``m``, ``k``, ``n`` and products (``mk``...).
    return "".join("bmkn"[d] for d in ds)

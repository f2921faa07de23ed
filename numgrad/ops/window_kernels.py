"""ops.window_kernels: Numba loops for the sliding-window primitives on the CPU.

Room: ops. Imports NumPy; Numba on first use (``import numgrad`` stays Numba-free).

The max pool's gradient and the adjoint of the convolution's window copy were NumPy loops
over the kernel's offsets, each a pass over a strided view (a scatter through ``np.where``
per offset, a slice-add per offset). Each is one serial pass here (``parallel=False``:
eager and ``@ng.jit`` runs call them between BLAS products, whose threads they must not
fight), for 2-d windows; 1-d windows run as 2-d ones one row high (``as3d``,
``geometry2d``). ``kernel(name, dtype)`` compiles the loops once per process and dtype
(about 1-1.5 s), or loads them from numgrad's verified kernel cache: the package root
fills the ``load_module`` slot with ``compiler.backends.cpu.window_loops``, which runs
``source(dtype)`` through ``compiler.backends.cpu.cache`` (owner, permissions and hashes
checked before Numba unpickles anything). Numba's own ``cache=True`` next to this file
would load pickled machine code from the package's ``__pycache__`` unverified, and ops
sit below the compiler, so the slot is the way in; with nothing in it the loops compile
in memory.

LeNet-5's step, one thread (``python -m bench.lenet``'s shapes; CPU-time medians of 60
interleaved calls of the impls, loaded machine): the two pools' gradients 3.5 -> 0.9 ms,
the second layer's windows' adjoint 1.0 -> 0.5 ms. The window copy itself stays NumPy's
strided copy: a Numba loop writing the same layout measured 2.5x slower (1.0 against
0.41 ms on the first layer).
"""
from __future__ import annotations

import numpy as np

# Slot (docs/architecture.md, "How a lower layer reaches a higher one"): the package root
# sets it to a function ``source -> module`` that loads the loops through the compiler's
# verified disk cache (``compiler.backends.cpu.window_loops``); ops sit below the compiler.
# Left None, the loops compile in memory.
load_module = None
_compiled: dict = {}  # (loop name, dtype) -> Numba dispatcher
_modules: dict = {}   # dtype name -> the module of the loops for that dtype

# The loops' signatures for arrays of one dtype, compiled (or loaded) when the module is:
# C-contiguous arrays (``as3d``; ``ops.convolution`` hands ``windows_add`` a contiguous
# copy), Python ints and bools. Another layout or a second dtype compiles lazily.
_SIGNATURES = {
    "pool_route": "({a}[:, :, ::1], {a}[:, :, ::1], " + "int64, " * 8 + "boolean)",
    "pool_scatter_tiled": "({a}[:, :, ::1], {a}[:, :, ::1], int64, int64)",
    "windows_add": "({a}[:, :, :, :, :, ::1], " + ", ".join(["int64"] * 12) + ")",
    "pool_max_2x2": "({a}[:, :, ::1], int64, int64)",
    "pool_scatter_2x2": "({a}[:, :, ::1], {a}[:, :, ::1])",
}
_EAGER_DTYPES = ("float32", "float64")  # what a signature is written for up front


def kernel(name, dtype):
    """The compiled loop ``name`` for arrays of ``dtype`` (compiled, or loaded from the
    verified disk cache, once per process and dtype).

    >>> kernel("pool_route", np.float64)(np.ones((1, 1, 2)), np.array([[[1., 3.]]]),
    ...                                  1, 2, 1, 1, 1, 1, 1, 1, True)
    array([[[0., 1.]]])
    """
    fn = _compiled.get((name, dtype))
    if fn is None:
        fn = _compiled[name, dtype] = getattr(module(dtype), "_" + name)
    return fn


def module(dtype):
    """The module holding the loops for ``dtype`` (its Numba dispatchers).

    >>> hasattr(module(np.float32), "_windows_add")
    True
    """
    dt = np.dtype(dtype).name
    mod = _modules.get(dt)
    if mod is None:
        mod = _modules[dt] = (load_module or _in_memory)(source(dt))
    return mod


def source(dt):
    """The Numba source of the loops for the dtype named ``dt``: this module's loop
    functions under ``numba.njit`` (``cache=True``: read only through a verified cache),
    then their ``dt`` signatures compiled.

    >>> "def _windows_add(" in source("float32")
    True
    """
    import inspect
    parts = [f'"""ops.window_kernels\' loops for {dt} arrays."""\nimport numba\n'
             "import numpy as np\n",
             *('@numba.njit(inline="always", nogil=True)\n' + inspect.getsource(f)
               for f in (_winner, _winner_2x2))]
    for name in _SIGNATURES:
        parts.append("@numba.njit(nogil=True, cache=True)\n"
                     + inspect.getsource(globals()["_" + name]))
    if dt in _EAGER_DTYPES:
        parts.append("".join(f"_{name}.compile({sig.format(a=dt)!r})\n"
                             for name, sig in _SIGNATURES.items()))
    return "\n\n".join(parts)


def _in_memory(text):
    # No verified cache to load through: compile here, reading and writing nothing on disk.
    import types
    mod = types.ModuleType("numgrad_window_loops")
    exec(compile(text.replace("cache=True", "cache=False"), "<numgrad window loops>", "exec"),
         mod.__dict__)
    return mod


def as3d(a, nspatial):
    """``a`` ``(*lead, *spatial)`` as a contiguous ``(B, H, W)`` (a 1-d window row: H = 1).

    >>> as3d(np.zeros((2, 3, 5)), 1).shape
    (6, 1, 5)
    """
    lead = a.shape[:a.ndim - nspatial]
    sp = a.shape[a.ndim - nspatial:]
    b = int(np.prod(lead, dtype=np.int64))
    return np.ascontiguousarray(a).reshape((b,) + ((1,) + sp if nspatial == 1 else sp))


def geometry2d(*params):
    """The 2-d form of window params: each tuple of one entry gets a leading 1 (a window
    one row high).

    >>> geometry2d((3,), (2, 2))
    ((1, 3), (2, 2))
    """
    return tuple(tuple(p) if len(p) == 2 else (1,) + tuple(p) for p in params)


# ------------------------------------------------------------------ max pooling
# The winner of a window is PyTorch's: an offset wins when its value is greater than the
# running max or NaN, so a tie keeps the first offset in row-major order and the last NaN
# of a window wins.
def _winner(x, b, r0, c0, kh, kw, dh, dw, out, clear):
    """The row and column of ``x[b]``'s winner in the window at ``(r0, c0)``, writing 0 to
    the window's elements in ``out[b]`` on the way where ``clear``; the loops call it
    compiled and inlined (``source``)."""
    best = x[b, r0, c0]
    br = r0
    bc = c0
    for p in range(kh):
        for q in range(kw):
            v = x[b, r0 + p * dh, c0 + q * dw]
            if clear:
                out[b, r0 + p * dh, c0 + q * dw] = 0
            if v > best or v != v:
                best = v
                br = r0 + p * dh
                bc = c0 + q * dw
    return br, bc


def _pool_route(a, x, kh, kw, sh, sw, dh, dw, oh, ow, scatter):
    """``a`` ``(B, oh, ow)`` added into zeros like ``x`` at each window's winner (the max
    pool's vjp) or, ``scatter`` False, ``a`` like ``x`` read at the winners (its vjp)."""
    nb = x.shape[0]
    out = np.zeros(x.shape if scatter else (nb, oh, ow), a.dtype)
    for b in range(nb):
        for i in range(oh):
            for j in range(ow):
                br, bc = _winner(x, b, i * sh, j * sw, kh, kw, dh, dw, out, False)
                if scatter:
                    out[b, br, bc] += a[b, i, j]
                else:
                    out[b, i, j] = a[b, br, bc]
    return out


def _pool_scatter_tiled(a, x, kh, kw):
    """``_pool_route``'s scatter where the windows tile ``x`` (stride = kernel, no dilation,
    no remainder: LeNet's 2x2 pools): each element written once, no zeros first and no
    adds (0.97 -> 0.65 ms CPU on LeNet's first pool)."""
    nb, oh, ow = a.shape
    out = np.empty(x.shape, a.dtype)
    for b in range(nb):
        for i in range(oh):
            for j in range(ow):
                br, bc = _winner(x, b, i * kh, j * kw, kh, kw, 1, 1, out, True)
                out[b, br, bc] = a[b, i, j]
    return out


# LeNet's pools (2x2, stride 2, no remainder) get loops of their own: the window's four
# elements read by name and the winner chosen with selects, not branches, so LLVM
# vectorizes along the row. One thread, LeNet's shapes (CPU-time medians of 300 calls):
# the forward max 0.23 -> 0.11 ms (first pool; NumPy's passes per offset) and 0.11 ->
# 0.04 ms (second), the scatter 0.54 -> 0.32 and 0.18 -> 0.12 ms (``_pool_scatter_tiled``).
def _winner_2x2(x, b, r, c):
    """The maximum of ``x[b]``'s 2x2 window at ``(r, c)`` and its offset in row-major order
    (0-3), chosen as ``_winner`` does (the first maximum, the last NaN), by selects;
    inlined into the loops, as ``_winner``."""
    v1, v2, v3 = x[b, r, c + 1], x[b, r + 1, c], x[b, r + 1, c + 1]
    best = x[b, r, c]
    k = 0
    w = (v1 > best) | (v1 != v1)
    best = v1 if w else best
    k = 1 if w else k
    w = (v2 > best) | (v2 != v2)
    best = v2 if w else best
    k = 2 if w else k
    w = (v3 > best) | (v3 != v3)
    best = v3 if w else best
    k = 3 if w else k
    return best, k


def _pool_max_2x2(x, oh, ow):
    """The maxima of the 2x2 windows (stride 2) of ``x`` ``(B, 2 oh, 2 ow)``."""
    nb = x.shape[0]
    out = np.empty((nb, oh, ow), x.dtype)
    for b in range(nb):
        for i in range(oh):
            for j in range(ow):
                out[b, i, j] = _winner_2x2(x, b, 2 * i, 2 * j)[0]
    return out


def _pool_scatter_2x2(a, x):
    """``_pool_scatter_tiled`` for 2x2 windows (stride 2) tiling ``x``."""
    nb, oh, ow = a.shape
    out = np.empty(x.shape, a.dtype)
    zero = np.zeros(1, a.dtype)[0]
    for b in range(nb):
        for i in range(oh):
            r = 2 * i
            for j in range(ow):
                c = 2 * j
                k = _winner_2x2(x, b, r, c)[1]
                g = a[b, i, j]
                out[b, r, c] = g if k == 0 else zero
                out[b, r, c + 1] = g if k == 1 else zero
                out[b, r + 1, c] = g if k == 2 else zero
                out[b, r + 1, c + 1] = g if k == 3 else zero
    return out


# ------------------------------------------------------------------ convolution windows
def _windows_add(d, nb, nc, hh, ww, kh, kw, sh, sw, dh, dw, ph, pw):
    """The adjoint of ``_windows``: ``d`` laid out ``(kh, kw, C, oh, ow, N)`` (the product's
    layout, see ``ops.convolution._cols_grad``) summed into ``(N, C, H, W)``, the padding
    dropped, laid out ``(C, H, W, N)``: the batch is the innermost axis of the adds, one
    contiguous run per pixel."""
    oh, ow = d.shape[3], d.shape[4]
    acc = np.zeros((nc, hh, ww, nb), d.dtype)
    for p in range(kh):
        for q in range(kw):
            for c in range(nc):
                for i in range(oh):
                    r = i * sh + p * dh - ph
                    if r < 0 or r >= hh:
                        continue
                    for j in range(ow):
                        s = j * sw + q * dw - pw
                        if s < 0 or s >= ww:
                            continue
                        dst = acc[c, r, s]
                        src = d[p, q, c, i, j]
                        for n in range(nb):
                            dst[n] += src[n]
    return acc

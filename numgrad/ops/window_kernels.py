"""ops.window_kernels: Numba loops for the sliding-window primitives on the CPU.

Room: ops. Imports NumPy; Numba on first use (``import numgrad`` stays Numba-free).

The max pool's gradient and the adjoint of the convolution's window copy were NumPy loops
over the kernel's offsets, each a pass over a strided view (a scatter through ``np.where``
per offset, a slice-add per offset). Each is one serial pass here (``parallel=False``:
eager and ``@ng.jit`` runs call them between BLAS products, whose threads they must not
fight), for 2-d windows; 1-d windows run as 2-d ones one row high (``as3d``,
``geometry2d``). ``kernel(name)`` compiles a loop on first use, per dtype, in memory:
about 1-1.5 s once per process and dtype. Numba's own ``cache=True`` would load pickled
machine code from the package's ``__pycache__`` (or a user-wide folder) unverified, which
numgrad never does (its kernel cache checks owner, permissions and hashes first:
``compiler.backends.disk_cache``), and ops sit below the compiler, so they cannot use it.

LeNet-5's step, one thread (``python -m bench.lenet``'s shapes; CPU-time medians of 60
interleaved calls of the impls, loaded machine): the two pools' gradients 3.5 -> 0.9 ms,
the second layer's windows' adjoint 1.0 -> 0.5 ms. The window copy itself stays NumPy's
strided copy: a Numba loop writing the same layout measured 2.5x slower (1.0 against
0.41 ms on the first layer).
"""
from __future__ import annotations

import numpy as np

_compiled: dict = {}


def kernel(name):
    """The compiled loop ``name`` of this module (compiled, or loaded from disk, once).

    >>> kernel("pool_route")(np.ones((1, 1, 2)), np.array([[[1., 3.]]]), 1, 2, 1, 1, 1, 1,
    ...                      1, 1, True)
    array([[[0., 1.]]])
    """
    fn = _compiled.get(name)
    if fn is None:
        import numba
        g = globals()
        if not isinstance(g["_winner"], numba.core.dispatcher.Dispatcher):
            # the loops read this global when they compile: the helper, compiled inline
            g["_winner"] = numba.njit(inline="always", nogil=True)(g["_winner"])
        fn = _compiled[name] = numba.njit(nogil=True)(g["_" + name])
    return fn


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
    compiled and inlined (``kernel``)."""
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

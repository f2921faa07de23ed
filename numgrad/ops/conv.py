"""ops.conv: sliding windows (``im2col``/``col2im``) and ``named``, the layers' primitives.

Room: ops. Convolution, pooling, ``unfold``/``fold`` and transposed convolution are
composites (``nn.functional_conv``) over two linear primitives, each the other's vjp, so
every order of derivative is covered by these two:

- ``im2col(x, kernel, stride, dilation)``: ``x`` of shape ``(N, C, *spatial)`` to its
  windows ``(N, C, *kernel, *out_spatial)``: one strided-view copy in NumPy;
- ``col2im(g, shape, kernel, stride, dilation)``: the adjoint: each window position added
  back where it came from, one slice-add per kernel offset (``np.add.at`` on an index array,
  the route through ``getitem``'s backward, measured 4x slower on LeNet's first layer).

Under ``@ng.jit`` both run their NumPy impl as a step between the fused kernels (as the
gathers and cumsum do); the matmul next to them is the existing BLAS step.

``named(x, name=...)`` is the identity whose backward node prints ``name``: a composite
loss or layer ends in it so that ``grad_fn`` shows PyTorch's node (``NllLossBackward0``,
``ConvolutionBackward0``...) rather than its last arithmetic step's. The result shares the
input's array (as ``detach`` does): composites end with an op that saves no output.
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from numgrad.ops import window_kernels
from numgrad.ops.registry import Cost, defop, identity_lowering

if TYPE_CHECKING:
    from numgrad.tensor import Tensor


def window_shape(spatial, kernel, stride, dilation):
    """The output extents of windows of ``kernel`` over ``spatial`` (no padding)."""
    return tuple((s - d * (k - 1) - 1) // st + 1
                 for s, k, st, d in zip(spatial, kernel, stride, dilation))


def _im2col_shape(x_shape, kernel, stride, dilation):
    n = len(kernel)
    out = window_shape(x_shape[-n:], kernel, stride, dilation)
    return tuple(x_shape[:-n]) + tuple(kernel) + out


def _np_im2col(x, kernel, stride, dilation):
    n = len(kernel)
    shape = _im2col_shape(x.shape, kernel, stride, dilation)
    lead = x.strides[:-n]
    sp = x.strides[-n:]
    strides = (tuple(lead) + tuple(s * d for s, d in zip(sp, dilation))
               + tuple(s * st for s, st in zip(sp, stride)))
    view = np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)
    return np.ascontiguousarray(view)


def _np_col2im(g, shape, kernel, stride, dilation):
    n = len(kernel)
    out = np.zeros(shape, g.dtype)
    lead = g.ndim - 2 * n
    extents = g.shape[lead + n:]
    base = (slice(None),) * lead
    for offs in itertools.product(*(range(k) for k in kernel)):
        dst = base + tuple(slice(o * d, o * d + st * (e - 1) + 1, st)
                           for o, d, st, e in zip(offs, dilation, stride, extents))
        out[dst] += g[base + offs]
    return out


im2col_p = defop("im2col", inputs=("x",), params=("kernel", "stride", "dilation"),
                 impl=_np_im2col, node="Im2ColBackward0",
                 abstract=lambda x, kernel, stride, dilation: (
                     _im2col_shape(x.shape, kernel, stride, dilation), x.dtype))
col2im_p = defop("col2im", inputs=("g",), params=("shape", "kernel", "stride", "dilation"),
                 impl=_np_col2im, node="Col2ImBackward0",
                 abstract=lambda g, shape, kernel, stride, dilation: (tuple(shape), g.dtype))
im2col_p.defvjp(lambda g, x_shape, kernel, stride, dilation: col2im_p(
    g, shape=tuple(x_shape), kernel=kernel, stride=stride, dilation=dilation))
col2im_p.defvjp(lambda g, kernel, stride, dilation: im2col_p(
    g, kernel=kernel, stride=stride, dilation=dilation))

named_p = defop("named", kind="pointwise", inputs=("x",), params=("name",),
                impl=lambda x, name: x, abstract=lambda x, name: (x.shape, x.dtype),
                node=lambda p, s: p["name"], scalar=identity_lowering, cost=Cost(cheap=True))
named_p.defvjp(lambda g: g)


def named(x: Tensor, name: str) -> Tensor:
    """``x`` itself, its backward node printed as ``name`` (a composite's PyTorch node)."""
    if x.grad_fn is None:
        return x  # nothing to name: skip the extra step
    return named_p(x, name=name)


def im2col(x: Tensor, kernel, stride, dilation) -> Tensor:
    """The windows of ``x`` ``(N, C, *spatial)``: ``(N, C, *kernel, *out_spatial)``."""
    return im2col_p(x, kernel=tuple(kernel), stride=tuple(stride), dilation=tuple(dilation))


def col2im(g: Tensor, shape, kernel, stride, dilation) -> Tensor:
    """The adjoint of ``im2col``: windows ``g`` summed back into an array of ``shape``."""
    return col2im_p(g, shape=tuple(shape), kernel=tuple(kernel), stride=tuple(stride),
                    dilation=tuple(dilation))


# ------------------------------------------------------------------ max pooling
# Max pooling over an already padded input (padding reads -inf) as three primitives (the
# maxima a NumPy loop over the kernel's offsets, the two gradients one Numba pass each in
# ``ops.window_kernels``), instead of a chain of compare/where ops whose gradients scatter
# each offset's view into zeros of the input's size (eager LeNet spent a quarter of its
# kernel time there). The winner of a window is PyTorch's: an offset wins when its value is
# greater than the running max or NaN, so a tie keeps the first offset in row-major order
# and gets the whole gradient, and the last NaN of a window wins.
#
# - ``max_pool(x)``: the window maxima;
# - ``max_pool_scatter(g, x)``: ``g`` routed to each window's winner (the vjp of max_pool);
# - ``max_pool_gather(u, x)``: ``u`` read at each window's winner (the vjp of the scatter,
#   whose vjp is the scatter again), so every order of derivative is covered.
def _pool_views(a, kernel, stride, dilation, extent):
    """The strided view of ``a`` read at each kernel offset, in row-major order."""
    lead = (slice(None),) * (a.ndim - len(kernel))
    for offs in itertools.product(*(range(k) for k in kernel)):
        yield a[lead + tuple(slice(o * d, o * d + st * (e - 1) + 1, st)
                             for o, d, st, e in zip(offs, dilation, stride, extent))]


def _pool_max(x, kernel, stride, dilation, extent):
    best = None
    for view in _pool_views(x, kernel, stride, dilation, extent):
        if best is None:
            best = view.copy()
        else:  # NaN propagates; on a tie np.maximum returns its second operand, the first max
            np.maximum(view, best, out=best)
    return best


def _tiles_2x2(x, kernel, stride, dilation):
    # LeNet's pools: 2x2 windows, stride 2, of floats (``window_kernels``' own loops)
    return (tuple(kernel) == (2, 2) == tuple(stride) and tuple(dilation) == (1, 1)
            and x.dtype.char in "fd")


def _np_max_pool(x, kernel, stride, dilation, extent):
    if _tiles_2x2(x, kernel, stride, dilation):
        out = window_kernels.kernel("pool_max_2x2", x.dtype)(window_kernels.as3d(x, 2),
                                                             *extent)
        return out.reshape(_pooled_shape(x, kernel, extent))
    return _pool_max(x, kernel, stride, dilation, extent)


def _pool_route(a, x, kernel, stride, dilation, extent, scatter):
    # One Numba pass over the windows (LeNet's two pools' gradients 3.5 -> 0.9 ms against
    # NumPy passes per kernel offset): ``a`` scattered to, or gathered from, the winners.
    n = len(kernel)
    k, st, d, e = window_kernels.geometry2d(kernel, stride, dilation, extent)
    a3, x3 = window_kernels.as3d(a, n), window_kernels.as3d(x, n)
    if scatter and all((di == 1 or ki == 1) and si == ki and ei * si == size
                       for ki, si, di, ei, size in zip(k, st, d, e, x3.shape[1:])):
        if _tiles_2x2(x3, kernel, stride, dilation) and a3.dtype == x3.dtype:
            out = window_kernels.kernel("pool_scatter_2x2", a3.dtype)(a3, x3)
        else:
            out = window_kernels.kernel("pool_scatter_tiled", a3.dtype)(a3, x3, *k)
    else:
        out = window_kernels.kernel("pool_route", a3.dtype)(a3, x3, *k, *st, *d, *e, scatter)
    return out.reshape(tuple(x.shape) if scatter else _pooled_shape(x, kernel, extent))


def _np_max_pool_scatter(g, x, kernel, stride, dilation, extent):
    return _pool_route(g, x, kernel, stride, dilation, extent, True)


def _np_max_pool_gather(u, x, kernel, stride, dilation, extent):
    return _pool_route(u, x, kernel, stride, dilation, extent, False)


_POOL = ("kernel", "stride", "dilation", "extent")


def _pooled_shape(x, kernel, extent):
    return tuple(x.shape[:x.ndim - len(kernel)]) + tuple(extent)


max_pool_p = defop("max_pool", inputs=("x",), params=_POOL, impl=_np_max_pool,
                   node="MaxPool2DWithIndicesBackward0",
                   abstract=lambda x, kernel, stride, dilation, extent: (
                       _pooled_shape(x, kernel, extent), x.dtype))
max_pool_scatter_p = defop("max_pool_scatter", inputs=("g", "x"), params=_POOL,
                           impl=_np_max_pool_scatter,
                           abstract=lambda g, x, kernel, stride, dilation, extent: (
                               tuple(x.shape), g.dtype))
max_pool_gather_p = defop("max_pool_gather", inputs=("u", "x"), params=_POOL,
                          impl=_np_max_pool_gather,
                          abstract=lambda u, x, kernel, stride, dilation, extent: (
                              _pooled_shape(x, kernel, extent), u.dtype))
max_pool_p.defvjp(lambda g, x, kernel, stride, dilation, extent: max_pool_scatter_p(
    g, x, kernel=kernel, stride=stride, dilation=dilation, extent=extent))
max_pool_scatter_p.defvjp(lambda g, x, kernel, stride, dilation, extent: max_pool_gather_p(
    g, x, kernel=kernel, stride=stride, dilation=dilation, extent=extent), None)
max_pool_gather_p.defvjp(lambda g, x, kernel, stride, dilation, extent: max_pool_scatter_p(
    g, x, kernel=kernel, stride=stride, dilation=dilation, extent=extent), None)


def max_pool(x: Tensor, kernel, stride, dilation, extent) -> Tensor:
    """The maxima of the windows of ``x`` (padded already; its last ``len(kernel)`` dims
    are spatial), ``extent`` windows per spatial dim.

    >>> max_pool(ng.tensor([[[1., 3., 2., 0.]]]), (2,), (2,), (1,), (2,))
    tensor([[[3., 2.]]])
    """
    return max_pool_p(x, kernel=tuple(kernel), stride=tuple(stride), dilation=tuple(dilation),
                      extent=tuple(extent))

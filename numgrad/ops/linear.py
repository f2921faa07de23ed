"""ops.linear: ``F.linear`` as one eager primitive (PyTorch's ``addmm`` / ``mm``).

Room: ops. Imports the registry, ops.layout, ops.linalg and ops.losses' ``fused`` test.

As a composite, ``linear(x, W, b)`` ran three ops and recorded three nodes per call
(``W.T``, ``x @ W.T``, ``+ b``), and its backward three transposes more (matmul's rules
transpose both operands); PyTorch runs one kernel and records one node (``AddmmBackward0``,
``MmBackward0`` without a bias). Here a 2-D ``x`` and ``W`` of one floating dtype run one
BLAS call on ``W``'s transposed view, and the rules reach the gradients without a transpose
node: ``dx = g @ W``, ``dW = g.T @ x`` (``mm_tn``, BLAS again on a view), ``db = g.sum(0)``.
The rules are written in primitives whose own rules close the set (``mm_nt`` and ``mm_tn``
are each other's transposes), so ``create_graph`` differentiates them again.

Like ops.losses, they run only on eager NumPy payloads: traced by ``@ng.jit``, under
``ng.func.vmap``, forward-mode AD or on a device, ``linear`` returns None and the caller
runs the composite, which the compiler and the transforms know; so each primitive here is
``jit=False``. A rule meeting such a payload (a gradient taken inside a transform) falls
back to matmul and transposes the same way.
"""
from __future__ import annotations

import numgrad.ops.late as _late
from numgrad.ops.layout import reshape, transpose
from numgrad.ops.linalg import matmul_p
from numgrad.ops.losses import fused
from numgrad.ops.registry import defop


def _mT(t):
    return transpose(t, -1, -2)


def _addmm(x, w, b):
    out = x.dot(w.T)  # ndarray.dot: the BLAS call with the least Python around it
    out += b
    return out


def _mm_nt(x, w):
    return x.dot(w.T)


def _mm_tn(a, b):
    return a.T.dot(b)


def _abstract_nt(x, w, *b):
    return (x.shape[0], w.shape[0]), x.dtype


addmm_p = defop("addmm", inputs=("x", "w", "b"), impl=_addmm, abstract=_abstract_nt,
                node="AddmmBackward0", jit=False)
mm_nt_p = defop("mm_nt", inputs=("x", "w"), impl=_mm_nt, abstract=_abstract_nt,
                node="MmBackward0", jit=False)
mm_tn_p = defop("mm_tn", inputs=("a", "b"), impl=_mm_tn, node="MmBackward0", jit=False,
                abstract=lambda a, b: ((a.shape[1], b.shape[1]), a.dtype))


def mm_nt(x, w):
    """``x @ w.T`` for 2-D ``x`` (n, k) and ``w`` (m, k), without a transpose node.

    >>> mm_nt(ng.ones(2, 3), ng.ones(4, 3)).shape
    torch.Size([2, 4])
    """
    return mm_nt_p(x, w) if fused(x, w) else matmul_p(x, _mT(w))


def mm_tn(a, b):
    """``a.T @ b`` for 2-D ``a`` (k, n) and ``b`` (k, m), without a transpose node.

    >>> mm_tn(ng.ones(3, 2), ng.ones(3, 4)).shape
    torch.Size([2, 4])
    """
    return mm_tn_p(a, b) if fused(a, b) else matmul_p(_mT(a), b)


# x @ w.T: d/dx = g @ w; d/dw = g.T @ x. a.T @ b: d/da = b @ g.T; d/db = a @ g.
_dx = lambda g, w: matmul_p(g, w)  # noqa: E731
_dw = lambda g, x: mm_tn(g, x)  # noqa: E731
addmm_p.defvjp(_dx, _dw, lambda g: g.sum(0))
mm_nt_p.defvjp(_dx, _dw)
mm_tn_p.defvjp(lambda g, b: mm_nt(b, g), lambda g, a: matmul_p(a, g))


def linear(x, w, b=None):
    """``x @ w.T + b`` as one node for a 2-D ``x`` and ``w`` and a bias of shape
    ``(out_features,)`` or None, all of one floating dtype on NumPy (a contiguous N-D ``x``
    is viewed as 2-D around that node, as PyTorch does); None where the caller's
    composite must run (see ``ops.losses.fused``), which also raises PyTorch's errors
    for mismatched shapes or dtypes.

    >>> linear(ng.ones(2, 3), ng.ones(4, 3), ng.zeros(4))
    tensor([[3., 3., 3., 3.],
            [3., 3., 3., 3.]])
    """
    if not fused(x, w, b):
        return None
    xd, wd = x._data, w._data
    if wd.ndim != 2 or xd.ndim < 2 or xd.shape[-1] != wd.shape[1]:
        return None
    if b is not None and b._data.shape != wd.shape[:1]:
        return None
    if xd.ndim > 2:
        # PyTorch's: a contiguous (..., in) input is viewed as 2-D around one addmm
        # (ViewBackward0 over AddmmBackward0); another layout runs the composite.
        if not xd.flags.c_contiguous:
            return None
        out = linear(reshape(x, (-1, xd.shape[-1])), w, b)
        return reshape(out, xd.shape[:-1] + wd.shape[:1])
    return mm_nt_p(x, w) if b is None else addmm_p(x, w, b)


_late.mm_nt, _late.mm_tn = mm_nt, mm_tn  # (matmul's vjp rules in ops.linalg, below, use them)

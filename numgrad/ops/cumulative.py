"""ops.cumulative: cumsum, prod and dropout's random mask.

Room: ops. None of these has a kernel lowering: under ``@ng.jit`` each runs its NumPy
impl as a step between the fused kernels (``kind="host"``, the default), as matmul and gathers
do, and the elementwise work around it still fuses.
"""
from __future__ import annotations

import numpy as np

from numgrad.ops.registry import defop
from numgrad.ops.elementwise import where
from numgrad.ops.reduction import _unreduce, np_axis, reduced_shape, sum_p


def _acc_dtype(d):
    # PyTorch: sums and products of bool/int tensors are int64.
    return np.dtype(np.int64) if d.kind in "biu" else d


cumsum_p = defop("cumsum", inputs=("x",), params=("dim",),
                 impl=lambda x, dim: np.cumsum(x, axis=dim, dtype=_acc_dtype(x.dtype)),
                 abstract=lambda x, dim: (x.shape, _acc_dtype(x.dtype)))
prod_p = defop("prod", inputs=("x",), params=("dim", "keepdim"),
               node=lambda p, s: "ProdBackward0" if p["dim"] is None else "ProdBackward1",
               impl=lambda x, dim, keepdim: np.prod(x, axis=np_axis(x, dim), keepdims=keepdim,
                                                    dtype=_acc_dtype(x.dtype)),
               abstract=lambda x, dim, keepdim: (reduced_shape(x.shape, dim, keepdim),
                                                 _acc_dtype(x.dtype)))


def _cumsum_vjp(g, dim):
    # The adjoint of a running sum is the running sum from the other end (Tensor.flip: a
    # composite, installed by the ops above this module).
    return cumsum_p(g.flip((dim,)), dim=dim).flip((dim,))


def _prod_vjp(g, x, out, x_shape, dim, keepdim):
    # d prod / d x_i is the product of the others: out / x_i where x_i != 0; where x_i is
    # the only zero it is the product of the rest, and with two zeros it is 0 (PyTorch's).
    g = _unreduce(g, x_shape, dim, keepdim)
    zero = x == 0
    safe = where(zero, 1.0, x)
    others = prod_p(safe, dim=dim, keepdim=True)
    n_zero = sum_p(zero, dim=dim, keepdim=True)
    full = _unreduce(out, x_shape, dim, keepdim)
    return g * where(zero, where(n_zero == 1, others, 0.0), full / safe)


cumsum_p.defvjp(_cumsum_vjp)
prod_p.defvjp(_prod_vjp)


def _np_keep_mask(x, p, seq):
    import numgrad.creation as creation
    return creation._generator().random(x.shape) >= p


# `seq` makes every call its own equation (a traced function with two dropouts draws two
# masks); `random=True` keeps the compiler from folding or merging it.
keep_mask_p = defop("dropout_mask", inputs=("x",), params=("p", "seq"), impl=_np_keep_mask,
                    abstract=lambda x, p, seq: (x.shape, np.dtype(np.bool_)), random=True)

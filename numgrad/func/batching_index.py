"""func.batching_index: batching rules for indexing by integer tensors (``ng.func.vmap``).

Room: func. ``x[idx]``, ``index_select``, ``gather`` and ``scatter_add`` with a tensor index
become the ``gather`` / ``scatter_add`` / ``index_put_at`` primitives (``ops.indexing``):
``index`` is a template whose ``Slot`` entries read the rows of the ``idx`` operand. Inside
``vmap`` the index, the operand or both differ per example; one call covers the batch by
adding one more advanced index in front, the example number ``arange(B)``, broadcast
against the others:

    out[b] = x[b][t(idx[b])]   ==   x_all[arange(B), t(idx_all)]

NumPy places the broadcast advanced dims first when the advanced entries are not one
run, which the leading example index makes them unless the example's own run starts the
index; the result is then permuted back to the example's layout (a scatter permutes its
source the other way first). Boolean masks have no rule (their count is per example).
"""
from __future__ import annotations

import numpy as np

import numgrad.func.batching as batching
from numgrad.func.batching import expand, moveaxis, reshape
from numgrad.ops.dispatch import evaluate
from numgrad.ops.indexing import Slot
from numgrad.ops.layout import cat_p, permute_p


def _advanced(k):
    return isinstance(k, (Slot, np.ndarray)) or (isinstance(k, (int, np.integer))
                                                 and not isinstance(k, bool))


def _plan(ctx, idx, index, x_ndim, out_ndim):
    """``(idx', index', perm)``: the batch-wide gather index and, per output dim of the
    batched result, the dim of the combined gather's result it comes from; None where no
    single call covers it (a boolean mask)."""
    if any(isinstance(k, np.ndarray) and k.dtype == np.bool_ for k in index):
        return None
    adv = [i for i, k in enumerate(index) if _advanced(k)]
    bshape = tuple(idx.shape[1:])  # one example's index shape, after the row axis
    n_adv = max([len(bshape)] + [k.ndim for k in index if isinstance(k, np.ndarray)])
    # Rows of idx for all examples: (K, B, 1.., bshape), and the example number as row K.
    n_rows = idx.shape[0]
    lead = (ctx.size,) + (1,) * (n_adv - len(bshape))
    if ctx.batched(idx):
        rows = moveaxis(reshape(idx.value, lead + (n_rows,) + bshape), len(lead), 0)
    else:
        rows = reshape(idx, (n_rows, 1) + lead[1:] + bshape)
    full = (n_rows, ctx.size) + (1,) * (n_adv - len(bshape)) + bshape
    rows = expand(rows, full)
    example = np.broadcast_to(np.arange(ctx.size, dtype=np.int64).reshape(
        (1, ctx.size) + (1,) * n_adv), (1,) + full[1:])
    new_idx = evaluate(cat_p, [rows, np.ascontiguousarray(example)], {"dim": 0})
    new_index = (Slot(n_rows),) + tuple(index)
    # Where the example's advanced run sits in its own result: dims before it (q).
    q = 0
    if adv == list(range(adv[0], adv[-1] + 1)) and adv[0] > 0:
        consumed = sum(1 for k in index if k is not None and k is not Ellipsis)
        q = sum(1 if (k is None or isinstance(k, slice)) else
                (x_ndim - consumed) if k is Ellipsis else 0 for k in index[:adv[0]])
    perm = ([0] + [1 + n_adv + i for i in range(q)] + [1 + i for i in range(n_adv)]
            + list(range(1 + n_adv + q, 1 + out_ndim)))
    return new_idx, new_index, perm


def _permute(v, dims):
    if list(dims) == list(range(len(dims))):
        return v
    return evaluate(permute_p, [v], {"dims": tuple(dims), "op": "permute"})


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _out_ndim(prim, x, idx, index):
    from numgrad.ops.indexing import _probe_index, _abstract_getitem
    return len(_abstract_getitem(x, _probe_index(index, np.zeros(tuple(idx.shape),
                                                                  np.int64)))[0])


def _gather(ctx, prim, datas, params):
    x, idx = datas
    index = params["index"]
    plan = _plan(ctx, idx, index, len(x.shape), _out_ndim(prim, x, idx, index))
    if plan is None:
        return None
    new_idx, new_index, perm = plan
    out = evaluate(prim, [ctx.full(x), new_idx], {"index": new_index})
    return _permute(out, perm)


def _scatter_add(ctx, prim, datas, params):
    g, idx = datas
    index, shape = params["index"], tuple(params["shape"])
    plan = _plan(ctx, idx, index, len(shape), len(g.shape))
    if plan is None:
        return None
    new_idx, new_index, perm = plan
    src = _permute(ctx.full(g), _inverse(perm))
    return evaluate(prim, [src, new_idx], {"index": new_index, "shape": (ctx.size,) + shape})


def _index_put_at(ctx, prim, datas, params):
    x, v, idx = datas
    index = params["index"]
    n_out = _out_ndim(prim, x, idx, index)
    plan = _plan(ctx, idx, index, len(x.shape), n_out)
    if plan is None:
        return None
    new_idx, new_index, perm = plan
    from numgrad.ops.indexing import _probe_index, _abstract_getitem
    region = _abstract_getitem(x, _probe_index(index, np.zeros(tuple(idx.shape), np.int64)))[0]
    vals = expand(ctx.padded(v, n_out), (ctx.size,) + tuple(region))
    return evaluate(prim, [ctx.full(x), _permute(vals, _inverse(perm)), new_idx],
                    {"index": new_index})


RULES = {"gather": _gather, "scatter_add": _scatter_add, "index_put_at": _index_put_at}
batching.RULES.update(RULES)  # (func.batching, below, holds every rule vmap reads)

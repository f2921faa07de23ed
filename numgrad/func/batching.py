"""func.batching: the batching rule of each primitive, for ``ng.func.vmap``.

Room: func. A rule maps one primitive applied to per-example values onto one application
to the whole batch. It sees *physical* payloads: a value batched at the running level
carries its batch dimension first (``Batched.value``); any other payload (a NumPy array, a
traced value, a value batched by an outer ``vmap``) is the same for every example. Rules
are looked up by primitive name first, then by registry ``kind``: the elementwise, compare
and pointwise kinds share one rule (align ranks, then broadcast), the reductions another
(shift ``dim`` past the batch dimension); a row whose impl maps over leading dims
(``leading_batch``: the LAPACK rows) takes the examples as one more of them. A primitive
with none of these falls back to a loop over
the examples and a ``stack``: correct, but one call per example (and unrolled by ``@ng.jit``).
"""
from __future__ import annotations

import math

import numpy as np

from numgrad.ops.dispatch import evaluate
from numgrad.ops.indexing import getitem_p
from numgrad.ops.layout import expand_p, permute_p, reshape_p, stack_p


def reshape(v, shape):
    return v if tuple(v.shape) == tuple(shape) else \
        evaluate(reshape_p, [v], {"shape": tuple(shape), "op": "reshape"})


def expand(v, shape):
    return v if tuple(v.shape) == tuple(shape) else \
        evaluate(expand_p, [v], {"shape": tuple(shape)})


def moveaxis(v, src, dst):
    """``v`` with its axis ``src`` moved to ``dst`` (both non-negative)."""
    if src == dst:
        return v
    dims = [d for d in range(len(v.shape)) if d != src]
    dims.insert(dst, src)
    return evaluate(permute_p, [v], {"dims": tuple(dims), "op": "permute"})


def take(v, b):
    """Example ``b`` of a physical value (its batch dimension first)."""
    return evaluate(getitem_p, [v], {"index": (b,)})


class Ctx:
    """What a rule knows: the level's batch size and which operands it batches."""

    __slots__ = ("size", "level")

    def __init__(self, size, level):
        self.size = size
        self.level = level

    def batched(self, d):
        return getattr(d, "_ng_interpreter", None) is self.level and hasattr(d, "value")

    def padded(self, d, ndim):
        """The physical value of operand ``d`` with its per-example rank raised to ``ndim``
        (ones after the batch dim), so that it broadcasts like the example it stands for.
        Operands the level does not batch are returned as they are: they broadcast from
        the right already."""
        if not self.batched(d):
            return d
        shape = tuple(d.shape)
        return reshape(d.value, (self.size,) + (1,) * (ndim - len(shape)) + shape)

    def full(self, d):
        """The physical value of ``d``, expanded over the batch where the level does not
        batch it."""
        if self.batched(d):
            return d.value
        shape = tuple(d.shape)
        return expand(reshape(d, (1,) + shape), (self.size,) + shape)


def _broadcasting(ctx, prim, datas, params):
    n = max(len(d.shape) for d in datas)
    return evaluate(prim, [ctx.padded(d, n) for d in datas], params)


def _expand(ctx, prim, datas, params):
    shape = tuple(params["shape"])
    return expand(ctx.padded(datas[0], len(shape)), (ctx.size,) + shape)


def _norm(d, n):
    return d % n if n else d


def _dim_param(ctx, prim, datas, params):
    """Reductions, arg-reductions, cumulative and sort ops: ``dim`` moves past the batch."""
    dim = params.get("dim")
    n = len(datas[0].shape)
    if dim is None:
        if prim.kind != "reduction":
            return None  # over the flattened example: no single batched call
        dim = tuple(range(n))
    if n == 0:
        return None
    new = tuple(_norm(d, n) + 1 for d in dim) if isinstance(dim, tuple) else _norm(dim, n) + 1
    return evaluate(prim, [datas[0].value], {**params, "dim": new})


def _permute(ctx, prim, datas, params):
    n = len(datas[0].shape)
    dims = (0,) + tuple(_norm(d, n) + 1 for d in params["dims"])
    return evaluate(prim, [datas[0].value], {**params, "dims": dims})


def _reshape(ctx, prim, datas, params):
    return evaluate(prim, [datas[0].value], {**params, "shape": (ctx.size,) +
                                             tuple(params["shape"])})


def _joined(ctx, prim, datas, params):
    """cat and stack: every operand batched, ``dim`` past the batch dimension."""
    n = len(datas[0].shape) + (prim.name == "stack")
    return evaluate(prim, [ctx.full(d) for d in datas],
                    {**params, "dim": _norm(params["dim"], n) + 1})


def _basic(index):
    """Whether the example's index keeps its meaning behind a leading ``slice(None)``: basic
    entries, and advanced ones (arrays; ints among arrays) in one contiguous run, which
    NumPy places where the run is (separated runs go first, before the batch dim)."""
    if not isinstance(index, tuple):
        return False
    arrays = any(isinstance(k, np.ndarray) for k in index)
    advanced = []
    for i, k in enumerate(index):
        if isinstance(k, np.ndarray) or (arrays and isinstance(k, (int, np.integer))
                                         and not isinstance(k, bool)):
            advanced.append(i)
        elif not (k is None or k is Ellipsis or isinstance(k, slice)
                  or (isinstance(k, (int, np.integer)) and not isinstance(k, bool))):
            return False
    return not advanced or advanced == list(range(advanced[0], advanced[-1] + 1))


def _getitem(ctx, prim, datas, params):
    index = params["index"]
    if not _basic(index):
        return None
    return evaluate(prim, [datas[0].value], {**params, "index": (slice(None),) + index})


def _index_add(ctx, prim, datas, params):
    index = params["index"]
    if not _basic(index):
        return None
    return evaluate(prim, [datas[0].value], {"index": (slice(None),) + index,
                                             "shape": (ctx.size,) + tuple(params["shape"])})


def _matmul(ctx, prim, datas, params):
    x, y = datas
    squeeze = []
    xs, ys = tuple(x.shape), tuple(y.shape)
    if ctx.batched(x) and not ctx.batched(y) and len(ys) == 2:
        # Examples times a shared matrix: one GEMM over all their rows (B*n, k) @ (k, m).
        rows = ctx.size * math.prod(xs[:-1])
        out = evaluate(prim, [reshape(x.value, (rows, xs[-1])), y], params)
        return reshape(out, (ctx.size,) + xs[:-1] + ys[1:])
    xp, yp = x, y
    # A batched vector becomes a one-row (x) or one-column (y) matrix, so that NumPy's
    # matmul does not read the batch dim as the vector's matrix dim.
    if ctx.batched(y) and len(ys) == 1:
        yp, ys = reshape(y.value, (ctx.size,) + ys + (1,)), ys + (1,)
        squeeze.append(-1)
    elif ctx.batched(y):
        yp = y.value
    if ctx.batched(x) and len(xs) == 1:
        xp, xs = reshape(x.value, (ctx.size, 1) + xs), (1,) + xs
        squeeze.append(-2 if len(ys) > 1 else -1)
    elif ctx.batched(x):
        xp = x.value
    n = max(len(xs), len(ys))
    if ctx.batched(x):
        xp = reshape(xp, (ctx.size,) + (1,) * (n - len(xs)) + xs)
    if ctx.batched(y):
        yp = reshape(yp, (ctx.size,) + (1,) * (n - len(ys)) + ys)
    if xs[-1] == 1 and len(ys) > 1:
        # An outer product (a vjp w.r.t. a weight, per example): elementwise, so it fuses
        # and writes its result once, where a batched k=1 matmul is slow.
        out = evaluate(_mul(), [xp, yp], {})
    else:
        out = evaluate(prim, [xp, yp], params)
    if squeeze:
        shape = list(out.shape)
        for d in sorted({len(shape) + s for s in squeeze}, reverse=True):
            del shape[d]
        out = reshape(out, tuple(shape))
    return out


def _mul():
    from numgrad.ops.elementwise import mul
    return mul


def _random(ctx, prim, datas, params):
    mode = ctx.level.randomness
    if mode == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. "
                           "Please either use the 'same' or 'different' randomness flags on "
                           "vmap or perform the randomness operation out of vmap")
    if mode == "same":  # one draw, shared by every example
        return ("unbatched", evaluate(prim, [take(d.value, 0) if ctx.batched(d) else d
                                             for d in datas], params))
    return None  # "different": a draw per example (the loop)


RULES = {
    "expand": _expand,
    "permute": _permute,
    "reshape": _reshape,
    "cat": _joined,
    "stack": _joined,
    "getitem": _getitem,
    "index_add": _index_add,
    "matmul": _matmul,
    "argmax": _dim_param, "argmin": _dim_param, "max_dim": _dim_param,
    "min_dim": _dim_param, "prod": _dim_param, "cumsum": _dim_param, "argsort": _dim_param,
}
KIND_RULES = {"elementwise": _broadcasting, "compare": _broadcasting,
              "pointwise": _broadcasting, "reduction": _dim_param}


def rule_of(prim):
    """The batching rule of ``prim``, or None (the per-example loop)."""
    if prim.random:
        return _random
    if prim.leading_batch:  # the examples are one more leading dim, broadcast as the others
        return _broadcasting
    return RULES.get(prim.name) or KIND_RULES.get(prim.kind)


def loop(ctx, prim, datas, params):
    """The fallback: apply ``prim`` to each example and stack the results."""
    outs = [evaluate(prim, [take(d.value, b) if ctx.batched(d) else d for d in datas], params)
            for b in range(ctx.size)]
    return evaluate(stack_p, outs, {"dim": 0})


def take_range(v, lo, hi):
    """Examples ``lo:hi`` of a physical value."""
    return evaluate(getitem_p, [v], {"index": (slice(lo, hi),)})


# Indexing by integer tensors (gather, scatter_add, index_put_at): rules of their own file,
# func.batching_index, which builds on this one and enters them here (func.vmap imports it).

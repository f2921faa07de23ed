"""transpose: a transposed matrix product becomes the product of transposed operands.

The backward of ``x @ w.T`` asks for ``(x.T @ g).T``: computed as written, the
gradient of ``w`` is a transposed view of a fresh product, so the caller gets a
non-contiguous array, and everything it does with it next (an SGD update, a copy)
walks memory across the grain (a copy can cost a third of the sgemm that made it:
docs/design-notes.md, "Transposed products"). ``(A @ B).T == B.T @ A.T``, and BLAS
reads a transposed operand at no cost, so the product is built in the order its
result is wanted. The transposes this puts on the operands cancel against the ones
already there (``(x.T).T`` is ``x``).

Only 2-D products whose result nothing else reads are rewritten; both sides are
one sgemm, the same work.
"""
from __future__ import annotations

from numgrad.compiler.ir import Eqn
from numgrad.ops.layout import permute_p
from numgrad.ops.linalg import matmul_p


def _is_t(e):
    return (e is not None and e.prim is permute_p
            and tuple(e.params.get("dims", ())) == (1, 0))


def transpose(graph):
    readers = {}
    for e in graph.eqns:
        for v in e.inputs:
            readers[v] = readers.get(v, 0) + 1
    for v in graph.outputs:
        readers[v] = readers.get(v, 0) + 1
    made_by = {}
    rename = {}
    eqns = []

    def t_of(v, like):
        """``v.T``, reusing the value ``v`` was transposed from if there is one."""
        src = made_by.get(v)
        if _is_t(src):
            return src.inputs[0]
        out = graph.new_var((v.shape[1], v.shape[0]), v.dtype)
        eqn = Eqn(like.prim, [v], like.params, out, like.ann)
        eqns.append(eqn)
        made_by[out] = eqn
        return out

    for e in graph.eqns:
        e = Eqn(e.prim, [rename.get(v, v) for v in e.inputs], e.params, e.out, e.ann)
        if _is_t(e):
            src = made_by.get(e.inputs[0])
            if _is_t(src) and e.out not in graph.outputs:  # (x.T).T
                rename[e.out] = src.inputs[0]
                continue
            if (src is not None and src.prim is matmul_p
                    and readers.get(src.out) == 1
                    and all(v.ndim == 2 for v in src.inputs)):
                a, b = src.inputs
                e = Eqn(src.prim, [t_of(b, e), t_of(a, e)], src.params, e.out, e.ann)
        eqns.append(e)
        made_by[e.out] = e
    outputs = [rename.get(v, v) for v in graph.outputs]
    return graph.copy(eqns=eqns, outputs=outputs)

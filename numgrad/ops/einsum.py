"""ops.einsum: Einstein summation over existing primitives.

Room: ops. ``einsum`` parses the subscripts, then lowers to ops that already have
gradients and compiled forms: a repeated subscript within one operand takes the
diagonal (an advanced index), a subscript no one else needs is summed away, and
operands are contracted left to right, each pair either by broadcast multiplication
(nothing to contract, or only a dot product per batch entry) or by one batched
``matmul`` after a permute and reshape. The output is a final permute. So the gradient
at every order and the ``@ng.jit`` lowering come from those ops' rules.
"""
from __future__ import annotations

import builtins
import math
import string

import numpy as np

import numgrad.ops.elementwise as E
import numgrad.ops.layout as L
import numgrad.ops.reduction as R
from numgrad.ops.indexing import getitem
from numgrad.ops.linalg import SCALAR_NAMES as _SCALAR, matmul_p
from numgrad.tensor import Tensor

_LETTERS = set(string.ascii_letters)


def _error(msg):
    return RuntimeError(f"einsum(): {msg}")


def _parse_term(term, offset, k, ndim):
    """Letters of one operand's subscripts, with ``...`` as the marker ``Ellipsis``."""
    labels, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise _error(f"found '.' for operand {k} that is not part of any ellipsis")
            if Ellipsis in labels:
                raise _error(f"found '.' for operand {k} for which an ellipsis was already "
                             "found")
            labels.append(Ellipsis)
            i += 3
            continue
        if c not in _LETTERS:
            raise _error(f"invalid subscript given at index {offset + i} in the equation "
                         "string, subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    if ndim is None:
        return labels
    n = len(labels) - (Ellipsis in labels)
    if Ellipsis not in labels and n != ndim:
        raise _error(f"the number of subscripts in the equation ({n}) does not match the number "
                     f"of dimensions ({ndim}) for operand {k} and no ellipsis was given")
    if n > ndim:
        raise _error(f"the number of subscripts in the equation ({n}) is more than the number "
                     f"of dimensions ({ndim}) for operand {k}")
    return labels


def _expand_ellipsis(labels, ndim, n_ell):
    """Replace ``...`` by the ints naming its dims, right-aligned across operands."""
    if Ellipsis not in labels:
        return labels
    at = labels.index(Ellipsis)
    e = ndim - (len(labels) - 1) if ndim is not None else n_ell
    return labels[:at] + list(range(n_ell - e, n_ell)) + labels[at + 1:]


def _parse(equation, shapes):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise _error("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _error("more operands were provided than specified in the equation")
    offset, ins = 0, []
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        ins.append(_parse_term(term, offset, k, len(shape)))
        offset += len(term) + 1
    n_ell = builtins.max([len(s) - len(t) + 1 for t, s in zip(ins, shapes) if Ellipsis in t],
                         default=0)
    ins = [_expand_ellipsis(t, len(s), n_ell) for t, s in zip(ins, shapes)]
    if arrow:
        out = _parse_term(rhs, len(lhs) + 2, None, None)
        seen = set()
        for c in out:
            if c is not Ellipsis and not builtins.any(c in t for t in ins):
                raise _error(f"output subscript {c} does not appear in the equation for any "
                             "input operand")
            if c in seen:
                raise _error(f"output subscript {c} appears more than once in the output")
            seen.add(c)
        out = _expand_ellipsis(out, None, n_ell)
    else:
        counts = {}
        for t in ins:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = list(range(n_ell)) + sorted(c for c, n in counts.items()
                                          if n == 1 and isinstance(c, str))
    return ins, out


def _sizes(ins, shapes):
    """Each subscript's size, checked like PyTorch (size-1 dims broadcast across operands)."""
    size = {}
    for k, (labels, shape) in enumerate(zip(ins, shapes)):
        mine = {}
        for c, n in zip(labels, shape):
            if c in mine and mine[c] != n:
                raise _error(f"subscript {c} is repeated for operand {k} but the sizes don't "
                             f"match, {n} != {mine[c]}")
            mine[c] = n
        for d, (c, n) in enumerate(zip(labels, shape)):
            prev = size.get(c, 1)
            if n != 1 and prev != 1 and n != prev:
                if isinstance(c, int):  # PyTorch's text, its missing space included
                    raise _error(f"dimension {d} covered by ellipsis in operand {k}has size {n} "
                                 "which does not broadcast with previously seen ellipsis with "
                                 f"size {prev} for the respective dimension")
                raise _error(f"subscript {c} has size {n} for operand {k} which does not "
                             f"broadcast with previously seen size {prev}")
            size[c] = builtins.max(prev, n) if n != 1 else prev
    return size


def _diagonal(x, labels):
    """Take the diagonal of every subscript repeated within one operand."""
    while True:
        dup = next((c for c in labels if labels.count(c) > 1), None)
        if dup is None:
            return x, labels
        pos = [i for i, c in enumerate(labels) if c == dup]
        rest = [i for i in range(len(labels)) if i not in pos]
        x = L.permute(x, tuple(rest + pos))
        ar = np.arange(x.shape[-1])
        x = getitem(x, (slice(None),) * len(rest) + (ar,) * len(pos))
        labels = [labels[i] for i in rest] + [dup]


def _sum_labels(x, labels, drop):
    dims = tuple(i for i, c in enumerate(labels) if c in drop)
    if not dims:
        return x, labels
    return R.sum_p(x, dim=dims, keepdim=False), [c for c in labels if c not in drop]


def _arrange(x, labels, order, size=None):
    """``x`` permuted to ``order`` (labels it lacks become size-1 dims); with ``size``, its
    size-1 dims broadcast to each subscript's size."""
    have = [c for c in order if c in labels]
    if have != labels:
        x = L.permute(x, tuple(labels.index(c) for c in have))
    if len(have) != len(order):
        x = L.reshape(x, tuple(x.shape[have.index(c)] if c in labels else 1 for c in order))
    if size is not None and tuple(x.shape) != tuple(size[c] for c in order):
        x = L.expand(x, tuple(size[c] for c in order))
    return x


def _contract(a, la, b, lb, keep, size):
    batch = [c for c in la if c in lb and c in keep]
    inner = [c for c in la if c in lb and c not in keep]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    if not inner or (not a_only and not b_only):
        # Broadcast multiply (summing the dims of a dot product per batch entry): under
        # @ng.jit it fuses into one kernel; size-1 dims broadcast as PyTorch's einsum does.
        order = batch + a_only + b_only + inner
        prod = E.mul(_arrange(a, la, order), _arrange(b, lb, order))
        return _sum_labels(prod, order, set(inner))
    nb, nm, nn, nk = (math.prod(size[c] for c in g) for g in (batch, a_only, b_only, inner))
    a = L.reshape(_arrange(a, la, batch + a_only + inner, size), (nb, nm, nk))
    b = L.reshape(_arrange(b, lb, batch + inner + b_only, size), (nb, nk, nn))
    out = L.reshape(matmul_p(a, b), tuple(size[c] for c in batch + a_only + b_only))
    return out, batch + a_only + b_only


def _sublists(args):
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: PyTorch's sublist form as an equation."""
    def letters(sub):
        out = ""
        for s in sub:
            if s is Ellipsis:
                out += "..."
            elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
                out += string.ascii_uppercase[s] if s < 26 else string.ascii_lowercase[s - 26]
            else:
                raise _error(f"subscript in subscript list is not within the valid range "
                             f"[0, 52): {s}")
        return out
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):  # a trailing output sublist was given
        out = ops.pop()
    eq = ",".join(letters(s) for s in subs)
    return (eq if out is None else f"{eq}->{letters(out)}"), ops


def einsum(equation, *operands) -> Tensor:
    """Sum of products over the subscripts in ``equation`` (``torch.einsum``,
    ``numpy.einsum``): ``"ij,jk->ik"`` is a matmul, ``"ii->i"`` a diagonal, ``"bij->bji"``
    a transpose; without ``->`` the output holds the subscripts that appear once, in
    alphabetical order; ``...`` stands for broadcast dims. Operands may also come as one
    list, or in PyTorch's sublist form ``einsum(a, [0, 1], b, [1, 2])``.

    Differentiable at every order and traceable by ``@ng.jit`` (it lowers to permute,
    reshape, diagonal indexing, multiply, sum and matmul). Raises RuntimeError with
    PyTorch's messages for a malformed equation, mismatched sizes or mixed dtypes.

    >>> a, b = ng.ones(2, 3), ng.ones(3, 4)
    >>> ng.einsum("ij,jk->ik", a, b).shape
    torch.Size([2, 4])
    >>> ng.einsum("ii", ng.eye(3))
    tensor(3.)
    """
    if isinstance(equation, Tensor):
        equation, operands = _sublists((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not "
                        f"{type(equation).__name__}")
    if not operands:
        raise _error("must provide at least one operand")
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 1, but got "
                            f"{type(t).__name__}")
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"expected scalar type {_SCALAR[operands[0].dtype.name]} but "
                               f"found {_SCALAR[t.dtype.name]}")
    if operands[0].dtype.name == "bool":
        raise RuntimeError('"einsum" not implemented for \'Bool\'; convert the operands with '
                           ".long() or .float() first")
    shapes = [t.shape for t in operands]
    ins, out = _parse(equation, shapes)
    size = _sizes(ins, shapes)
    terms = []
    for k, (t, labels) in enumerate(zip(operands, ins)):
        t, labels = _diagonal(t, labels)
        others = set(out).union(*(ins[j] for j in range(len(ins)) if j != k))
        terms.append(_sum_labels(t, labels, set(labels) - others))
    x, lx = terms[0]
    for j in range(1, len(terms)):
        keep = set(out).union(*(lab for _, lab in terms[j + 1:]))
        x, lx = _contract(x, lx, *terms[j], keep, size)
    x, lx = _sum_labels(x, lx, set(lx) - set(out))
    return _arrange(x, lx, out, size)

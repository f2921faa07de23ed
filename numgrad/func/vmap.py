"""func.vmap: vectorising map as a trace transform (``torch.func.vmap``, ``jax.vmap``).

Room: func. ``vmap(f)`` runs ``f`` once, on tensors whose payloads are ``Batched`` values:
each stands for one example and holds the whole batch (batch dim first). The op
dispatcher hands every primitive applied to such a payload to its ``Level`` (the same seam
the ``@ng.jit`` tracer plugs into), which applies the primitive's batching rule
(``func.batching``) to the batch at once. So ``vmap`` composes with everything built from
primitives: ``grad`` inside it differentiates each example (its vjp rules are primitives
too), nested ``vmap`` levels stack, and under ``@ng.jit`` the physical values are traced
values, so ``ng.jit(vmap(grad(f)))`` traces into one plan.
"""
from __future__ import annotations

import functools
import math

from numgrad.autograd.forward_ad import detach_payload, lift_payload, next_depth
import numgrad.func.batching as batching
import numgrad.func.batching_index as _batching_index  # noqa: F401  (enters the index rules)
from numgrad.autograd.graph import Node, edge_of
from numgrad.grad_mode import is_grad_enabled
from numgrad.tensor import Tensor


class Batched:
    """The payload of a tensor inside ``vmap``: one example's ``shape`` and ``dtype``; the
    whole batch in ``value`` (batch dim first)."""

    __slots__ = ("value", "shape", "dtype", "_ng_interpreter")

    def __init__(self, value, level):
        self.value = value
        self.shape = tuple(value.shape[1:])
        self.dtype = value.dtype
        self._ng_interpreter = level

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def _ng_concrete(self, reason=None):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some "
                           "data-dependent control flow. We don't support that yet, please "
                           "shape your code with ops (ng.where) instead of Python `if` on a "
                           "tensor's value, or call .item() outside vmap.")

    def _ng_repr(self):
        return f"<batched {self.dtype.name}{list(self.shape)} of {self.value.shape[0]}>"


class Level:
    """The interpreter of one ``vmap`` call: its batch size and randomness mode."""

    def __init__(self, size, randomness):
        self.size = size
        self.randomness = randomness
        self.active = True
        self._ng_depth = next(next_depth)  # shared with forward mode's levels
        self.ctx = batching.Ctx(size, self)

    # Tensor.detach asks the payload's interpreter (a trace records a stop-gradient).
    def detach(self, d):
        return Batched(detach_payload(d.value), self)

    def detached(self, tensor, out):
        pass  # a batched value is never written in place through an alias

    def refuse_backward(self):
        raise RuntimeError("backward() called inside a functorch transform. This is not "
                           "supported, please use functorch.grad or functorch.vjp instead or "
                           "call backward() outside of functorch transforms.")

    def lift_payload(self, d):
        return Batched(lift_payload(d.value), self)

    def settle_grad(self, g):
        """``g`` summed over the examples once this vmap has returned (see engine._add)."""
        if self.active:
            return g
        g = to_physical(g, self, 0).sum(0)
        outer = getattr(getattr(g._data, "_ng_interpreter", None), "settle_grad", None)
        return g if outer is None else outer(g)

    def reduce_grad(self, g, t):
        """The gradient ``g`` (batched here) for ``t``: summed over the examples where ``t``
        is shared by all of them (made outside this vmap: a captured parameter) and the
        backward runs after the vmap returned."""
        if self.active:  # a gradient taken inside the vmap is per example (vmap(grad(f)))
            return g
        d = t._data
        while isinstance(d, Batched):
            if d._ng_interpreter is self:
                return g
            d = d.value
        g = to_physical(g, self, 0).sum(0)
        outer = getattr(getattr(g._data, "_ng_interpreter", None), "reduce_grad", None)
        return g if outer is None else outer(g, t)

    def process(self, prim, datas, params):
        # An operand batched by a level created inside this one (nested vmap) is handled
        # by that level first; this level then sees its physical values.
        inner = max((getattr(d, "_ng_interpreter", None) for d in datas
                     if isinstance(d, Batched)), key=lambda lv: lv._ng_depth)
        if inner is not self:
            return inner.process(prim, datas, params)
        rule = batching.rule_of(prim)
        out = rule(self.ctx, prim, datas, params) if rule is not None else None
        if isinstance(out, tuple):  # ("unbatched", value): the same for every example
            return out[1]
        if out is None:
            out = batching.loop(self.ctx, prim, datas, params)
        return Batched(out, self)


def _flatten(tree, dims, name):
    """The leaves of ``tree`` paired with their in_dims (a prefix of ``tree``)."""
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) \
            and len(dims) == len(tree):
        return [p for t, d in zip(tree, dims) for p in _flatten(t, d, name)]
    if isinstance(dims, dict) and isinstance(tree, dict) and dims.keys() == tree.keys():
        return [p for k in tree for p in _flatten(tree[k], dims[k], name)]
    if isinstance(dims, (tuple, list, dict)):
        raise ValueError(f"{name}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {_structure(dims)} but inputs has structure "
                         f"{_structure(tree)}.")
    if isinstance(tree, (tuple, list)):
        return [p for t in tree for p in _flatten(t, dims, name)]
    if isinstance(tree, dict):
        return [p for t in tree.values() for p in _flatten(t, dims, name)]
    return [(tree, dims)]


def _structure(tree):
    if isinstance(tree, (tuple, list)):
        return f"{type(tree).__name__}[{', '.join(_structure(t) for t in tree)}]"
    if isinstance(tree, dict):
        return "dict[" + ", ".join(f"{k}: {_structure(v)}" for k, v in tree.items()) + "]"
    return "*"


def _rebuild(tree, leaves):
    """``tree`` with its leaves replaced, in order, from the iterator ``leaves``."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(t, leaves) for t in tree)
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    return next(leaves)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Map ``func`` over a dimension of its inputs, all examples at once
    (``torch.func.vmap``). ``in_dims``: an int, None (not mapped) or a nested tuple/list/dict
    matching the positional arguments; ``out_dims`` likewise for the outputs. ``randomness``:
    ``"error"`` (default), ``"same"`` or ``"different"`` for random ops (dropout) inside.
    ``chunk_size`` maps that many examples per call (less memory).

    >>> x = ng.tensor([[1., 2.], [3., 4.]])
    >>> ng.func.vmap(lambda r: (r * r).sum())(x)
    tensor([ 5., 25.])

    Every primitive has a batching rule (``numgrad.func.batching``) or, for the few without
    one (indexing by a tensor: gathers and scatters; in-place writes), falls back to a loop
    over the examples and a stack: correct but slower. Random ops made by factories
    (``ng.randn`` inside ``func``) draw once and are shared by all examples.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    fname = getattr(func, "__name__", repr(func))

    @functools.wraps(func, updated=())
    def wrapped(*args, **kwargs):
        name = f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>)"
        if not isinstance(in_dims, (int, tuple, list, dict)) or isinstance(in_dims, bool):
            raise ValueError(f"{name}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: {type(in_dims)}.")
        dims = (in_dims,) * len(args) if isinstance(in_dims, int) else in_dims
        if isinstance(dims, list):
            dims = tuple(dims)
        if not isinstance(dims, tuple) or len(dims) != len(args):
            raise ValueError(f"{name}: in_dims is not compatible with the structure of "
                             f"`inputs`. in_dims has structure {_structure(dims)} but inputs "
                             f"has structure {_structure(args)}.")
        leaves = _flatten(args, dims, name)
        size = None
        sizes = []
        for x, d in leaves:
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"{name}: Got in_dim={d} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 "use None as the respective in_dim")
            n = x.ndim
            if not -n <= d < n:
                raise ValueError(f"{name}: Got in_dim={d} for some input, but that input is a "
                                 f"Tensor of dimensionality {n} so expected in_dim to satisfy "
                                 f"-{n} <= in_dim < {n}.")
            sizes.append(x._data.shape[d % n])
        if not sizes:
            raise ValueError(f"{name}: at least one input must be a Tensor with a non-None "
                             "in_dim")
        if len(set(sizes)) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        size = sizes[0]
        step = chunk_size or size
        if step >= size:
            return _run(func, args, kwargs, leaves, size, 0, size, out_dims, randomness, fname)
        parts = [_run(func, args, kwargs, leaves, size, lo, min(lo + step, size), out_dims,
                      randomness, fname) for lo in range(0, size, step)]
        return _concat(parts, out_dims)

    return wrapped


def _run(func, args, kwargs, leaves, size, lo, hi, out_dims, randomness, fname):
    """``func`` over examples ``lo:hi``, its outputs with the batch at ``out_dims``."""
    level = Level(hi - lo, randomness)
    mapped = []
    for x, d in leaves:
        if d is None or not isinstance(x, Tensor):
            mapped.append(x)
            continue
        d %= x.ndim
        if (lo, hi) != (0, size):
            x = x.narrow(d, lo, hi - lo)
        mapped.append(to_batched(x, level, d))
    try:
        out = func(*_rebuild(args, iter(mapped)), **kwargs)
        return _unwrap(out, out_dims, level, fname)
    finally:
        level.active = False


class _Boundary(Node):
    """Where a ``vmap`` meets the autograd graph: into the level (a tensor seen as a batch
    of examples) or out of it. Each one's backward is the other, so gradients (of any
    order) flow through ``vmap`` both ways, as through torch.func's."""

    __slots__ = ("level", "dim", "into")

    def __init__(self, t, level, dim, into):
        super().__init__((edge_of(t),))
        self.level, self.dim, self.into = level, dim, into

    def name(self):
        return "VmapInBackward" if self.into else "VmapOutBackward"

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return [None]
        return [to_physical(g, self.level, self.dim) if self.into else
                to_batched(g, self.level, self.dim)]


def to_batched(x, level, dim):
    """The tensor of ``level``'s examples that ``x`` holds along ``dim``."""
    payload = Batched(batching.moveaxis(x._data, dim, 0), level)
    if x.requires_grad and is_grad_enabled():
        return Tensor._make(payload, _Boundary(x, level, dim, True))
    return Tensor._make(payload)


def to_physical(t, level, dim):
    """The tensor holding ``t``'s examples along ``dim`` (expanded when ``t`` is the same
    for every example)."""
    d = t._data
    phys = d.value if isinstance(d, Batched) and d._ng_interpreter is level else \
        level.ctx.full(d)
    phys = batching.moveaxis(phys, 0, dim)
    if t.requires_grad and is_grad_enabled():
        return Tensor._make(phys, _Boundary(t, level, dim, False))
    return Tensor._make(phys)


def _unwrap(out, out_dims, level, fname):
    if isinstance(out, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(out)
        if len(dims) != len(out):
            raise ValueError(f"vmap({fname}, ...): out_dims is not compatible with the "
                             f"structure of `outputs`. out_dims has structure "
                             f"{_structure(out_dims)} but outputs has structure "
                             f"{_structure(out)}.")
        return type(out)(_unwrap(o, d, level, fname) for o, d in zip(out, dims))
    if isinstance(out, dict):
        return {k: _unwrap(v, out_dims[k] if isinstance(out_dims, dict) else out_dims, level,
                           fname) for k, v in out.items()}
    if out_dims is None:
        if isinstance(out, Tensor) and isinstance(out._data, Batched) \
                and out._data._ng_interpreter is level:
            raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a BatchedTensor "
                             "when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    n = out.ndim + 1
    if not -n <= out_dims < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {out_dims})")
    return to_physical(out, level, out_dims % n)


def _concat(parts, out_dims):
    from numgrad.ops.layout import cat
    first = parts[0]
    if isinstance(first, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
        return type(first)(_concat([p[i] for p in parts], dims[i]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _concat([p[k] for p in parts],
                           out_dims[k] if isinstance(out_dims, dict) else out_dims)
                for k in first}
    if out_dims is None:
        return first
    return cat(parts, dim=out_dims)

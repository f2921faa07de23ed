"""compiler.pytree: flatten nested tuples, lists and dicts of tensors into leaves and back.

Room: compiler. The tree structure (with non-tensor leaves kept as constants)
is part of a compiled function's cache key.
"""
from __future__ import annotations


class TreeDef:
    __slots__ = ("kind", "meta", "children", "_hash")

    def __init__(self, kind, meta, children):
        self.kind = kind          # "leaf", "tuple", "list", "dict", "tuple_subclass"
        self.meta = meta          # dict keys for dicts, the class for tuple subclasses
        self.children = children
        self._hash = hash((kind, meta, children))

    def __eq__(self, other):
        return isinstance(other, TreeDef) and (self.kind, self.meta, self.children) == (
            other.kind, other.meta, other.children)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"TreeDef({self.kind}, {self.children})"


LEAF = TreeDef("leaf", None, ())


def flatten(obj):
    leaves = []
    return _flatten(obj, leaves), leaves


def _flatten(obj, leaves):
    t = type(obj)
    if t is tuple or t is list:
        return TreeDef(t.__name__, None, tuple(_flatten(x, leaves) for x in obj))
    if isinstance(obj, tuple):  # namedtuples and (values, indices) from max(dim)
        return TreeDef("tuple_subclass", t, tuple(_flatten(x, leaves) for x in obj))
    if t is dict:
        keys = tuple(obj)
        return TreeDef("dict", keys, tuple(_flatten(obj[k], leaves) for k in keys))
    leaves.append(obj)
    return LEAF


def num_leaves(tree):
    """How many leaves ``tree`` has."""
    if tree.kind == "leaf":
        return 1
    return sum(num_leaves(c) for c in tree.children)


def unflatten(tree, leaves):
    it = iter(leaves)
    return _build(tree, it)


def _build(tree, it):
    if tree.kind == "leaf":
        return next(it)
    kids = [_build(c, it) for c in tree.children]
    if tree.kind == "tuple":
        return tuple(kids)
    if tree.kind == "list":
        return kids
    if tree.kind == "tuple_subclass":
        t = tree.meta
        return t(*kids) if hasattr(t, "_fields") else t(kids)
    return dict(zip(tree.meta, kids))



def leaf_names(fn, args, kwargs):
    """A readable name per leaf of ``flatten((args, kwargs))``, from ``fn``'s parameter
    names (``x``, ``params_0``, ``batch_images``), or None where there is none: the IR
    shows the user's names for inputs instead of letters."""
    import inspect
    import keyword
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    names = []

    def walk(obj, name):
        t = type(obj)
        if isinstance(obj, (tuple, list)):
            for i, x in enumerate(obj):
                walk(x, None if name is None else f"{name}_{i}")
        elif t is dict:
            for k, x in obj.items():
                walk(x, None if name is None else f"{name}_{k}")
        else:
            names.append(name)

    for i, a in enumerate(args):
        if i < len(positional):
            walk(a, positional[i])
        else:
            walk(a, f"{star}_{i - len(positional)}" if star else None)
    for k, a in kwargs.items():
        walk(a, k)
    seen, out = set(), []
    for n in names:
        # ASCII identifiers only: the names also appear in the generated kernel source.
        ok = (n is not None and n.isascii() and n.isidentifier() and not keyword.iskeyword(n)
              and n not in seen and len(n) <= 32)
        seen.add(n)
        out.append(n if ok else None)
    return out

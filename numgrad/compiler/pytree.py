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


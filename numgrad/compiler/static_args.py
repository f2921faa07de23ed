"""compiler.static_args: which arguments of a jitted call are always constants.

Room: compiler. ``ng.jit(static_argnums=..., static_argnames=...)`` names arguments whose
values are part of a plan's key, never traced (``jit_function.CompiledFunction``); this
module turns the two spellings into leaf positions of a call's flattened arguments. Imports
``compiler.pytree`` and ``tensor`` only.
"""
from __future__ import annotations

import inspect

import numgrad.compiler.pytree as pytree
from numgrad.tensor import Tensor


class StaticArgs:
    """Which leaves of a call are static (``static_argnums`` / ``static_argnames``, with
    JAX's rule: given one of them, the signature supplies the other for the same
    parameters; given both, only those listed).

    >>> StaticArgs(lambda x, n: x * n, 1, None).names
    ('n',)
    """

    def __init__(self, fn, argnums, argnames):
        self.nums = _ints("static_argnums", argnums)
        self.names = _strs("static_argnames", argnames)
        self._cache = {}
        self.positional = []
        if not self:
            return
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        ps = list(sig.parameters.values())
        positional = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY,
                                                         p.POSITIONAL_OR_KEYWORD)]
        params = [p.name for p in ps]
        if self.names and not any(p.kind == p.VAR_KEYWORD for p in ps):
            missing = [n for n in self.names if n not in params]
            if missing:
                what = "is not a parameter" if len(missing) == 1 else "are not parameters"
                raise ValueError(f"static_argnames names {', '.join(map(repr, missing))}, "
                                 f"which {what} of {getattr(fn, '__qualname__', fn)!r} (its "
                                 f"parameters: {', '.join(params) or 'none'})")
        if not any(p.kind == p.VAR_POSITIONAL for p in ps):  # -1: the last parameter
            self.nums = tuple(i + len(positional) if i < 0 else i for i in self.nums)
        if bool(self.nums) != bool(self.names):  # the signature completes the other
            self.names += tuple(positional[i] for i in self.nums
                                if -len(positional) <= i < len(positional))
            self.nums += tuple(positional.index(n) for n in self.names if n in positional)
        self.positional = positional

    def __bool__(self):
        return bool(self.nums or self.names)

    def leaves(self, tree, leaves):
        """Leaf positions of the static arguments of a call of ``tree``; TypeError where a
        tensor was passed as one."""
        if not self:
            return frozenset()
        got = self._cache.get(tree)
        if got is None:
            args, kwargs = tree.children
            pos, spans = 0, []
            for c in args.children:
                n = pytree.num_leaves(c)
                spans.append((pos, pos + n))
                pos += n
            nums = {i + len(spans) if i < 0 else i for i in self.nums}  # (with *args)
            names = set(self.names)
            positional = self.positional
            chosen = {}
            for i, span in enumerate(spans):
                if i in nums or (i < len(positional) and positional[i] in names):
                    chosen[positional[i] if i < len(positional) else f"argument {i}"] = span
            for k, c in zip(kwargs.meta, kwargs.children):
                n = pytree.num_leaves(c)
                if k in names:
                    chosen[k] = (pos, pos + n)
                pos += n
            got = self._cache[tree] = chosen
        out = set()
        for name, (a, b) in got.items():
            for i in range(a, b):
                if isinstance(leaves[i], Tensor):
                    raise TypeError(
                        f"{name!r} is a static argument (static_argnums/static_argnames), "
                        "so it is a constant of the compiled plan, but it got a Tensor: pass "
                        "a Python value there, or leave the argument out of the static ones")
                out.add(i)
        return frozenset(out)


def _ints(what, v):
    return _tuple_of(what, v, lambda i: isinstance(i, int) and not isinstance(i, bool),
                     "an int or a sequence of ints")


def _strs(what, v):
    return _tuple_of(what, v, lambda n: isinstance(n, str), "a str or a sequence of str")


def _tuple_of(what, v, ok, expected):
    """``v`` (None, one item or a sequence of items that pass ``ok``) as a tuple."""
    if v is None:
        return ()
    try:
        out = (v,) if ok(v) else tuple(v)
    except TypeError:
        out = None
    if out is None or not all(ok(x) for x in out):
        raise TypeError(f"{what} must be {expected}, got {v!r}")
    return out


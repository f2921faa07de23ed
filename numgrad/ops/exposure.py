"""ops.exposure: a registry row's public spellings, generated from its ``api``.

Room: ops. For each row with ``api=Api(...)`` (``ops.registry``) this writes the function
``ops.api.<name>`` (a real ``def`` with the row's docstring, PyTorch's parameter names and
type hints, so ``help()``, ``inspect.signature`` and doctests see an ordinary function),
its aliases, the ``Tensor`` method and the in-place ``Tensor.<name>_``. The rows present
at import are generated once, at import (``ops.api``, ``ops.methods``); a row registered
later (``ops.register``) is exposed at once everywhere: ``ops.api``, ``numgrad.ops``,
``numgrad`` (with ``out=``, as ``ops.keywords`` gives the others) and ``Tensor``; and
``unregister`` takes all of that back. A function calls its primitive directly: the same
single Python call the hand-written wrappers made.
"""
from __future__ import annotations

import importlib
import inspect
import pathlib
import sys
import textwrap

import numpy as np

import numgrad.ops.registry as registry
from numgrad.ops.inplace import apply_inplace
from numgrad.ops.numpy_interop import as_constant
from numgrad.tensor import Tensor

API_MODULE = "numgrad.ops.api"
_DEFAULT_ARGS = {1: ("input",), 2: ("input", "other")}


def public_args(prim) -> tuple:
    """The parameter names of ``prim``'s public function."""
    api = prim.api
    if api.args is not None:
        return tuple(api.args)
    if prim.variadic or len(prim.inputs) not in _DEFAULT_ARGS:
        raise TypeError(f"primitive {prim.name!r}: give its public parameter names "
                        "(Api(args=...))")
    return _DEFAULT_ARGS[len(prim.inputs)]


def wrapper(prim):
    """The hand-written public function a row names (``Api(wrapper="module:function")``)."""
    module, _, attr = prim.api.wrapper.partition(":")
    fn = getattr(importlib.import_module(module), attr, None)
    if not callable(fn):
        raise TypeError(f"primitive {prim.name!r}: its wrapper {prim.api.wrapper!r} is not a "
                        "function")
    return fn


def function(prim, name=None):
    """The public function of ``prim`` (named ``name``, default its canonical name)."""
    if prim.api.wrapper is not None:
        return wrapper(prim)
    name = name or prim.api.names[0]
    args = public_args(prim)
    hint = "Tensor" if len(args) == 1 else "Operand"
    # A real def (not a closure over *args): inspect, help() and IDEs read its signature.
    src = ("from __future__ import annotations\n"
           f"def {name}({', '.join(f'{a}: {hint}' for a in args)}) -> Tensor:\n"
           f"    return _prim({', '.join(args)})\n")
    ns = {"_prim": prim, "__name__": API_MODULE}
    exec(compile(src, f"<{API_MODULE}: {prim.name}>", "exec"), ns)  # noqa: S102 (our text)
    fn = ns[name]
    fn.__doc__ = prim.api.doc
    fn.__qualname__ = name
    fn.__module__ = API_MODULE
    return fn


def inplace_method(prim, name, fn=None):
    """``Tensor.<name>``: ``prim`` (or its public function ``fn``, a wrapper) written into
    the tensor (NumPy operands are constants)."""
    if prim.api.wrapper is not None:
        def method(self, *args, **kwargs):
            args = [as_constant(a) if isinstance(a, np.ndarray) else a for a in args]
            return apply_inplace(self, fn, *args, **kwargs)
        sig = inspect.signature(fn)
        first, *rest = sig.parameters.values()
        method.__signature__ = sig.replace(parameters=[first.replace(name="self"), *rest])
    elif len(prim.inputs) == 1:
        def method(self):
            return apply_inplace(self, prim)
    else:
        def method(self, other):
            if isinstance(other, np.ndarray):
                other = as_constant(other)
            return apply_inplace(self, prim, other)
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__module__ = API_MODULE
    method.__doc__ = (f"In-place ``{name[:-1]}`` (``torch.Tensor.{name}``): writes the "
                      "result into this tensor and bumps its version. Raises RuntimeError on "
                      "a leaf that requires grad (under grad mode), or when the result cannot "
                      "be cast back to this tensor's dtype.")
    return method


def functions(prims) -> dict:
    """``{public name: function}`` of the rows ``prims`` (aliases share the function)."""
    out = {}
    for prim in prims:
        if prim.api is None:
            continue
        fn = function(prim)
        out.update({n: fn for n in prim.api.names})
    return out


def methods(prims, funcs) -> dict:
    """``{Tensor attribute: function}`` of the rows ``prims``: the method (the public
    function itself, tensor first) and the in-place variant."""
    out = {}
    for prim in prims:
        api = prim.api
        if api is None:
            continue
        for name in api.names:
            if api.method:
                out[name] = funcs[name]
            if api.inplace:
                out[name + "_"] = inplace_method(prim, name + "_", funcs[name])
    return out


# ------------------------------------------------------- rows registered after import
_EXPOSED = {}  # row name -> [(namespace, attribute, object we set)]


def _set(record, target, name, value):
    if isinstance(target, dict):
        target[name] = value
    else:
        setattr(target, name, value)
    record.append((target, name, value))


def _listen(prim, added):
    if not added:
        for target, name, value in _EXPOSED.pop(prim.name, ()):
            if isinstance(target, dict):
                if target.get(name) is value:
                    del target[name]
            elif target.__dict__.get(name) is value:
                delattr(target, name)
        return
    if prim.api is None:
        return
    import numgrad.ops.keywords as keywords  # (keywords imports nothing of this module)
    api_mod, ops_mod = sys.modules[API_MODULE], sys.modules["numgrad.ops"]
    top = sys.modules.get("numgrad")
    funcs = functions([prim])
    meths = methods([prim], funcs)
    taken = [n for n in funcs if n in vars(api_mod)] + [
        f"Tensor.{n}" for n in meths if n in vars(Tensor)]
    if taken:
        raise ValueError(f"primitive {prim.name!r}: public names taken already: {taken}")
    record = _EXPOSED.setdefault(prim.name, [])
    for name, fn in funcs.items():
        _set(record, api_mod.__dict__, name, fn)
        _set(record, ops_mod.__dict__, name, fn)
        if top is not None:
            _set(record, top.__dict__, name,
                 keywords.with_out(fn, name) if prim.api.out else fn)
    for name, fn in meths.items():
        _set(record, Tensor, name, fn)


def follow_registry():
    """Expose every row registered from now on (called once ``ops.methods`` has bound the
    rows of the import)."""
    registry._LISTENERS.append(_listen)


# ------------------------------------------------------------------ the stub for IDEs
def _annotation(a):
    return a if isinstance(a, str) else getattr(a, "__name__", repr(a))


def _stub_signature(fn) -> str:
    sig = inspect.signature(fn)
    parts, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD
                else "") + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        parts.append(text)
    ret = sig.return_annotation
    return f"({', '.join(parts)})" + ("" if ret is sig.empty else f" -> {_annotation(ret)}")


STUB = pathlib.Path(__file__).with_name("api.pyi")


def stub_text(funcs) -> str:
    """``ops/api.pyi``: the generated functions ``funcs`` (``{name: function}``) as a stub,
    so that IDEs and type checkers, which do not run the registry, see every name with its
    signature and docstring (``write_stub`` writes it; tests/ops check it is current)."""
    names = textwrap.fill(", ".join(repr(n) for n in sorted(funcs)), 95,
                          initial_indent="    ", subsequent_indent="    ")
    out = ['"""The public functions of the registry\'s rows (``ops.api``), for IDEs and type '
           'checkers.', "",
           "Written by ``ops.exposure.write_stub()`` from the registry: do not edit.", '"""',
           "from typing import Union", "", "from numgrad.tensor import Tensor", "",
           "Number = Union[int, float, bool]", "Operand = Union[Tensor, int, float, bool]",
           "__all__ = [", names + ",", "]"]
    for name in sorted(funcs):
        fn = funcs[name]
        doc = (inspect.getdoc(fn) or "").replace("\\", "\\\\")
        doc = "\n".join(("    " + line).rstrip() for line in doc.splitlines()).lstrip()
        out += ["", "", f"def {name}{_stub_signature(fn)}:", f'    """{doc}"""', "    ..."]
    return "\n".join(out) + "\n"


def write_stub(functions):
    """Write ``ops/api.pyi`` for ``functions``, the library's (``ops.api``, which builds on
    this module, holds them): ``python -c "from numgrad.ops import api, exposure;
    exposure.write_stub(api.FUNCTIONS)"``."""
    STUB.write_text(stub_text(functions))

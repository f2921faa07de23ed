"""The runnable examples in public docstrings stay true."""
from __future__ import annotations

import doctest
import importlib

import pytest

import numgrad as ng

MODULES = ["numgrad", "numgrad.tensor", "numgrad.creation", "numgrad.autograd.engine",
           "numgrad.compiler", "numgrad.compiler.transforms", "numgrad.viz",
           "numgrad.autograd.function", "numgrad.autograd.gradcheck", "numgrad.autograd.graph",
           "numgrad.utils.checkpoint", "numgrad.ops.registry", "numgrad.ops.losses",
           "numgrad.ops.threshold", "numgrad.ops.linear"]
MODULES += ["numgrad.linalg", "numgrad.linalg.norms", "numgrad.linalg.products",
            "numgrad.linalg.derived", "numgrad.ops.matrices", "numgrad.ops.linalg_ex",
            "numgrad.ops.diagonals"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ng": ng},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# ------------------------------------------------------------- every public name documented
import inspect  # noqa: E402

NAMESPACES = {"ng": ng, "ng.nn.functional": ng.nn.functional, "ng.autograd": ng.autograd}
NAMESPACES["ng.linalg"] = ng.linalg


def _public(ns):
    if ns is ng:
        names = [n for n in dir(ng) if not n.startswith("_")] + ["jit", "grad", "value_and_grad"]
    else:
        names = [n for n in vars(ns) if not n.startswith("_")]
    for n in sorted(set(names)):
        obj = getattr(ns, n)
        if inspect.ismodule(obj) or isinstance(obj, ng.dtype) or not callable(obj):
            continue
        if ns is not ng and getattr(obj, "__module__", "").split(".")[0] != "numgrad":
            continue  # typing helpers and the like imported into a module
        yield n, obj


def _tensor_members():
    for n, obj in vars(ng.Tensor).items():
        if n.startswith("_") and n not in ("__init__", "__getitem__", "__setitem__",
                                           "__array_ufunc__"):
            continue
        f = obj.fget if isinstance(obj, property) else obj
        if isinstance(f, (staticmethod, classmethod)):
            f = f.__func__
        if callable(f):
            yield n, f


def _problems(name, f):
    out = []
    if getattr(f, "__name__", "") == "<lambda>" or getattr(
            getattr(f, "__code__", None), "co_name", "") == "<lambda>":
        out.append(f"{name} is a lambda")
    if not (inspect.isfunction(f) or inspect.isclass(f)):
        out.append(f"{name} is a {type(f).__name__}, not a function")
    doc = inspect.getdoc(f) or ""
    if not doc.strip() or (not inspect.isclass(f) and doc == inspect.getdoc(type(f))):
        out.append(f"{name} has no docstring")
    return out


def test_every_public_function_is_a_documented_function():
    bad = [p for ns_name, ns in NAMESPACES.items() for n, f in _public(ns)
           for p in _problems(f"{ns_name}.{n}", f)]
    assert not bad, "\n".join(bad)


def test_every_tensor_method_is_a_documented_function():
    bad = [p for n, f in _tensor_members() for p in _problems(f"Tensor.{n}", f)]
    assert not bad, "\n".join(bad)


def test_public_functions_have_type_hints():
    bad = []
    for ns_name, ns in NAMESPACES.items():
        for n, f in _public(ns):
            if inspect.isfunction(f) and "return" not in getattr(f, "__annotations__", {}):
                bad.append(f"{ns_name}.{n}")
    assert not bad, "no return annotation: " + ", ".join(bad)


def test_help_jit_explains_every_option_and_the_inspection_methods():
    doc = inspect.getdoc(ng.jit)
    params = [p for p in inspect.signature(ng.jit).parameters if p != "fn"]
    missing = [p for p in params + [".trace", ".source", ".stats"] if p not in doc]
    assert not missing, missing
    for name in ("trace", "source"):
        assert inspect.getdoc(getattr(ng.CompiledFunction, name))
    assert "traces" in inspect.getdoc(type(ng.jit(lambda x: x).stats))


def test_package_ships_py_typed():
    import os
    assert os.path.exists(os.path.join(os.path.dirname(ng.__file__), "py.typed"))

"""The compiler reads every per-op fact from the registry: no module
under numgrad/compiler/ spells a registered primitive's name as a string.

Annotation keys are exempt where they are used as keys (``e.ann.get("hook")``,
``{"detach": True}``): the tracer names its annotations after the primitive, and the IR
listing shows them in braces; they are not decisions about the op."""
from __future__ import annotations

import ast
import pathlib
import sys

import numgrad  # registers every primitive
from numgrad.ops.registry import REGISTRY

ROOT = pathlib.Path(numgrad.__file__).parent / "compiler"
# The modules that define the scalar helpers the registry's lowerings call (``exp``,
# ``maximum``...): a helper is named like the op it implements on purpose, and these
# modules list their helpers by name; they make no decision about an op.
HELPER_MODULES = {"backends/cpu/scalar.py", "backends/cpu/scalar_vec.py",
                  "backends/cpu/llvm/vmath.py", "backends/cpu/llvm/vmath_numba.py"}


def _string_uses(tree):
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node, parents.get(node)


def _exempt(node, parent):
    if isinstance(parent, ast.Expr):  # a docstring
        return True
    # An LLVM opcode: builder.atomic_rmw("add", ptr, value, ordering).
    if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr == "atomic_rmw" and parent.args and parent.args[0] is node):
        return True
    # An attribute name: getattr(_tls, "stack", None).
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
            and parent.func.id in ("getattr", "setattr", "hasattr") and len(parent.args) > 1
            and parent.args[1] is node)


def offenders():
    names = set(REGISTRY)
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).as_posix() in HELPER_MODULES:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node, parent in _string_uses(tree):
            if _exempt(node, parent):
                continue
            if node.value in names:
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {node.value!r}")
            elif isinstance(node.value, str):
                # Spelled inside a template or a pattern: "pow_scalar(", ("exp(", ...).
                head = node.value.split("(")[0]
                if node.value.endswith("(") and head in names:
                    found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: "
                                 f"{node.value!r}")
    return found


def test_no_registered_op_name_is_spelled_in_the_compiler():
    bad = offenders()
    assert not bad, ("op names spelled in numgrad/compiler/ (read the fact from the "
                     "registry instead):\n" + "\n".join(bad))


def test_the_check_can_fail(tmp_path, monkeypatch):
    # The scan sees a name in code: a module comparing against "matmul" is caught.
    fake = tmp_path / "compiler"
    fake.mkdir()
    (fake / "bad.py").write_text('def f(e):\n    return e.prim.name == "matmul"\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake)
    assert offenders() == ["compiler/bad.py:2: 'matmul'"]

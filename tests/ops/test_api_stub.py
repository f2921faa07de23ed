"""ops/api.pyi, the stub IDEs and type checkers read for the functions ops.api generates
from the registry, says what the registry says: every public name, signature and docstring."""
from __future__ import annotations

import ast
import inspect

import numgrad as ng
from numgrad.ops import api, exposure


def test_the_stub_is_current():
    want = exposure.stub_text(api.FUNCTIONS)
    assert exposure.STUB.read_text() == want, (
        "numgrad/ops/api.pyi is stale: python -c \"from numgrad.ops import api, exposure; "
        "exposure.write_stub(api.FUNCTIONS)\"")


def test_the_stub_names_every_generated_function_with_its_signature():
    tree = ast.parse(exposure.STUB.read_text())
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert set(defs) == set(api.__all__) and "exp" in defs and "hypot" in defs
    for name, node in defs.items():
        params = [a.arg for a in node.args.args + node.args.kwonlyargs]
        assert params == list(inspect.signature(getattr(api, name)).parameters), name
        assert ast.get_docstring(node) == inspect.getdoc(getattr(ng.ops, name)), name

"""numgrad.linalg's docstring examples run true, and every public name is documented."""
from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import numgrad as ng

MODULES = ["numgrad.linalg", "numgrad.linalg.norms", "numgrad.linalg.products",
           "numgrad.ops.matrices", "numgrad.ops.diagonals"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ng": ng},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_every_public_name_documented():
    import numgrad.linalg as LA
    assert issubclass(LA.LinAlgError, RuntimeError) and LA.LinAlgError.__doc__
    for name in LA.__all__:
        f = getattr(LA, name)
        assert inspect.getdoc(f), name
        if inspect.isfunction(f):
            assert "return" in f.__annotations__, name
            assert ">>>" in f.__doc__, name

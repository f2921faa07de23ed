"""The runnable examples in public docstrings stay true."""
from __future__ import annotations

import doctest
import importlib

import pytest

import numgrad as ng

MODULES = ["numgrad", "numgrad.tensor", "numgrad.creation", "numgrad.autograd.engine",
           "numgrad.compiler", "numgrad.compiler.transforms", "numgrad.viz"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ng": ng},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0

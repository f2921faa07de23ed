"""The runnable examples in the docstrings of ng.func and ng.autograd.functional/forward_ad."""
from __future__ import annotations

import doctest
import importlib

import pytest

import numgrad as ng

MODULES = ["numgrad.func.transforms", "numgrad.func.vmap", "numgrad.func.module_state",
           "numgrad.autograd.functional", "numgrad.autograd.forward_ad"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs={"ng": ng},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0

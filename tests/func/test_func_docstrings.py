"""The runnable examples in the docstrings of ng.func and ng.autograd.functional/forward_ad
(the check of tests/test_docstrings.py, on these modules)."""
from __future__ import annotations

import pytest

import test_docstrings as base

MODULES = ["numgrad.func.transforms", "numgrad.func.vmap", "numgrad.func.module_state",
           "numgrad.autograd.functional", "numgrad.autograd.forward_ad"]


@pytest.mark.parametrize("name", MODULES)
def test_func_docstring_examples(name):
    base.test_docstring_examples(name)

"""The examples in the docstrings of the modules real PyTorch programs called for stay true."""
import doctest
import importlib

import pytest

import numgrad as ng

MODULES = ["numgrad.ops.movedim", "numgrad.ops.dist", "numgrad.ops.bernoulli",
           "numgrad.utils.benchmark", "numgrad.nn.utils.parametrize", "numgrad.nn.data_parallel",
           "numgrad.autograd.saved_attrs", "numgrad.optim.impl_flags", "numgrad.backends",
           "numgrad.backends.mps", "numgrad.backends.cudnn", "numgrad.xpu", "numgrad.meta"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name),
                             extraglobs={"ng": ng, "nn": ng.nn}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0

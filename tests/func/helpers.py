"""Shared by the tests of ng.func and ng.autograd.functional: nested results vs torch's."""
from __future__ import annotations

import numpy as np

import numgrad as ng
from conftest import to_numpy


def assert_same_tree(actual, expected, rtol=1e-6, atol=1e-8, path="out"):
    """``actual`` (numgrad) has ``expected``'s (torch) nesting (tuple vs tensor, dict keys)
    and values."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), (
            f"{path}: {type(actual).__name__} vs {type(expected).__name__}[{len(expected)}]")
        assert isinstance(actual, tuple) == isinstance(expected, tuple), path
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_tree(a, e, rtol, atol, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected), path
        for k in expected:
            assert_same_tree(actual[k], expected[k], rtol, atol, f"{path}[{k!r}]")
    else:
        assert isinstance(actual, ng.Tensor), f"{path}: {type(actual).__name__}, not a Tensor"
        e = to_numpy(expected)
        assert tuple(actual.shape) == e.shape, f"{path}: {tuple(actual.shape)} != {e.shape}"
        np.testing.assert_allclose(to_numpy(actual), e, rtol=rtol, atol=atol, err_msg=path)


def both(arrays):
    """The same float64 arrays as numgrad and as torch tensors."""
    import torch
    return tuple(ng.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)


def assert_same_error(call_ng, call_torch):
    """Both calls raise the same exception class with the same text (``torch.`` aside)."""
    import pytest
    out = []
    for call in (call_ng, call_torch):
        with pytest.raises(Exception) as info:
            call()
        out.append((type(info.value), str(info.value).replace("torch.", "")))
    assert out[0] == out[1]

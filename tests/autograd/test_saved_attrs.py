"""grad_fn._saved_<name> read by PyTorch's names, with saved_tensors_hooks and after backward."""
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


def _pair(lib):
    a = lib.randn(5, requires_grad=True)
    b = lib.ones(5, requires_grad=True)
    return a, b


@pytest.mark.parametrize("lib", [ng, torch], ids=["numgrad", "torch"])
def test_saved_inputs_are_the_inputs_and_a_saved_result_a_new_tensor(lib):
    a, b = _pair(lib)
    y = a * b
    assert y.grad_fn._saved_self is a and y.grad_fn._saved_other is b
    e = lib.exp(a)
    assert e.grad_fn._saved_result.equal(e) and e.grad_fn._saved_result is not e
    assert a.pow(2).grad_fn._saved_exponent == 2
    c = a.clamp(0, 1).grad_fn
    assert (c._saved_min, c._saved_max) == (0, 1)


@pytest.mark.parametrize("lib", [ng, torch], ids=["numgrad", "torch"])
def test_unsaved_name_is_an_attribute_error_and_freed_is_a_runtime_error(lib):
    a, b = _pair(lib)
    with pytest.raises(AttributeError, match="_saved_nothing"):
        (a * b).grad_fn._saved_nothing
    y = a * b
    y.sum().backward()
    with pytest.raises(RuntimeError, match="a second time"):
        y.grad_fn._saved_self


@pytest.mark.parametrize("lib", [ng, torch], ids=["numgrad", "torch"])
def test_reading_a_saved_tensor_calls_the_unpack_hook_each_time(lib):
    calls = []

    def unpack(x):
        calls.append(1)
        return x
    x = lib.ones(3, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        y = x.pow(2)
    y.grad_fn._saved_self
    y.grad_fn._saved_self
    assert len(calls) == 2

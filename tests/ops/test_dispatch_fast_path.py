"""The eager fast path (ops.dispatch._FAST) against the general path it shortcuts: the same
values, dtypes, nodes, gradients, saved-tensor checks, hooks and errors, and the general path
wherever the fast one must not apply."""
import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.ops import dispatch
from numgrad.ops.registry import defop, unregister


@pytest.fixture
def general_only(monkeypatch):
    """Every call through the general path: the reference the fast path must match."""
    monkeypatch.setattr(dispatch, "_FAST", {})
    monkeypatch.setattr(dispatch, "_fast_entry", lambda prim: dispatch._never)


def _run(op):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    x, y = ng.tensor(a, requires_grad=True), ng.tensor(b, requires_grad=True)
    out = op(x, y)
    out.sum().backward()
    return (out.detach().numpy(), out.dtype, out.grad_fn.name(),
            x.grad.numpy(), None if y.grad is None else y.grad.numpy())


CASES = {
    "add": lambda x, y: x + y,
    "mul-by-number": lambda x, y: 2.5 * x * y,
    "div-by-int": lambda x, y: (x / 3) - y,
    "unary-chain": lambda x, y: (x.sin() * y).exp().relu(),
    "compare-where": lambda x, y: ng.where(x > y, x, y * 2),
    "reduction": lambda x, y: (x * y).sum(1),
    "addmm": lambda x, y: ng.nn.functional.linear(x, y.reshape(1, 4), y[:1]),
    "pow": lambda x, y: x ** 2 + y.abs() ** 0.5,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_gives_the_general_paths_bits(name, request):
    fast = _run(CASES[name])
    request.getfixturevalue("general_only")
    reference = _run(CASES[name])
    for got, want in zip(fast, reference):
        if isinstance(got, np.ndarray):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        else:
            assert got == want


def test_fast_path_matches_torch_on_a_small_graph():
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ((x * 3.0).sin() + x).relu().sum().backward()
    ((tx * 3.0).sin() + tx).relu().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_a_saved_input_changed_in_place_is_still_caught():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    out = h.sin()  # saves h
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_hooks_and_retain_grad_see_fast_path_nodes():
    x = ng.tensor([1.0, -2.0], requires_grad=True)
    seen = []
    h = x * 2.0
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    h.retain_grad()
    (h.exp() * 3.0).sum().backward()
    np.testing.assert_allclose(seen[0], 3 * np.exp([2.0, -4.0]), rtol=1e-6)
    np.testing.assert_allclose(h.grad.numpy(), seen[0])


def test_promotion_and_errors_take_the_general_path():
    i = ng.tensor([1, 2, 3])
    f = ng.tensor([0.5, 0.5, 0.5], dtype=ng.float64)
    assert (i * f).dtype == ng.float64      # mixed dtypes: promoted as PyTorch does
    assert i.sin().dtype == ng.float32      # a floating op on integers
    assert (i * 2.5).dtype == ng.float32    # an integer tensor and a Python float
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ng.tensor([True]).relu()            # the row's check runs on the fast path too
    with pytest.raises(RuntimeError, match="must match the size"):
        ng.ones(3) + ng.ones(4)             # PyTorch's broadcast message, not NumPy's
    with pytest.raises(TypeError, match="unsupported operand"):
        ng.ones(2) + "a"                    # as torch's operator says


def test_no_grad_and_anomaly_mode():
    x = ng.tensor([1.0, 2.0], requires_grad=True)
    with ng.no_grad():
        assert (x * 2.0).grad_fn is None
    with ng.autograd.detect_anomaly():
        out = (x * 0.0).log()
        with pytest.raises(RuntimeError, match="returned nan values"):
            (out * 0.0).sum().backward()


def test_new_rules_are_picked_up():
    prim = defop("_fast_path_probe", inputs=("x",), impl=lambda x: x * 2, kind="elementwise",
                 lowering="({0} * 2)", jit=False)
    try:
        prim.defvjp(lambda g: g * 2)
        x = ng.tensor([1.0], requires_grad=True)
        prim(x).sum().backward()
        assert x.grad.item() == 2.0
        prim.defvjp(lambda g: g * 5)  # the row's rule changed: the settled path follows
        x.grad = None
        prim(x).sum().backward()
        assert x.grad.item() == 5.0
    finally:
        unregister("_fast_path_probe")

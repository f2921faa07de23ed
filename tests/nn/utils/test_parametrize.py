"""nn.utils.parametrize against torch's: the same structure, names, values, gradients, caching,
right_inverse, removal and errors, on the same weights."""
import numpy as np
import pytest

import numgrad as ng
import numgrad.nn.utils.parametrize as P

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrize


def _classes(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Skew(lib.nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu(1)

    class Counting(lib.nn.Module):
        calls = 0

        def forward(self, X):
            type(self).calls += 1
            return X

    class Halves(lib.nn.Module):          # two originals: right_inverse returns a pair
        def forward(self, A, B):
            return A + B

        def right_inverse(self, X):
            return X / 2, X / 2

    return Symmetric, Skew, Counting, Halves


def _linear(lib, w, b):
    m = lib.nn.Linear(3, 3)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(b))
    return m


@pytest.fixture
def wb():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)


def test_registration_structure_values_and_gradients_match_torch(wb):
    mods = {}
    for lib, par in ((ng, P), (torch, TP)):
        Symmetric, Skew, _, _ = _classes(lib)
        m = _linear(lib, *wb)
        par.register_parametrization(m, "weight", Symmetric())
        par.register_parametrization(m, "weight", Skew())  # applied after Symmetric
        x = lib.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        m(x).pow(2).sum().backward()
        mods[lib.__name__] = m
    g, t = mods["numgrad"], mods["torch"]
    assert repr(g) == repr(t)
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(g.state_dict()) == list(t.state_dict())
    assert P.is_parametrized(g) and P.is_parametrized(g, "weight")
    assert not P.is_parametrized(g, "bias")
    assert P.type_before_parametrizations(g) is ng.nn.Linear
    np.testing.assert_allclose(g.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.parametrizations.weight.original.grad.numpy(),
                               t.parametrizations.weight.original.grad.numpy(), rtol=1e-5)


def test_assignment_goes_through_right_inverse_and_keeps_the_parameter(wb):
    Symmetric, Skew, _, _ = _classes(ng)
    m = _linear(ng, *wb)
    P.register_parametrization(m, "weight", Skew())
    original = m.parametrizations.weight.original
    X = ng.tensor(wb[0]) - ng.tensor(wb[0]).T
    m.weight = X
    assert m.parametrizations.weight.original is original       # same object, new values
    np.testing.assert_allclose(m.weight.detach().numpy(), X.numpy(), atol=1e-6)
    P.register_parametrization(m, "weight", Symmetric())
    with pytest.raises(RuntimeError, match="Symmetric does not implement right_inverse"):
        m.weight = X


def test_cached_computes_once_and_tuple_originals_work(wb):
    _, _, Counting, Halves = _classes(ng)
    m = _linear(ng, *wb)
    P.register_parametrization(m, "weight", Counting())
    Counting.calls = 0
    m.weight, m.weight
    assert Counting.calls == 2
    with P.cached():
        m.weight, m.weight
    assert Counting.calls == 3
    h = _linear(ng, *wb)
    P.register_parametrization(h, "weight", Halves())
    assert [n for n, _ in h.named_parameters()] == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    np.testing.assert_allclose(h.weight.detach().numpy(), wb[0], rtol=1e-6)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_restores_the_class_and_a_plain_parameter(wb, leave):
    out = {}
    for lib, par in ((ng, P), (torch, TP)):
        Symmetric = _classes(lib)[0]
        m = _linear(lib, *wb)
        par.register_parametrization(m, "weight", Symmetric())
        par.remove_parametrizations(m, "weight", leave_parametrized=leave)
        out[lib.__name__] = m
    g, t = out["numgrad"], out["torch"]
    assert type(g) is ng.nn.Linear and not hasattr(g, "parametrizations")
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    np.testing.assert_allclose(g.weight.detach().numpy(), t.weight.detach().numpy())


def test_errors_match_torch(wb):
    for lib, par in ((ng, P), (torch, TP)):
        class Shrink(lib.nn.Module):
            def forward(self, X):
                return X[:2]
        m = _linear(lib, *wb)
        with pytest.raises(ValueError, match="may not change the shape"):
            par.register_parametrization(m, "weight", Shrink())
        with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
            par.register_parametrization(m, "nothing", Shrink())
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            par.remove_parametrizations(m, "weight")

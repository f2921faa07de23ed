"""A new elementwise op and its gradient, defined in this file alone through the public
extension point (``ng.ops.register``): one row carries its NumPy impl, its derivative rule,
its scalar lowering and the helper that lowering calls, and how it is public. Checked
eagerly, under ``@ng.jit`` on the CPU and on CUDA (Numba's simulator), its gradient against
finite differences; and nothing of it outlives the module's fixture."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad.ops import Api, Helper

torch = pytest.importorskip("torch")

NAME = "softsign_one_place"  # unique: nothing else registers it


def softsign_body(x):
    # The scalar helper both backends compile (numba.njit, numba.cuda.jit device function).
    return x / (1 + abs(x))


def _register(name=NAME, llvm="numba"):
    return ng.ops.register(
        name, inputs=("x",), kind="elementwise", floating=True,
        impl=lambda x: x / (1 + np.abs(x)),
        lowering=name + "({0})", helpers=(Helper(name, softsign_body, llvm=llvm),),
        vjp=(lambda g, x: g / ((1 + ng.abs(x)) * (1 + ng.abs(x))),),
        api=Api(doc="``input / (1 + |input|)`` (``torch.nn.functional.softsign``).",
                inplace=True))


@pytest.fixture(scope="module")
def op():
    prim = _register()
    yield prim
    ng.ops.unregister(NAME)


def _fn(name=NAME):
    return getattr(ng, name)


def _x(dtype=np.float64, n=7):
    return np.linspace(-3, 2.5, n).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_matches_torch_everywhere_it_is_public(op, dtype):
    a = _x(dtype)
    want = torch.nn.functional.softsign(torch.tensor(a)).numpy()
    x = ng.tensor(a)
    for got in (_fn()(x), getattr(ng.ops, NAME)(x), getattr(x, NAME)(),
                getattr(ng.tensor(a), NAME + "_")()):
        assert got.dtype.name == np.dtype(dtype).name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    out = ng.empty(0)  # resized to the result's shape (silently: it had no elements)
    assert _fn()(x, out=out) is out and out.shape == x.shape


def test_public_function_looks_hand_written(op):
    import inspect
    f = getattr(ng.ops, NAME)
    assert (f.__name__, f.__qualname__, f.__module__) == (NAME, NAME, "numgrad.ops.api")
    assert "softsign" in f.__doc__
    assert list(inspect.signature(f).parameters) == ["input"]
    assert list(inspect.signature(_fn()).parameters)[-1] == "out"


def test_gradient_vs_torch_and_finite_differences(op):
    a = _x()
    x = ng.tensor(a, requires_grad=True)
    y = _fn()(x)
    assert y.grad_fn.name() == "SoftsignOnePlaceBackward0"
    y.sum().backward()
    t = torch.tensor(a, requires_grad=True)
    torch.nn.functional.softsign(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    x = ng.tensor(a, requires_grad=True)
    assert ng.autograd.gradcheck(_fn(), (x,))
    assert ng.autograd.gradgradcheck(_fn(), (x,))


def _loss(x):
    return (getattr(x, NAME)() * 3).sum()


def _eager_grad(a):
    x = ng.tensor(a, requires_grad=True)
    _loss(x).backward()
    return _loss(ng.tensor(a)).item(), x.grad.numpy()


def test_jit_cpu_forward_and_backward_match_eager(op):
    a = _x()
    f = ng.jit(_loss)
    x = ng.tensor(a, requires_grad=True)
    out = f(x)
    out.backward()
    want, gwant = _eager_grad(a)
    assert out.item() == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), gwant, rtol=1e-12)
    assert NAME + "(" in str(f.source(x))  # the kernel calls the row's helper


def test_jit_cuda_simulator_matches_eager(op):
    from numgrad.cuda import device
    if not (device.simulated() or device.available()):
        pytest.skip("neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")
    a = _x(n=5)
    x = ng.tensor(a, device="cuda", requires_grad=True)
    out = ng.jit(_loss)(x)
    out.backward()
    want, gwant = _eager_grad(a)
    assert out.device.type == "cuda"
    assert out.item() == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(x.grad.cpu().numpy(), gwant, rtol=1e-12)


def _long(name):
    # 30 statements: past the length at which a serial loop becomes an LLVM body.
    def f(x):
        for _ in range(10):
            x = getattr(ng, name)(x) * 1.5 + 0.25
        return x.sum()
    return f


def test_llvm_body_keeps_a_deliberate_numba_helper_and_refuses_an_undeclared_one(op):
    a = _x(n=64)
    got = ng.jit(_long(NAME))(ng.tensor(a)).item()
    assert got == pytest.approx(_long(NAME)(ng.tensor(a)).item(), rel=1e-12)
    from numgrad.compiler.backends.cpu.llvm.body import UnknownHelper
    name = NAME + "_undeclared"
    _register(name, llvm=None)  # says nothing of LLVM bodies: an error, not a fallback
    try:
        with pytest.raises(UnknownHelper, match=f"helper '{name}'.*llvm='numba'"):
            ng.jit(_long(name))(ng.tensor(a))
    finally:
        ng.ops.unregister(name)


def test_a_row_calling_a_helper_it_does_not_carry_is_refused():
    with pytest.raises(ValueError, match=r"calls \['nowhere'\], which it does not carry"):
        ng.ops.register(NAME + "_bad", inputs=("x",), kind="elementwise", impl=np.negative,
                        lowering="nowhere({0})")
    assert NAME + "_bad" not in ng.ops.REGISTRY


def test_unregister_leaves_nothing_behind():
    from numgrad.compiler.backends.cpu import scalar, scalar_vec
    from numgrad.compiler.backends.cuda import scalar as cuda_scalar
    name = NAME + "_transient"
    _register(name)
    assert callable(getattr(ng, name)) and hasattr(ng.Tensor, name + "_")
    assert hasattr(scalar, name) and hasattr(scalar_vec, name) and hasattr(cuda_scalar, name)
    ng.ops.unregister(name)
    for ns in (ng, ng.ops, ng.ops.api, ng.Tensor, scalar, scalar_vec, cuda_scalar):
        assert not hasattr(ns, name) and not hasattr(ns, name + "_")
    assert name not in ng.ops.REGISTRY and name not in ng.ops.HELPERS


def test_a_public_name_taken_already_is_refused_and_the_registry_is_as_it_was():
    before = dict(ng.ops.REGISTRY), dict(ng.ops.HELPERS), ng.exp
    with pytest.raises(ValueError, match=r"public names taken already: \['exp', 'Tensor.exp'\]"):
        ng.ops.register(NAME + "_exp", inputs=("x",), kind="elementwise", impl=np.exp,
                        lowering="exp({0})", helpers=(ng.ops.HELPERS["exp"],),
                        api=Api(doc="e ** x", names=("exp",)))
    assert (dict(ng.ops.REGISTRY), dict(ng.ops.HELPERS), ng.exp) == before


def test_an_input_named_like_what_rules_read_is_refused():
    # A rule's ``out`` is the op's saved output: an input named ``out`` would be shadowed and
    # its vjp would silently read the wrong tensor.
    with pytest.raises(ValueError, match="reserved"):
        ng.ops.register("shadowed_out", inputs=("x", "out"), impl=lambda x, o: x + o,
                        kind="elementwise", lowering="({0} + {1})",
                        vjp=(lambda g: g, lambda g: g))
    assert "shadowed_out" not in ng.ops.REGISTRY

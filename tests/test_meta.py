"""The meta device against torch's: shapes and dtypes through ops, modules and backward with no
data; its repr; the device context; moving modules onto it; its errors."""
import copy

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


def _net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.fc = nn.Linear(4 * 3 * 3, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            return F.log_softmax(self.fc(lib.flatten(x, 1)), dim=1)
    return Net


@pytest.mark.parametrize("lib", [ng, torch], ids=["numgrad", "torch"])
def test_a_network_on_meta_gives_shapes_and_meta_gradients(lib):
    with lib.device("meta"):
        net = _net(lib)()
        x = lib.randn(2, 3, 8, 8)
    assert lib.zeros(1).device.type == "cpu"       # the context ended
    out = net(x)
    assert (out.device.type, tuple(out.shape), out.dtype) == ("meta", (2, 5), lib.float32)
    out.sum().backward()
    g = net.conv.weight.grad
    assert g.device.type == "meta" and tuple(g.shape) == (4, 3, 3, 3)


def test_repr_matches_torch():
    cases = [lambda L: L.rand(2, 3, device="meta"),
             lambda L: L.zeros(4, device="meta", dtype=L.float64),
             lambda L: L.empty(0, device="meta"),
             lambda L: L.ones(2, 2, device="meta", requires_grad=True) * 2,
             lambda L: L.nn.Conv2d(3, 5, 2, device="meta")(L.rand(2, 3, 10, 10, device="meta"))]
    for make in cases:
        assert repr(make(ng)).replace("numgrad.", "torch.") == repr(make(torch))


def test_huge_meta_tensors_allocate_nothing():
    t = ng.rand(2 ** 10, 3, 2 ** 16, 2 ** 16, device="meta")
    out = ng.nn.Conv2d(3, 5, 2, device="meta")(t)
    assert tuple(out.shape) == (2 ** 10, 5, 2 ** 16 - 1, 2 ** 16 - 1)


def test_module_to_meta_then_functional_call_and_assign_load():
    model = ng.nn.Linear(3, 2)
    base = copy.deepcopy(model).to("meta")
    assert base.weight.device.type == "meta"
    x = ng.randn(4, 3)
    params = {k: v.detach() for k, v in model.named_parameters()}
    np.testing.assert_allclose(ng.func.functional_call(base, params, (x,)).detach().numpy(),
                               model(x).detach().numpy(), rtol=1e-6)
    with ng.device("meta"):
        empty = ng.nn.Linear(3, 2)
    empty.load_state_dict(model.state_dict(), assign=True)
    assert empty.weight.device.type == "cpu"
    np.testing.assert_array_equal(empty.weight.detach().numpy(), model.weight.detach().numpy())


@pytest.mark.parametrize("call", [lambda L, t: t.cpu(), lambda L, t: t.item(),
                                  lambda L, t: t + L.ones(2, 3),
                                  lambda L, t: L.zeros(-1, 2, device="meta")])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as want:
        call(torch, torch.rand(2, 3, device="meta"))
    with pytest.raises(Exception) as got:
        call(ng, ng.rand(2, 3, device="meta"))
    if "Scalar" in str(want.value):   # torch's item() error names the element count instead
        assert type(got.value) is NotImplementedError
        return
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)


def test_a_zero_dim_cpu_scalar_mixes_with_meta_and_a_device_context_nests():
    out = ng.rand(2, 3, device="meta") + ng.tensor(1.0)
    assert out.device.type == "meta"
    with ng.device("meta"):
        with ng.device("cpu"):
            assert ng.zeros(1).device.type == "cpu"
        assert ng.zeros(1).device.type == "meta"
    assert ng.zeros(1).device.type == "cpu"


@ng.jit
def _doubled(x):
    return x * 2


def test_jit_refuses_meta_tensors_clearly():
    with pytest.raises(NotImplementedError, match="cannot run on meta tensors"):
        _doubled(ng.zeros(2, device="meta"))

"""The optimizers' device-generic path (numgrad tensor ops, used off the CPU) against their
NumPy path: a model moved with ``Module.to("cuda")`` trains along the CPU model's path.
Runs under Numba's CUDA simulator without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn
from numgrad.devices import cuda_is_available
from numgrad.nn import functional as F
from numgrad.optim import kernels

pytestmark = pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")


def _run(device, make_opt, steps=2):
    ng.manual_seed(0)
    m = nn.Linear(3, 2).double()
    x = ng.linspace(-1, 1, 12, dtype=ng.float64).reshape(4, 3)
    y = ng.tensor([0, 1, 1, 0])
    if device != "cpu":
        m.to(device)
        x, y = x.to(device), y.to(device)
    w = m.weight
    opt = make_opt(m.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.cpu()))
    assert m.weight is w and m.weight.device.type == device
    return losses, [p.detach().cpu().numpy() for p in m.parameters()], opt


@pytest.mark.parametrize("make_opt", [
    lambda ps: ng.optim.SGD(ps, lr=0.5, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda ps: ng.optim.Adam(ps, lr=0.1, amsgrad=True, weight_decay=0.01),
    lambda ps: ng.optim.AdamW(ps, lr=0.1),
    lambda ps: ng.optim.RMSprop(ps, lr=0.1, momentum=0.5, centered=True),
], ids=["sgd", "adam", "adamw", "rmsprop"])
def test_cuda_training_follows_the_cpu_path(make_opt):
    cpu_losses, cpu_params, _ = _run("cpu", make_opt)
    losses, params, opt = _run("cuda", make_opt)
    assert all(kernels.kernels_for(p) is kernels.TensorKernels
               for g in opt.param_groups for p in g["params"])
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-12)
    for a, b in zip(params, cpu_params):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    state = next(iter(opt.state.values()))
    for k, v in state.items():
        if k != "step":
            assert v.device.type == "cuda", k


def test_init_load_state_dict_and_padding_on_cuda():
    cpu = nn.Linear(3, 2)
    m = nn.Linear(3, 2).to("cuda")
    m.load_state_dict(cpu.state_dict())  # CPU tensors into CUDA parameters
    assert m.weight.device.type == "cuda"
    np.testing.assert_array_equal(m.weight.detach().cpu().numpy(),
                                  cpu.weight.detach().numpy())
    nn.init.zeros_(m.bias)
    assert not m.bias.detach().cpu().numpy().any() and m.bias.requires_grad
    emb = nn.Embedding(5, 3, padding_idx=2, device="cuda")
    w = emb.weight.detach().cpu().numpy()
    assert emb.weight.device.type == "cuda" and not w[2].any() and w[[0, 1, 3, 4]].all()


def test_optimizer_state_dict_round_trip_on_cuda():
    p = nn.Parameter(ng.ones(3, dtype=ng.float64).to("cuda"))
    opt = ng.optim.Adam([p], lr=0.1)
    p.grad = ng.ones(3, dtype=ng.float64).to("cuda")
    opt.step()
    again = ng.optim.Adam([p], lr=0.1)
    again.load_state_dict(opt.state_dict())
    mine, theirs = again.state[p]["exp_avg"], opt.state[p]["exp_avg"]
    assert mine is not theirs and mine.device.type == "cuda"
    np.testing.assert_array_equal(mine.cpu().numpy(), theirs.cpu().numpy())

"""The hooks of a plan on CUDA tensors (Numba's simulator without a GPU): a node post-hook
that reads its two input gradients and its output gradient and replaces one, and hooks around the
call that move what the plan saves to the host and back (save_on_cpu too), against the
same code on the CPU."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

A = np.array([0.5, -1.25, 2.0])
B = np.array([1.0, 0.5, -0.75])


@ng.jit
def f(x, w):
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: SEEN.append(tuple(g.device.type for g in gi + go))
                            or (gi[0] * 3, gi[1]))
    return (y.exp() @ w).sum()


SEEN = []


def run(dev, hooks):
    x, w = (ng.tensor(v, device=dev, requires_grad=True) for v in (A, B))
    with hooks:
        out = f(x, w)
    out.backward()
    return x.grad.cpu().numpy(), w.grad.cpu().numpy()


def logging_to_host(log):
    def pack(t):
        log.append(("pack", t.device.type))
        return t.device, t.cpu()

    def unpack(p):
        log.append(("unpack", p[1].device.type))
        return p[1].to(p[0])
    return ng.autograd.graph.saved_tensors_hooks(pack, unpack)


def test_node_hooks_and_save_on_cpu_in_a_cuda_plan_match_the_cpu():
    if not ng.cuda.is_available():
        pytest.skip("neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")
    SEEN.clear()
    log = []
    cuda = run("cuda", logging_to_host(log))
    assert SEEN == [("cuda",) * 3]
    n = len(log) // 2
    assert n > 0 and log == [("pack", "cuda")] * n + [("unpack", "cpu")] * n
    cpu = run("cpu", ng.autograd.graph.save_on_cpu())
    assert SEEN[1] == ("cpu",) * 3
    for a, b in zip(cuda, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    on_cpu = run("cuda", ng.autograd.graph.save_on_cpu())
    for a, b in zip(on_cpu, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-10)

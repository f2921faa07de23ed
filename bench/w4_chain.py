"""W4: a long chain of small ops.  x has 1,000 float64 elements; 100 alternating steps
x = sin(x)*1.01 + 0.1*x  /  x = tanh(x), then sum, d/dx.  About 300 ops on small arrays:
eager pays per-op dispatch, a compiler fuses the whole chain into one loop.  ``--quick``
runs the full 100 steps too (a cold compile of the chain takes a few seconds)."""
from __future__ import annotations

import numpy as np

import numgrad as ng
from bench import common
from bench.common import Case, import_jax, import_torch, torch_compile_fresh

ID = "W4"
TITLE = "alternating sin/tanh steps on 1e3 float64, sum, d/dx"
STEPS, QUICK_STEPS = 100, 100


def cases(quick):
    steps = QUICK_STEPS if quick else STEPS
    return [Case(ID, f"n=1e3 float64, {steps} steps", 1000, "float64",
                 {"n": 1000, "steps": steps}, headline=True)]


def make_data(case):
    return {"x": np.random.default_rng(4).standard_normal(case.params["n"])}


def chain(lib, x, steps=STEPS):
    for i in range(steps):
        x = lib.sin(x) * 1.01 + 0.1 * x if i % 2 == 0 else lib.tanh(x)
    return x.sum()


def chain_ng(x, steps):
    return chain(ng, x, steps)


chain_jit = ng.jit(chain_ng)                        # called, then .backward()
chain_jit_vg = ng.jit(ng.value_and_grad(chain_ng))  # one joint pass


def numgrad_eager(case, data, fn=chain_ng):
    x = ng.from_numpy(data["x"]).requires_grad_(True)
    steps = case.params["steps"]

    def step():
        x.grad = None
        out = fn(x, steps)
        out.backward()
        return out.detach(), x.grad
    return step


def numgrad_jit(case, data):
    return numgrad_eager(case, data, fn=chain_jit)


def numgrad_jit_vg(case, data):
    x = ng.from_numpy(data["x"])
    steps = case.params["steps"]

    def step():
        return chain_jit_vg(x, steps)   # steps is not a tensor: baked into the plan
    return step


def torch_eager(case, data):
    torch = import_torch()
    x = torch.from_numpy(data["x"]).requires_grad_(True)
    steps = case.params["steps"]

    def step():
        x.grad = None
        out = chain(torch, x, steps)
        out.backward()
        return out.detach(), x.grad
    return step


def torch_compile(case, data):
    torch = import_torch()
    steps = case.params["steps"]

    def vg(x):
        x = x.detach().requires_grad_(True)
        out = chain(torch, x, steps)
        return out.detach(), torch.autograd.grad(out, (x,))[0]
    compiled = torch_compile_fresh(vg)
    x = torch.from_numpy(data["x"])

    def step():
        return compiled(x)
    return step


def jax_jit(case, data):
    jax, jnp = import_jax()
    steps = case.params["steps"]
    g = jax.jit(jax.value_and_grad(lambda x: chain(jnp, x, steps)))
    x = jnp.asarray(data["x"])

    def step():
        return jax.block_until_ready(g(x))
    return step


def numpy_manual(case, data):
    x0 = data["x"]
    steps = case.params["steps"]

    def step():
        xs = [x0]
        x = x0
        for i in range(steps):
            x = np.sin(x) * 1.01 + 0.1 * x if i % 2 == 0 else np.tanh(x)
            xs.append(x)
        g = np.ones_like(x0)
        for i in reversed(range(steps)):
            if i % 2 == 0:
                g *= np.cos(xs[i]) * 1.01 + 0.1
            else:
                g *= 1 - xs[i + 1] * xs[i + 1]
        return x.sum(), g
    return step


IMPLS = common.impls(globals())

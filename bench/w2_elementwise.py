"""W2: f(x, y) = sum(tanh(x*y + sin(x)) * exp(-y*y)), gradients w.r.t. x and y.

A memory-bound elementwise chain: eager frameworks make one pass over memory per
op, a fusing compiler one pass in all.  Swept over sizes 1e3 ... 1e7 (float64), plus
float32 at the large sizes, so the plot shows where compilation starts to pay.
"""
from __future__ import annotations

import numpy as np

import numgrad as ng
from bench import common
from bench.common import Case, fmt_n, import_jax, import_torch, torch_compile_fresh

ID = "W2"
TITLE = "sum(tanh(x*y + sin x) * exp(-y*y)), d/dx, d/dy"


def cases(quick):
    if quick:
        f64, f32, head = (10 ** 3, 10 ** 4, 10 ** 5), (10 ** 5,), 10 ** 5
    else:
        f64, f32, head = tuple(10 ** k for k in range(3, 8)), (10 ** 6, 10 ** 7), 10 ** 6
    out = [Case(ID, f"n={fmt_n(n)} float64", n, "float64", {"n": n}, headline=n == head)
           for n in f64]
    out += [Case(ID, f"n={fmt_n(n)} float32", n, "float32", {"n": n}) for n in f32]
    return out


def make_data(case):
    rng = np.random.default_rng(2)
    n = case.params["n"]
    return {"x": rng.standard_normal(n).astype(case.dtype),
            "y": rng.standard_normal(n).astype(case.dtype)}


def f(lib, x, y):
    return (lib.tanh(x * y + lib.sin(x)) * lib.exp(-y * y)).sum()


def f_ng(x, y):
    return f(ng, x, y)


f_jit = ng.jit(f_ng)                                         # called, then .backward()
f_jit_vg = ng.jit(ng.value_and_grad(f_ng, argnums=(0, 1)))  # one joint pass


def numgrad_eager(case, data, fn=f_ng):
    x = ng.from_numpy(data["x"]).requires_grad_(True)
    y = ng.from_numpy(data["y"]).requires_grad_(True)

    def step():
        x.grad = y.grad = None
        out = fn(x, y)
        out.backward()
        return out.detach(), x.grad, y.grad
    return step


def numgrad_jit(case, data):
    return numgrad_eager(case, data, fn=f_jit)


def numgrad_jit_vg(case, data):
    x, y = ng.from_numpy(data["x"]), ng.from_numpy(data["y"])

    def step():
        return f_jit_vg(x, y)
    return step


def torch_eager(case, data, fn=None):
    """f called, then ``.backward()``; ``fn``: a compiled f instead of the eager one."""
    torch = import_torch()
    fn = fn or (lambda x, y: f(torch, x, y))
    x = torch.from_numpy(data["x"]).requires_grad_(True)
    y = torch.from_numpy(data["y"]).requires_grad_(True)

    def step():
        x.grad = y.grad = None
        out = fn(x, y)
        out.backward()
        return out.detach(), x.grad, y.grad
    return step


def torch_compile(case, data):
    torch = import_torch()

    def vg(x, y):
        x = x.detach().requires_grad_(True)
        y = y.detach().requires_grad_(True)
        out = f(torch, x, y)
        gx, gy = torch.autograd.grad(out, (x, y))
        return out.detach(), gx, gy
    compiled = torch_compile_fresh(vg)
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])

    def step():
        return compiled(x, y)
    return step


def torch_compile_backward(case, data):
    """torch.compile(f) called, then ``.backward()``: the PyTorch habit, compiled."""
    torch = import_torch()
    return torch_eager(case, data, fn=torch_compile_fresh(lambda x, y: f(torch, x, y)))


def jax_jit(case, data):
    jax, jnp = import_jax()
    g = jax.jit(jax.value_and_grad(lambda x, y: f(jnp, x, y), argnums=(0, 1)))
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])

    def step():
        return jax.block_until_ready(g(x, y))
    return step


def numpy_manual(case, data):
    x, y = data["x"], data["y"]

    def step():
        u = x * y
        u += np.sin(x)
        t = np.tanh(u)
        e = np.exp(-(y * y))
        value = np.dot(t, e)
        se = 1 - t * t          # sech^2(u)
        se *= e
        gx = se * (y + np.cos(x))
        t *= e
        t *= -2 * y             # d exp(-y^2)/dy * tanh(u)
        gy = se * x
        gy += t
        return value, gx, gy
    return step


IMPLS = common.impls(globals())
EXTRA_IMPLS = {"torch.compile+backward": torch_compile_backward}   # bench/sweep.py

"""W5: Hessian-vector product of W2's f at (x, y) along (vx, vy), by double backward:
(hx, hy) = grad_{x,y} <grad f(x, y), v>, with the first grad taken with create_graph.
Outputs: <grad f, v> and (hx, hy)."""
from __future__ import annotations

import numpy as np

import numgrad as ng
from bench import common
from bench.common import Case, fmt_n, import_jax, import_torch, torch_compile_fresh
from bench.w2_elementwise import f

ID = "W5"
TITLE = "Hessian-vector product of W2's f (grad of grad.v, create_graph)"


def cases(quick):
    n = 10 ** 5 if quick else 10 ** 6
    return [Case(ID, f"n={fmt_n(n)} float64", n, "float64", {"n": n}, headline=True)]


def make_data(case):
    rng = np.random.default_rng(5)
    n = case.params["n"]
    return {k: rng.standard_normal(n) for k in ("x", "y", "vx", "vy")}


def f_ng(x, y):
    return f(ng, x, y)


f_jit = ng.jit(f_ng)   # module-level jitted f: double backward through its compiled grad_fn


def gv_ng(x, y, vx, vy, fn=f_ng):
    gx, gy = ng.autograd.grad(fn(x, y), (x, y), create_graph=True)
    return (gx * vx).sum() + (gy * vy).sum()


# The inner gradient is ng.autograd.grad(create_graph=True), as torch eager spells it;
# ng.jit compiles the whole Hessian-vector product into one plan.
hvp_jit_vg = ng.jit(ng.value_and_grad(gv_ng, argnums=(0, 1)))


def numgrad_eager(case, data, fn=f_ng):
    x = ng.from_numpy(data["x"]).requires_grad_(True)
    y = ng.from_numpy(data["y"]).requires_grad_(True)
    vx, vy = ng.from_numpy(data["vx"]), ng.from_numpy(data["vy"])

    def step():
        s = gv_ng(x, y, vx, vy, fn)
        hx, hy = ng.autograd.grad(s, (x, y))
        return s.detach(), hx, hy
    return step


def numgrad_jit(case, data):
    return numgrad_eager(case, data, fn=f_jit)


def numgrad_jit_vg(case, data):
    args = [ng.from_numpy(data[k]) for k in ("x", "y", "vx", "vy")]

    def step():
        return hvp_jit_vg(*args)
    return step


def _gv_torch(torch, x, y, vx, vy):
    gx, gy = torch.autograd.grad(f(torch, x, y), (x, y), create_graph=True)
    return (gx * vx).sum() + (gy * vy).sum()


def torch_eager(case, data):
    torch = import_torch()
    x = torch.from_numpy(data["x"]).requires_grad_(True)
    y = torch.from_numpy(data["y"]).requires_grad_(True)
    vx, vy = torch.from_numpy(data["vx"]), torch.from_numpy(data["vy"])

    def step():
        s = _gv_torch(torch, x, y, vx, vy)
        hx, hy = torch.autograd.grad(s, (x, y))
        return s.detach(), hx, hy
    return step


def torch_compile(case, data):
    torch = import_torch()

    def hvp(x, y, vx, vy):
        x = x.detach().requires_grad_(True)
        y = y.detach().requires_grad_(True)
        s = _gv_torch(torch, x, y, vx, vy)
        hx, hy = torch.autograd.grad(s, (x, y))
        return s.detach(), hx, hy
    compiled = torch_compile_fresh(hvp)
    args = [torch.from_numpy(data[k]) for k in ("x", "y", "vx", "vy")]

    def step():
        return compiled(*args)
    return step


def jax_jit(case, data):
    jax, jnp = import_jax()
    grad_f = jax.grad(lambda x, y: f(jnp, x, y), argnums=(0, 1))

    def gv(x, y, vx, vy):
        gx, gy = grad_f(x, y)
        return jnp.vdot(gx, vx) + jnp.vdot(gy, vy)
    g = jax.jit(jax.value_and_grad(gv, argnums=(0, 1)))
    args = [jnp.asarray(data[k]) for k in ("x", "y", "vx", "vy")]

    def step():
        return jax.block_until_ready(g(*args))
    return step


def hvp_numpy(x, y, vx, vy):
    """<grad f, v> and H v, with f's first and second derivatives written out."""
    cx = np.cos(x)
    t = np.tanh(x * y + np.sin(x))
    e = np.exp(-(y * y))
    s = 1 - t * t                    # sech^2(u), u = x*y + sin x
    a = y + cx                       # du/dx  (du/dy = x)
    ey = -2 * y * e                  # de/dy
    gx = s * e * a
    gy = s * e * x + t * ey
    ts2 = -2 * t * s                 # d sech^2(u) / du
    hxx = e * (ts2 * a * a - s * np.sin(x))
    hxy = ts2 * a * x * e + s * a * ey + s * e
    hyy = ts2 * x * x * e + 2 * s * x * ey + t * e * (4 * y * y - 2)
    value = np.dot(gx, vx) + np.dot(gy, vy)
    return value, hxx * vx + hxy * vy, hxy * vx + hyy * vy


def numpy_manual(case, data):
    args = [data[k] for k in ("x", "y", "vx", "vy")]

    def step():
        return hvp_numpy(*args)
    return step


IMPLS = common.impls(globals())

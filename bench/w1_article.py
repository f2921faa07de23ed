"""W1, the article's first example: x = ones(10) float32, r = (x**2 + x**3).sum(),
r.backward(), read x.grad.  Tiny: it measures per-call overhead, not arithmetic."""
from __future__ import annotations

import numpy as np

import numgrad as ng
from bench import common
from bench.common import Case, import_jax, import_torch, torch_compile_fresh

ID = "W1"
TITLE = "article example: (x**2 + x**3).sum(), x = ones(10) float32"


def cases(quick):
    return [Case(ID, "n=10 float32", 10, "float32", {"n": 10}, headline=True)]


def make_data(case):
    return {}


def article(x):
    return (x ** 2 + x ** 3).sum()


article_jit = ng.jit(article)                        # called, then .backward()
article_jit_vg = ng.jit(ng.value_and_grad(article))  # one joint pass


def numgrad_eager(case, data, fn=article):
    n = case.params["n"]

    def step():
        x = ng.ones(n, requires_grad=True)
        r = fn(x)
        r.backward()
        return r.detach(), x.grad
    return step


def numgrad_jit(case, data):
    return numgrad_eager(case, data, fn=article_jit)


def numgrad_jit_vg(case, data):
    n = case.params["n"]

    def step():
        return article_jit_vg(ng.ones(n))
    return step


def torch_eager(case, data):
    torch = import_torch()
    n = case.params["n"]

    def step():
        x = torch.ones(n, requires_grad=True)
        r = article(x)
        r.backward()
        return r.detach(), x.grad
    return step


def torch_compile(case, data):
    torch = import_torch()
    n = case.params["n"]

    def vg(x):
        x = x.detach().requires_grad_(True)
        r = article(x)
        (g,) = torch.autograd.grad(r, (x,))
        return r.detach(), g
    compiled = torch_compile_fresh(vg)

    def step():
        return compiled(torch.ones(n))
    return step


def jax_jit(case, data):
    jax, jnp = import_jax()
    n = case.params["n"]
    g = jax.jit(jax.value_and_grad(article))

    def step():
        return jax.block_until_ready(g(jnp.ones(n, dtype=jnp.float32)))
    return step


def numpy_manual(case, data):
    n = case.params["n"]

    def step():
        x = np.ones(n, dtype=np.float32)
        x2 = x * x
        r = (x2 + x2 * x).sum()
        return r, 2 * x + 3 * x2
    return step


IMPLS = common.impls(globals())

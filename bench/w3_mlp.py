"""W3: one MLP training step's gradients, float32, batch 256, 784 -> 512 -> 10, relu,
log_softmax + mean NLL over int64 class targets; grads of both weights and biases.
Matmul-bound: every system ends up in a BLAS sgemm, so this measures the overhead
around it."""
from __future__ import annotations

import numpy as np

import numgrad as ng
from bench import common
from bench.common import Case, import_jax, import_torch, torch_compile_fresh

ID = "W3"
TITLE = "MLP 784-512-10 relu, log_softmax+NLL, batch 256 float32"
SHAPE = dict(batch=256, d_in=784, hidden=512, classes=10)


def cases(quick):
    return [Case(ID, "B=256 784-512-10 float32", 256 * 784, "float32", dict(SHAPE),
                 headline=True)]


def make_data(case):
    p = case.params
    rng = np.random.default_rng(3)
    f32 = np.float32
    return {
        "X": rng.standard_normal((p["batch"], p["d_in"])).astype(f32),
        "T": rng.integers(0, p["classes"], p["batch"]).astype(np.int64),
        "W1": (rng.standard_normal((p["hidden"], p["d_in"])) / np.sqrt(p["d_in"])).astype(f32),
        "b1": (0.01 * rng.standard_normal(p["hidden"])).astype(f32),
        "W2": (rng.standard_normal((p["classes"], p["hidden"])) / np.sqrt(p["hidden"])).astype(f32),
        "b2": (0.01 * rng.standard_normal(p["classes"])).astype(f32),
    }


PARAMS = ("W1", "b1", "W2", "b2")


def loss_ng(W1, b1, W2, b2, X, T):
    F = ng.nn.functional
    h = F.relu(F.linear(X, W1, b1))
    return F.nll_loss(F.log_softmax(F.linear(h, W2, b2), dim=1), T)


loss_jit = ng.jit(loss_ng)                                           # called, then .backward()
loss_jit_vg = ng.jit(ng.value_and_grad(loss_ng, argnums=(0, 1, 2, 3)))  # one joint pass


def _ng_leaves(data):
    return [ng.from_numpy(data[k]).requires_grad_(True) for k in PARAMS]


def numgrad_eager(case, data, loss=loss_ng):
    params = _ng_leaves(data)
    X, T = ng.from_numpy(data["X"]), ng.from_numpy(data["T"])

    def step():
        for p in params:
            p.grad = None
        out = loss(*params, X, T)
        out.backward()
        return (out.detach(),) + tuple(p.grad for p in params)
    return step


def numgrad_jit(case, data):
    return numgrad_eager(case, data, loss=loss_jit)


def numgrad_jit_vg(case, data):
    params = [ng.from_numpy(data[k]) for k in PARAMS]
    X, T = ng.from_numpy(data["X"]), ng.from_numpy(data["T"])

    def step():
        return loss_jit_vg(*params, X, T)
    return step


def loss_torch(W1, b1, W2, b2, X, T):
    import torch.nn.functional as F
    h = F.relu(F.linear(X, W1, b1))
    return F.nll_loss(F.log_softmax(F.linear(h, W2, b2), dim=1), T)


def torch_eager(case, data):
    torch = import_torch()
    params = [torch.from_numpy(data[k]).requires_grad_(True) for k in PARAMS]
    X, T = torch.from_numpy(data["X"]), torch.from_numpy(data["T"])

    def step():
        for p in params:
            p.grad = None
        out = loss_torch(*params, X, T)
        out.backward()
        return (out.detach(),) + tuple(p.grad for p in params)
    return step


def torch_compile(case, data):
    torch = import_torch()

    def vg(W1, b1, W2, b2, X, T):
        ps = [p.detach().requires_grad_(True) for p in (W1, b1, W2, b2)]
        out = loss_torch(*ps, X, T)
        return (out.detach(),) + tuple(torch.autograd.grad(out, ps))
    compiled = torch_compile_fresh(vg)
    args = [torch.from_numpy(data[k]) for k in PARAMS + ("X", "T")]

    def step():
        return compiled(*args)
    return step


def jax_jit(case, data):
    jax, jnp = import_jax()

    def loss(W1, b1, W2, b2, X, T):
        h = jax.nn.relu(X @ W1.T + b1)
        logp = jax.nn.log_softmax(h @ W2.T + b2, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, T[:, None], axis=1))
    g = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)))
    args = [jnp.asarray(data[k]) for k in PARAMS + ("X", "T")]

    def step():
        return jax.block_until_ready(g(*args))
    return step


def mlp_numpy(W1, b1, W2, b2, X, T):
    """Loss and grads of the 2-layer MLP, backward written by hand."""
    B = X.shape[0]
    pre = X @ W1.T
    pre += b1
    h = np.maximum(pre, 0)
    z = h @ W2.T
    z += b2
    z -= z.max(axis=1, keepdims=True)
    ez = np.exp(z)
    se = ez.sum(axis=1, keepdims=True)
    rows = np.arange(B)
    loss = np.log(se[:, 0]).mean() - z[rows, T].mean()
    dz = ez / se                    # softmax
    dz[rows, T] -= 1
    dz /= B
    gW2 = dz.T @ h
    gb2 = dz.sum(axis=0)
    dh = dz @ W2
    dh *= pre > 0
    gW1 = dh.T @ X
    gb1 = dh.sum(axis=0)
    return loss, gW1, gb1, gW2, gb2


def numpy_manual(case, data):
    args = [data[k] for k in PARAMS + ("X", "T")]

    def step():
        return mlp_numpy(*args)
    return step


IMPLS = common.impls(globals())

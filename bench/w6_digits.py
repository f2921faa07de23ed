"""W6: a training loop: 200 SGD steps of an MLP (64 -> 128 -> 10, relu, cross-entropy)
on scikit-learn's bundled digits data set (load_digits, no download), float32,
mini-batches of 256 cycling over 1,792 of the 1,797 images.  One measured unit is the
whole loop from the same initial weights; the check compares the final weights."""
from __future__ import annotations

import numpy as np

import numgrad as ng
from bench import common
from bench.common import Case, import_jax, import_torch, torch_compile_fresh
from bench.w3_mlp import mlp_numpy

ID = "W6"
TITLE = "200 SGD steps, MLP 64-128-10 on sklearn digits, batch 256 float32"
STEPS, BATCH, HIDDEN, LR = 200, 256, 128, 0.1
PARAMS = ("W1", "b1", "W2", "b2")


def cases(quick):
    return [Case(ID, f"{STEPS} steps, B={BATCH} float32", STEPS * BATCH * 64, "float32",
                 {"steps": STEPS}, headline=True)]


def make_data(case):
    from sklearn.datasets import load_digits   # bundled with scikit-learn: no download
    d = load_digits()
    rng = np.random.default_rng(6)
    order = rng.permutation(len(d.target))[: (len(d.target) // BATCH) * BATCH]
    X = (d.data[order] / 16.0).astype(np.float32)
    T = d.target[order].astype(np.int64)
    f32 = np.float32
    data = {
        "batches": [(X[i:i + BATCH], T[i:i + BATCH]) for i in range(0, len(T), BATCH)],
        "W1": (rng.standard_normal((HIDDEN, 64)) / 8.0).astype(f32),
        "b1": np.zeros(HIDDEN, f32),
        "W2": (rng.standard_normal((10, HIDDEN)) / np.sqrt(HIDDEN)).astype(f32),
        "b2": np.zeros(10, f32),
    }
    return data


def loss_ng(W1, b1, W2, b2, X, T):
    F = ng.nn.functional
    return F.cross_entropy(F.linear(F.relu(F.linear(X, W1, b1)), W2, b2), T)


def sgd_ng(W1, b1, W2, b2, X, T):
    value, grads = ng.value_and_grad(loss_ng, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, X, T)
    return (value,) + tuple(p - LR * g for p, g in zip((W1, b1, W2, b2), grads))


loss_jit = ng.jit(loss_ng)    # called, then .backward(), then an eager no_grad update
sgd_jit_vg = ng.jit(sgd_ng)   # loss, grads and update in one compiled call


def _batches(data, make):
    return [(make(X), make(T)) for X, T in data["batches"]]


def numgrad_eager(case, data, loss=loss_ng):
    batches = _batches(data, ng.tensor)

    def step():
        ps = [ng.tensor(data[k], requires_grad=True) for k in PARAMS]
        for i in range(STEPS):
            X, T = batches[i % len(batches)]
            out = loss(*ps, X, T)
            out.backward()
            with ng.no_grad():
                for p in ps:
                    p.sub_(LR * p.grad)
                    p.grad = None
        return (out.detach(),) + tuple(ps)
    return step


def numgrad_jit(case, data):
    return numgrad_eager(case, data, loss=loss_jit)


def numgrad_jit_vg(case, data):
    batches = _batches(data, ng.tensor)

    def step():
        ps = [ng.tensor(data[k]) for k in PARAMS]
        for i in range(STEPS):
            value, *ps = sgd_jit_vg(*ps, *batches[i % len(batches)])
        return (value,) + tuple(ps)
    return step


def _loss_torch(W1, b1, W2, b2, X, T):
    import torch.nn.functional as F
    return F.cross_entropy(F.linear(F.relu(F.linear(X, W1, b1)), W2, b2), T)


def torch_eager(case, data):
    torch = import_torch()
    batches = _batches(data, torch.from_numpy)

    def step():
        ps = [torch.tensor(data[k], requires_grad=True) for k in PARAMS]
        for i in range(STEPS):
            X, T = batches[i % len(batches)]
            out = _loss_torch(*ps, X, T)
            out.backward()
            with torch.no_grad():
                for p in ps:
                    p.sub_(LR * p.grad)
                    p.grad = None
        return (out.detach(),) + tuple(ps)
    return step


def torch_compile(case, data):
    torch = import_torch()

    def sgd(W1, b1, W2, b2, X, T):
        ps = [p.detach().requires_grad_(True) for p in (W1, b1, W2, b2)]
        out = _loss_torch(*ps, X, T)
        grads = torch.autograd.grad(out, ps)
        return (out.detach(),) + tuple(p.detach() - LR * g for p, g in zip(ps, grads))
    compiled = torch_compile_fresh(sgd)
    batches = _batches(data, torch.from_numpy)

    def step():
        ps = [torch.tensor(data[k]) for k in PARAMS]
        for i in range(STEPS):
            value, *ps = compiled(*ps, *batches[i % len(batches)])
        return (value,) + tuple(ps)
    return step


def jax_jit(case, data):
    jax, jnp = import_jax()

    def loss(W1, b1, W2, b2, X, T):
        logp = jax.nn.log_softmax(jax.nn.relu(X @ W1.T + b1) @ W2.T + b2, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, T[:, None], axis=1))

    vg = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))

    @jax.jit
    def sgd(W1, b1, W2, b2, X, T):
        value, grads = vg(W1, b1, W2, b2, X, T)
        return (value,) + tuple(p - LR * g for p, g in zip((W1, b1, W2, b2), grads))
    batches = _batches(data, jnp.asarray)

    def step():
        ps = [jnp.asarray(data[k]) for k in PARAMS]
        for i in range(STEPS):
            value, *ps = sgd(*ps, *batches[i % len(batches)])
        return jax.block_until_ready((value,) + tuple(ps))
    return step


def numpy_manual(case, data):
    batches = data["batches"]

    def step():
        ps = [data[k].copy() for k in PARAMS]
        for i in range(STEPS):
            value, *grads = mlp_numpy(*ps, *batches[i % len(batches)])
            for p, g in zip(ps, grads):
                p -= np.float32(LR) * g
        return (value,) + tuple(ps)
    return step


IMPLS = common.impls(globals())

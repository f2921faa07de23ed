"""The function transforms against JAX and torch.func, in one run on 1 thread.

Three measurements (medians of repeated calls after a warm-up, float32 MLP, float64 W2):

1. per-sample gradients of an MLP 784-128-10 (batch 256, one-hot cross-entropy):
   ``ng.jit(ng.func.vmap(ng.func.grad(loss)))`` vs ``jax.jit(jax.vmap(jax.grad(loss)))``
   and torch.func's eager ``vmap(grad(loss))``;
2. the Hessian (100 x 100) of W2's f w.r.t. x at n=100: ``ng.jit(ng.func.hessian(f))``
   vs ``jax.jit(jax.hessian(f))`` (and torch.func.hessian eager);
3. ``ng.func.jvp`` of W2's f at n=1e6 (forward mode, one pass) against its own
   ``ng.value_and_grad`` (one joint forward+backward pass), both under ``ng.jit``;
4. ``ng.autograd.functional.jacobian`` of a 64 x 64 map, eager, with ``vectorize=False`` (a
   backward per row) and ``True`` (one vmap of the vjp), and torch's two modes.

Run: ``python -m bench.func_transforms [--quick] [--repeats N]``. Prints a table of times and
ratios; every system's result is checked against torch.func's first.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench import common


def timeit(fn, repeats):
    fn()  # warm-up: traces and compiles
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_sample(quick, repeats, jax_mods):
    import numgrad as ng
    import torch
    rng = np.random.default_rng(0)
    d_in, hidden, classes, batch = (784, 128, 10, 256) if not quick else (64, 32, 10, 16)
    p = {"w1": rng.standard_normal((d_in, hidden)) / np.sqrt(d_in),
         "b1": np.zeros(hidden), "w2": rng.standard_normal((hidden, classes)) / np.sqrt(hidden),
         "b2": np.zeros(classes)}
    p = {k: v.astype(np.float32) for k, v in p.items()}
    x = rng.standard_normal((batch, d_in)).astype(np.float32)
    y = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, batch)]

    def loss_ng(p, x, y):
        logits = (x @ p["w1"] + p["b1"]).relu() @ p["w2"] + p["b2"]
        return -(y * ng.log_softmax(logits, dim=-1)).sum()

    def loss_torch(p, x, y):
        logits = (x @ p["w1"] + p["b1"]).relu() @ p["w2"] + p["b2"]
        return -(y * torch.log_softmax(logits, dim=-1)).sum()

    ng_fn = ng.jit(ng.func.vmap(ng.func.grad(loss_ng), in_dims=(None, 0, 0)))
    tp = {k: torch.tensor(v) for k, v in p.items()}
    tx, ty = torch.tensor(x), torch.tensor(y)
    torch_fn = torch.func.vmap(torch.func.grad(loss_torch), in_dims=(None, 0, 0))
    npar = {k: ng.tensor(v) for k, v in p.items()}
    nx, ny = ng.tensor(x), ng.tensor(y)
    ref = {k: v.numpy() for k, v in torch_fn(tp, tx, ty).items()}
    rows = {"torch.func vmap(grad) eager": timeit(lambda: torch_fn(tp, tx, ty), repeats)}
    got = ng_fn(npar, nx, ny)
    err = max(common.rel_err(got[k].numpy(), ref[k]) for k in ref)
    assert err < 1e-4, err
    rows["numgrad jit(vmap(grad))"] = timeit(lambda: ng_fn(npar, nx, ny), repeats)
    if jax_mods is not None:
        jax, jnp = jax_mods

        def loss_jax(p, x, y):
            logits = jnp.maximum(x @ p["w1"] + p["b1"], 0) @ p["w2"] + p["b2"]
            return -(y * jax.nn.log_softmax(logits, axis=-1)).sum()

        jfn = jax.jit(jax.vmap(jax.grad(loss_jax), in_axes=(None, 0, 0)))
        jp = {k: jnp.asarray(v) for k, v in p.items()}
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        err = max(common.rel_err(np.asarray(jfn(jp, jx, jy)[k]), ref[k]) for k in ref)
        assert err < 1e-4, err
        rows["jax jit(vmap(grad))"] = timeit(lambda: jax.block_until_ready(jfn(jp, jx, jy)),
                                             repeats)
    return f"per-sample grads, MLP {d_in}-{hidden}-{classes}, batch {batch}, float32", rows, \
        "numgrad jit(vmap(grad))"


def w2(lib, x, y):
    return (lib.tanh(x * y + lib.sin(x)) * lib.exp(-y * y)).sum()


def hessian(quick, repeats, jax_mods):
    import numgrad as ng
    import torch
    n = 100 if not quick else 20
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    ng_fn = ng.jit(ng.func.hessian(lambda a, b: w2(ng, a, b)))
    torch_fn = torch.func.hessian(lambda a, b: w2(torch, a, b))
    tx, ty = torch.tensor(x), torch.tensor(y)
    nx, ny = ng.tensor(x), ng.tensor(y)
    ref = torch_fn(tx, ty).numpy()
    assert common.rel_err(ng_fn(nx, ny).numpy(), ref) < 1e-10
    rows = {"torch.func hessian eager": timeit(lambda: torch_fn(tx, ty), repeats),
            "numgrad jit(hessian)": timeit(lambda: ng_fn(nx, ny), repeats)}
    if jax_mods is not None:
        jax, jnp = jax_mods
        jfn = jax.jit(jax.hessian(lambda a, b: w2(jnp, a, b)))
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        assert common.rel_err(np.asarray(jfn(jx, jy)), ref) < 1e-10
        rows["jax jit(hessian)"] = timeit(lambda: jax.block_until_ready(jfn(jx, jy)), repeats)
    return f"Hessian of W2's f w.r.t. x, n={n}, float64", rows, "numgrad jit(hessian)"


def jvp(quick, repeats, jax_mods):
    import numgrad as ng
    import torch
    n = 10 ** 6 if not quick else 10 ** 4
    rng = np.random.default_rng(2)
    x, y, vx, vy = (rng.standard_normal(n) for _ in range(4))
    f = lambda a, b: w2(ng, a, b)  # noqa: E731
    jvp_fn = ng.jit(lambda a, b, ta, tb: ng.func.jvp(f, (a, b), (ta, tb)))
    vg_fn = ng.jit(ng.value_and_grad(f, argnums=(0, 1)))
    args = [ng.tensor(a) for a in (x, y, vx, vy)]
    _, ref = torch.func.jvp(lambda a, b: w2(torch, a, b), (torch.tensor(x), torch.tensor(y)),
                            (torch.tensor(vx), torch.tensor(vy)))
    assert common.rel_err(jvp_fn(*args)[1].numpy(), ref.numpy()) < 1e-10
    rows = {"numgrad jit value_and_grad": timeit(lambda: vg_fn(*args[:2]), repeats),
            "numgrad jit jvp": timeit(lambda: jvp_fn(*args), repeats)}
    if jax_mods is not None:
        jax, jnp = jax_mods
        jf = lambda a, b: w2(jnp, a, b)  # noqa: E731
        jj = jax.jit(lambda a, b, ta, tb: jax.jvp(jf, (a, b), (ta, tb)))
        jargs = [jnp.asarray(a) for a in (x, y, vx, vy)]
        rows["jax jit jvp"] = timeit(lambda: jax.block_until_ready(jj(*jargs)), repeats)
    return f"jvp of W2's f, n={common.fmt_n(n)}, float64", rows, "numgrad jit jvp"


def jacobian_rows(quick, repeats, jax_mods):
    """``ng.autograd.functional.jacobian`` looped (a backward per row) and vectorized (one
    vmap of the vjp), eager, as torch.autograd.functional's two modes."""
    import numgrad as ng
    import torch
    n = 64 if not quick else 16
    rng = np.random.default_rng(3)
    w, x = rng.standard_normal((n, n)) / 8, rng.standard_normal(n)

    def f(m, wt):
        return lambda a: (wt @ (wt @ a).tanh()).sin()

    ref = torch.autograd.functional.jacobian(f(torch, torch.tensor(w)), torch.tensor(x))
    rows = {}
    for vec in (False, True):
        nf, nx = f(ng, ng.tensor(w)), ng.tensor(x)
        got = ng.autograd.functional.jacobian(nf, nx, vectorize=vec)
        assert common.rel_err(got.numpy(), ref.numpy()) < 1e-10
        rows[f"numgrad vectorize={vec}"] = timeit(
            lambda: ng.autograd.functional.jacobian(nf, nx, vectorize=vec), repeats)
        tf, tx = f(torch, torch.tensor(w)), torch.tensor(x)
        rows[f"torch vectorize={vec}"] = timeit(
            lambda: torch.autograd.functional.jacobian(tf, tx, vectorize=vec), repeats)
    return (f"jacobian of sin(W tanh(W x)), {n} x {n}, float64, eager", rows,
            "numgrad vectorize=True")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    threads = common.pin_threads(1, libs=("numba", "torch"))
    jax_mods = None
    if common.system_available("jax jit") is None:
        jax_mods = common.import_jax()
    print(f"threads: {threads}; jax: {'yes' if jax_mods else 'not installed'}")
    for bench in (per_sample, hessian, jvp, jacobian_rows):
        title, rows, ours = bench(args.quick, args.repeats, jax_mods)
        print(f"\n{title}")
        base = rows[ours]
        for name, t in rows.items():
            print(f"  {name:32s} {t * 1e3:10.3f} ms   numgrad / this = {base / t:6.2f}")


if __name__ == "__main__":
    main()

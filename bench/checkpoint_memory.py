"""Peak memory that ``ng.utils.checkpoint`` saves: a deep tanh MLP (width 128, batch 8192,
16 layers, float32: the activations, not the weights, fill memory), forward + backward,
with and without checkpointing each block of four layers, eager and under ``@ng.jit``. The
peak is measured two ways: tracemalloc (NumPy's allocations, what eager mode makes) and the
process's resident high-water mark
(everything, kernels' buffers included).

    python -m bench.checkpoint_memory            # prints a table
    python -m bench.checkpoint_memory --quick    # batch 1024
"""
from __future__ import annotations

import argparse

import numpy as np

import numgrad as ng
from bench.common import peak_rss_delta_mb, traced_peak_mb
from numgrad.utils.checkpoint import checkpoint

DEPTH, BLOCK = 16, 4


def model(width, seed=0):
    rng = np.random.default_rng(seed)
    return [ng.tensor(rng.standard_normal((width, width)).astype(np.float32) / width ** 0.5,
                      requires_grad=True) for _ in range(DEPTH)]


def block(ws):
    def run(t):
        for w in ws:
            t = (t @ w).tanh()
        return t
    return run


def loss_plain(x, ws):
    return block(ws)(x).sum()


def loss_checkpointed(x, ws):
    for k in range(0, DEPTH, BLOCK):
        x = checkpoint(block(ws[k:k + BLOCK]), x, use_reentrant=False)
    return x.sum()


def measure(width, batch):
    ws = model(width)
    x = ng.tensor(np.random.default_rng(1).standard_normal((batch, width)).astype(np.float32))
    variants = {"eager": loss_plain, "eager + checkpoint": loss_checkpointed,
                "jit": ng.jit(loss_plain), "jit + checkpoint": ng.jit(loss_checkpointed)}
    rows, grads = [], {}
    for name, fn in variants.items():
        def step():
            for w in ws:
                w.grad = None
            fn(x, ws).backward()
            return ws[0].grad
        step()  # compile (jit), warm the allocator
        grads[name] = step().numpy().copy()
        rows.append((name, traced_peak_mb(step), peak_rss_delta_mb(step)))
    ref = grads["eager"]
    for name, g in grads.items():
        assert np.allclose(g, ref, rtol=1e-3, atol=1e-4), name
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    width, batch = 128, 1024 if args.quick else 8192
    activations = DEPTH * batch * width * 4 / 2 ** 20
    print(f"tanh MLP, {DEPTH} layers of {width}, batch {batch}, float32 "
          f"(one set of activations: {activations:.1f} MiB)")
    print(f"{'variant':<20} {'tracemalloc peak MiB':>22} {'RSS peak MiB':>14}")
    for name, traced, rss in measure(width, batch):
        rss_s = "n/a" if rss is None else f"{rss:.1f}"
        print(f"{name:<20} {traced:>22.1f} {rss_s:>14}")


if __name__ == "__main__":
    main()

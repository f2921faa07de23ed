"""Train a small MLP on scikit-learn's digits over a 2-worker Dask cluster.

    pip install -e ".[distributed]" scikit-learn
    python examples/train_digits_distributed.py

Each step cuts a mini-batch of 256 images into one shard per worker; each worker runs
the compiled ``value_and_grad`` of the loss on its shard, and the gradients come back
added in a fixed order, equal to the full mini-batch's gradient. The update is a
hand-written SGD on plain tensors.
"""
from __future__ import annotations

import time

import numpy as np

import numgrad as ng

F = ng.nn.functional
STEPS, BATCH, HIDDEN, LR = 150, 256, 64, 0.5


def loss(params, X, T):
    """Cross-entropy of a 64-HIDDEN-10 relu MLP; a mean over the rows of X."""
    W1, b1, W2, b2 = params
    return F.cross_entropy(F.linear(F.relu(F.linear(X, W1, b1)), W2, b2), T)


def accuracy(params, X, T):
    W1, b1, W2, b2 = params
    with ng.no_grad():
        logits = F.linear(F.relu(F.linear(ng.tensor(X), W1, b1)), W2, b2)
    return float((logits.numpy().argmax(1) == T).mean())


def main():
    from distributed import Client, LocalCluster
    from sklearn.datasets import load_digits   # bundled with scikit-learn: no download

    d = load_digits()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(d.target))
    X = (d.data[order] / 16.0).astype(np.float32)
    T = d.target[order].astype(np.int64)
    train, test = slice(0, 1500), slice(1500, None)
    params = [ng.tensor((rng.standard_normal((HIDDEN, 64)) / 8.0).astype(np.float32)),
              ng.zeros(HIDDEN),
              ng.tensor((rng.standard_normal((10, HIDDEN)) / HIDDEN ** 0.5).astype(np.float32)),
              ng.zeros(10)]

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        # argnums=0: the list of parameters (any pytree of tensors works);
        # shard_argnums=(1, 2): images and labels are split along axis 0.
        dp = ng.distributed.data_parallel(loss, argnums=0, shard_argnums=(1, 2),
                                          reduction="mean", client=client, timeout=120)
        t0 = time.perf_counter()
        for step in range(STEPS):
            i = (step * BATCH) % (1500 - BATCH)
            value, grads = dp(params, X[i:i + BATCH], T[i:i + BATCH])
            # The optimiser. With ng.nn / ng.optim this line becomes
            #     dp.backward(list(model.parameters()), Xb, Tb); opt.step(); opt.zero_grad()
            # (dp.backward accumulates each gradient into p.grad, as loss.backward() does).
            params = [p - LR * g for p, g in zip(params, grads)]
            if step % 25 == 0 or step == STEPS - 1:
                print(f"step {step:3d}  loss {value.item():.4f}")
        seconds = time.perf_counter() - t0
        print(f"{STEPS} steps in {seconds:.1f} s ({1e3 * seconds / STEPS:.0f} ms a step, "
              f"{dp.last_step['shards']} shards, {dp.last_step['param_bytes']} parameter "
              f"bytes out and {dp.last_step['result_bytes']} gradient bytes back a step)")
        print(f"test accuracy {accuracy(params, X[test], T[test]):.3f}")
        print("per-worker compile counters:", {w: [(s["traces"], s["compiled"]) for s in rows]
                                               for w, rows in dp.worker_stats().items()})


if __name__ == "__main__":
    main()

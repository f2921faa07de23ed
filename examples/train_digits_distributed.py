"""Train an MLP on scikit-learn's digits over a 2-worker Dask cluster, the PyTorch way.

    pip install -e ".[distributed]" scikit-learn
    python examples/train_digits_distributed.py [--steps 150] [--workers 2]

The model is an ``ng.nn.Sequential`` and the optimizer ``ng.optim.SGD`` with momentum.
Each step cuts a mini-batch of 256 images into one shard per worker; each worker runs
the compiled ``value_and_grad`` of the loss on its shard, the gradients come back added
in a fixed order (equal to the full mini-batch's), and ``dp.backward`` accumulates them
into each parameter's ``.grad`` as ``loss.backward()`` would, for ``opt.step()``.

The workers run the model with the step's parameters in place of their own
(``with_parameters``, what ``torch.func.functional_call`` does): the parameters travel
as tensors, once a step, and only their gradients come back.
"""
from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

import numgrad as ng

nn = ng.nn
BATCH, HIDDEN = 256, 64


def build():
    """The architecture: 64 pixels -> HIDDEN -> 10 digits."""
    return nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))


MODEL = build()                   # what the workers run (its own weights are never read)
CRITERION = nn.CrossEntropyLoss()


@contextlib.contextmanager
def with_parameters(model, params):
    """``model`` with the tensors ``params`` (``{name: tensor}``, named as
    ``model.named_parameters()`` names them) in place of its own parameters."""
    slots = [(model.get_submodule(name.rpartition(".")[0]), name.rpartition(".")[2])
             for name in params]
    own = [m._parameters[k] for m, k in slots]
    for (m, k), t in zip(slots, params.values()):
        m._parameters[k] = t
    try:
        yield model
    finally:
        for (m, k), p in zip(slots, own):
            m._parameters[k] = p


def loss(params, X, T):
    """The mean cross-entropy over the rows of ``X`` of MODEL with ``params``."""
    with with_parameters(MODEL, params) as model:
        return CRITERION(model(X), T)


def data():
    """Digits scaled to [0, 1], shuffled once: 1,500 to train, the rest to test."""
    from sklearn.datasets import load_digits   # bundled with scikit-learn: no download
    d = load_digits()
    order = np.random.default_rng(0).permutation(len(d.target))
    X = (d.data[order] / 16.0).astype(np.float32)
    T = d.target[order].astype(np.int64)
    return (X[:1500], T[:1500]), (X[1500:], T[1500:])


def batches(X, T, steps):
    for step in range(steps):
        i = (step * BATCH) % (len(X) - BATCH)
        yield X[i:i + BATCH], T[i:i + BATCH]


def train(dp, steps, log=print):
    """``steps`` SGD steps of a fresh model (seed 0) with gradients from ``dp``: the
    losses, the test accuracy and the model."""
    (X, T), (Xt, Tt) = data()
    ng.manual_seed(0)
    model = build()
    opt = ng.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step, (Xb, Tb) in enumerate(batches(X, T, steps)):
        opt.zero_grad()
        # Fills p.grad for every parameter of the model (the dict's values), as
        # loss(...).backward() would, from the shards' gradients added in a fixed order.
        value = dp.backward(dict(model.named_parameters()), Xb, Tb)
        opt.step()
        losses.append(value.item())
        if step % 25 == 0 or step == steps - 1:
            log(f"step {step:3d}  loss {losses[-1]:.4f}")
    model.eval()
    with ng.no_grad():
        accuracy = float((model(ng.tensor(Xt)).numpy().argmax(1) == Tt).mean())
    return losses, accuracy, model


def main(argv=None, client=None):
    """Train; a ``distributed.Client`` may be given (else a ``LocalCluster`` of worker
    processes is started). Returns ``{"losses", "accuracy", "last_step", "workers"}``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    with contextlib.ExitStack() as stack:
        if client is None:
            cluster = stack.enter_context(LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True,
                dashboard_address=":0"))
            client = stack.enter_context(Client(cluster))
        # argnums=0: the parameters (a dict of tensors; any pytree works);
        # shard_argnums=(1, 2): images and labels are split along axis 0.
        dp = ng.distributed.data_parallel(loss, argnums=0, shard_argnums=(1, 2),
                                          reduction="mean", client=client, timeout=120)
        t0 = time.perf_counter()
        losses, accuracy, _ = train(dp, args.steps)
        seconds = time.perf_counter() - t0
        step = dp.last_step
        print(f"{args.steps} steps in {seconds:.1f} s ({1e3 * seconds / args.steps:.0f} ms a "
              f"step, {step['shards']} shards, {step['param_bytes']} parameter bytes out and "
              f"{step['result_bytes']} gradient bytes back a step)")
        print(f"test accuracy {accuracy:.3f}")
        workers = {w: [(s["traces"], s["compiled"]) for s in rows]
                   for w, rows in dp.worker_stats().items()}
        print("per-worker (traces, kernels compiled):", workers)
    return {"losses": losses, "accuracy": accuracy, "last_step": step, "workers": workers}


if __name__ == "__main__":
    main()

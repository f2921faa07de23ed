"""What a training loop compiles: traces, compiles and compile seconds of a jitted step.

Run from a checkout root: ``NUMBA_NUM_THREADS=2 python -m bench.train_loop [--epochs 3]``.

The loop: an MLP 64 -> 128 -> 10 (relu, cross-entropy) on scikit-learn's bundled digits
(1,797 images, no download), float32, ``DataLoader(batch_size=64, shuffle=True)`` with
``drop_last=False`` (1,797 = 28 * 64 + 5: every epoch ends with a batch of 5), and a
cosine learning-rate schedule passed into the jitted step as a Python float, a new value
every step. Two steps are measured, each with a fresh disk cache (a cold start):

- ``step``: ``ng.jit`` of a function that takes the parameters, the batch and ``lr`` and
  returns the loss and the updated parameters (``ng.value_and_grad`` inside);
- ``loss``: ``ng.jit`` of ``lr``-weighted cross-entropy, called then ``.backward()``,
  then an eager ``no_grad`` update (the PyTorch habit path).

Prints, per step kind, the function's ``stats`` (traces, compiles, compile seconds) after
the first epoch's first batch and at the end of each epoch, the loop's wall time and the
slowest call, and the final loss (checked against the same loop run eagerly).
``--no-mark`` clears the DataLoader's mark on the batches (dim 0 varies), to see what the
partial last batch costs without it. ``--label-smoothing 0.1`` adds a mean over the batch
to the loss (cross-entropy over class indices alone divides a sum by a sum): the
backward then divides by the batch size, a constant the generic plan reads at run time.
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np

import numgrad as ng
from numgrad.utils.data import DataLoader, TensorDataset

F = ng.nn.functional
HIDDEN, BATCH, LR = 128, 64, 0.5
SMOOTHING = 0.0   # --label-smoothing


def data():
    from sklearn.datasets import load_digits
    d = load_digits()
    return TensorDataset(ng.from_numpy((d.data / 16.0).astype(np.float32)),
                         ng.from_numpy(d.target.astype(np.int64)))


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(HIDDEN, 64), (HIDDEN,), (10, HIDDEN), (10,)]
    return [ng.from_numpy((rng.standard_normal(s) / np.sqrt(s[-1]) if len(s) == 2
                           else np.zeros(s)).astype(np.float32)) for s in shapes]


def loss_of(W1, b1, W2, b2, X, T):
    return F.cross_entropy(F.linear(F.relu(F.linear(X, W1, b1)), W2, b2), T,
                           label_smoothing=SMOOTHING)


def sgd_step(W1, b1, W2, b2, X, T, lr):
    value, grads = ng.value_and_grad(loss_of, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, X, T)
    return (value,) + tuple(p - lr * g for p, g in zip((W1, b1, W2, b2), grads))


def weighted_loss(W1, b1, W2, b2, X, T, lr):
    return lr * loss_of(W1, b1, W2, b2, X, T)


def schedule(step, total):
    return 0.5 * LR * (1 + math.cos(math.pi * step / total))


def run(kind, epochs, jit=True, mark=True):
    """Train; returns (final loss, seconds, slowest call in seconds)."""
    ng.manual_seed(0)
    loader = DataLoader(data(), batch_size=BATCH, shuffle=True, drop_last=False)
    params = init_params()
    total = epochs * len(loader)
    fn = sgd_step if kind == "step" else weighted_loss
    f = ng.jit(fn) if jit else fn
    step, slowest, t0, value = 0, 0.0, time.perf_counter(), None
    for epoch in range(epochs):
        for X, T in loader:
            if not mark:
                X._ng_dynamic = T._ng_dynamic = None
            lr = schedule(step, total)
            t1 = time.perf_counter()
            if kind == "step":
                value, *params = f(*params, X, T, lr)
            else:
                ps = [p.requires_grad_(True) for p in params]
                value = f(*ps, X, T, lr)
                value.backward()
                with ng.no_grad():
                    params = [p - p.grad for p in ps]
            slowest = max(slowest, time.perf_counter() - t1)
            step += 1
            if jit and step == 1:
                print(f"  {kind}: after the first batch   {_stats(f.stats)}")
        if jit:
            print(f"  {kind}: after epoch {epoch + 1}          {_stats(f.stats)}")
    return float(value), time.perf_counter() - t0, slowest


def _stats(s):
    return (f"traces={s.traces} compiles={s.compiles} "
            f"compile_seconds={s.compile_seconds:.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--kind", choices=("step", "loss", "both"), default="both")
    p.add_argument("--no-mark", action="store_true", help="clear the batches' dim-0 mark")
    p.add_argument("--label-smoothing", type=float, default=0.0,
                   help="cross-entropy's label smoothing (a mean over the batch)")
    args = p.parse_args(argv)
    global SMOOTHING
    SMOOTHING = args.label_smoothing
    print(f"numgrad {ng.__file__}, NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}, "
          f"{args.epochs} epochs of {len(DataLoader(data(), batch_size=BATCH))} batches, "
          f"label smoothing {SMOOTHING}")
    for kind in (("step", "loss") if args.kind == "both" else (args.kind,)):
        want, eager_s, _ = run(kind, args.epochs, jit=False)
        os.environ["NUMGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="numgrad-train-loop-")
        got, secs, slowest = run(kind, args.epochs, mark=not args.no_mark)
        print(f"  {kind}: loop {secs:.2f} s (eager {eager_s:.2f} s), slowest call "
              f"{slowest:.2f} s, final loss {got:.6f} (eager {want:.6f})")


if __name__ == "__main__":
    main()

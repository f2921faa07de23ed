"""Train a small MLP on scikit-learn's bundled digits (8x8 images, 10 classes, no download),
written as a PyTorch script would be: ``nn.Module``, ``optim.Adam``, a ``DataLoader``.

    python examples/train_mlp.py              # eager, then with @ng.jit
    python examples/train_mlp.py --jit --epochs 20
    python examples/train_mlp.py --eager --steps 50

Under ``--jit`` the loss (forward and backward) is one compiled plan that reads the model's
parameters as implicit inputs; ``optimizer.step()`` runs eagerly after it, as it must (it
updates the parameters in place, outside the traced graph). A tqdm progress bar is shown
when tqdm is installed, plain progress lines otherwise.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import numgrad as ng
from numgrad import nn
from numgrad.utils.data import DataLoader, TensorDataset


WARM_STEPS = 3  # steps timed apart: the jit's compiles happen in its first two


def load_digits_split(seed: int = 0, test_fraction: float = 0.2):
    """(train, test) TensorDatasets of scaled float32 pixels and int64 labels."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (TensorDataset(ng.from_numpy(x[train]), ng.from_numpy(y[train])),
            TensorDataset(ng.from_numpy(x[test]), ng.from_numpy(y[test])))


class MLP(nn.Module):
    """64 -> hidden -> hidden -> 10 with ReLU."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)


def _progress(total, desc):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, leave=False, file=sys.stdout)


def accuracy(model, dataset) -> float:
    """The fraction of ``dataset`` that ``model`` classifies right (eval mode, no grad)."""
    model.eval()
    x, y = dataset.tensors
    with ng.no_grad():
        pred = ng.argmax(model(x), dim=1)
    model.train()
    return float((pred == y).to(ng.float32).mean())


def train(mode: str, args) -> dict:
    """Train one model in ``mode`` ("eager" or "jit"); returns losses, accuracy, seconds."""
    ng.manual_seed(args.seed)
    train_set, test_set = load_digits_split(args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    model = MLP(args.hidden)
    optimizer = ng.optim.Adam(model.parameters(), lr=args.lr)
    total = args.steps if args.steps else args.epochs * len(loader)
    scheduler = ng.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total)
    loss_fn = nn.CrossEntropyLoss()

    def compute_loss(x, y):
        return loss_fn(model(x), y)

    # drop_last keeps every batch the same shape, so the jitted loss compiles once.
    step_loss = ng.jit(compute_loss) if mode == "jit" else compute_loss
    bar = _progress(total, mode) if not args.no_progress else None
    losses, step, t0 = [], 0, time.perf_counter()
    stamps = [t0]
    while step < total:
        for x, y in loader:
            optimizer.zero_grad()
            loss = step_loss(x, y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(float(loss))
            step += 1
            stamps.append(time.perf_counter())
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.4f}")
            elif not args.no_progress and (step % max(1, total // 10) == 0 or step == total):
                print(f"{mode}: step {step}/{total}  loss {losses[-1]:.4f}", flush=True)
            if step == total:
                break
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - t0
    # Under --jit the first steps trace and compile (the first call compiles the loss, a
    # later one its one-pass forward + backward): timed apart from the steady steps, whose
    # median is the speed a longer run keeps.
    warm = min(WARM_STEPS, step - 1)
    first = stamps[warm] - t0
    steady = float(np.median(np.diff(stamps[warm:]))) if step > warm else float("nan")
    acc = accuracy(model, test_set)
    what = "trace + compile" if mode == "jit" else "warm-up"
    print(f"{mode}: first {warm} steps ({what}) {first:.2f} s, then {step - warm} steps at "
          f"{steady * 1e3:.2f} ms/step (median); final loss {losses[-1]:.4f}, "
          f"test accuracy {acc:.3f}")
    return {"losses": losses, "accuracy": acc, "seconds": seconds, "first_seconds": first,
            "step_seconds": steady}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = p.add_mutually_exclusive_group()
    group.add_argument("--eager", action="store_const", dest="mode", const="eager",
                       help="train eagerly only")
    group.add_argument("--jit", action="store_const", dest="mode", const="jit",
                       help="train with the loss under @ng.jit only")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps "
                   "(overrides --epochs)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    """Run the modes asked for; returns ``{mode: result}``."""
    args = parse_args(argv)
    modes = [args.mode] if args.mode else ["eager", "jit"]
    results = {mode: train(mode, args) for mode in modes}
    if len(results) == 2:
        e, j = results["eager"]["step_seconds"], results["jit"]["step_seconds"]
        print(f"steady steps: jit {e / j:.1f}x eager's speed; the jit's first steps paid "
              f"{results['jit']['first_seconds']:.2f} s once (a later run loads its kernels "
              "from the disk cache)")
    return results


if __name__ == "__main__":
    main()

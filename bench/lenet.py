"""LeNet-5 training step: numgrad eager, ``@ng.jit`` + ``.backward()`` and
``jit(value_and_grad)`` against torch eager and ``torch.compile``, ratios in one run.

Run from a checkout root: ``python -m bench.lenet [--repeats 30] [--plot PATH]``.

The step: batch 64 of 1x28x28 float32 images, conv(1->6, 5x5, pad 2) -> relu -> maxpool 2
-> conv(6->16, 5x5) -> relu -> maxpool 2 -> flatten 400 -> 120 -> relu -> 84 -> relu -> 10,
cross-entropy over int64 labels, the gradients of all ten parameters and an SGD update
(lr 0.01) in place. One thread for every system (``bench.common.pin_threads``). Each
system starts from the same weights and batch; the losses after the timed steps are
compared, so a system that computes something else shows it. Prints the median step time
of each system over ``--repeats`` timed steps, the systems taking turns step by step
(after warm-up steps that include the compiles), and its ratio to torch eager (and the
fastest step's, and the median CPU time's: both steadier where other processes share the
cores); draws the medians as bars into ``--plot`` and the table beside it (``.txt``).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench import common

BATCH, LR = 64, 0.01
SHAPES = {"c1w": (6, 1, 5, 5), "c1b": (6,), "c2w": (16, 6, 5, 5), "c2b": (16,),
          "f1w": (120, 400), "f1b": (120,), "f2w": (84, 120), "f2b": (84,),
          "f3w": (10, 84), "f3b": (10,)}
NAMES = tuple(SHAPES)


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    data = {}
    for k, s in SHAPES.items():  # PyTorch's default bounds: U(+-1/sqrt(fan_in))
        fan_in = int(np.prod(SHAPES[k[:-1] + "w"][1:]))
        data[k] = rng.uniform(-1, 1, s).astype(np.float32) / np.float32(np.sqrt(fan_in))
    data["X"] = rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32)
    data["T"] = rng.integers(0, 10, BATCH).astype(np.int64)
    return data


def lenet_loss(F, c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b, X, T):
    """The same code for torch and numgrad: ``F`` is either's ``nn.functional``."""
    h = F.max_pool2d(F.relu(F.conv2d(X, c1w, c1b, padding=2)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, c2w, c2b)), 2)
    h = h.reshape(h.shape[0], -1)
    h = F.relu(F.linear(h, f1w, f1b))
    h = F.relu(F.linear(h, f2w, f2b))
    return F.cross_entropy(F.linear(h, f3w, f3b), T)


def _backward_step(lib, loss_fn, data):
    params = [lib.tensor(data[k]).requires_grad_(True) for k in NAMES]
    X, T = lib.tensor(data["X"]), lib.tensor(data["T"])

    def step():
        for p in params:
            p.grad = None
        loss = loss_fn(*params, X, T)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=LR)
        return loss
    return step


def numgrad_eager(data):
    import numgrad as ng
    return _backward_step(ng, lambda *a: lenet_loss(ng.nn.functional, *a), data)


def numgrad_jit(data):
    import numgrad as ng
    jitted = ng.jit(lambda *a: lenet_loss(ng.nn.functional, *a))
    return _backward_step(ng, jitted, data)


def numgrad_jit_vg(data):
    import numgrad as ng
    vg = ng.jit(ng.value_and_grad(lambda *a: lenet_loss(ng.nn.functional, *a),
                                  argnums=tuple(range(len(NAMES)))))
    params = [ng.tensor(data[k]) for k in NAMES]
    X, T = ng.tensor(data["X"]), ng.tensor(data["T"])

    def step():
        loss, grads = vg(*params, X, T)
        with ng.no_grad():
            for p, g in zip(params, grads):
                p.sub_(g, alpha=LR)
        return loss
    return step


def torch_eager(data):
    torch = common.import_torch()
    return _backward_step(torch, lambda *a: lenet_loss(torch.nn.functional, *a), data)


def torch_compile(data):
    torch = common.import_torch()
    compiled = common.torch_compile_fresh(lambda *a: lenet_loss(torch.nn.functional, *a))
    return _backward_step(torch, compiled, data)


SYSTEMS = {"torch eager": torch_eager, "torch.compile": torch_compile,
           "numgrad eager": numgrad_eager, "numgrad jit + backward": numgrad_jit,
           "numgrad jit(value_and_grad)": numgrad_jit_vg}


def measure(builders, repeats, warmup):
    """``{name: (median seconds, final loss, fastest seconds, median CPU seconds)}``. The
    systems take turns, one step each per round (each round starting with the next
    system), so a load change on a shared machine falls on all of them alike. The CPU time (``time.process_time``: this process, one thread)
    leaves out the time the process waits for a core, which wall time on a busy machine
    does not."""
    steps, times, cpu, losses = {}, {}, {}, {}
    for name, build in builders.items():
        try:
            step = build(make_data())
            for _ in range(warmup):
                step()
        except Exception as e:  # noqa: BLE001 (torch.compile may be unusable here)
            print(f"{name}: unavailable ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
            continue
        steps[name], times[name], cpu[name] = step, [], []
    order = list(steps)
    for r in range(repeats):
        # each round starts one system later: a step runs measurably faster after another
        # numgrad step than after torch's (7.8 against 8.6 ms CPU for jit + .backward(),
        # 2026-12-06), so a fixed order would favour whichever came after numgrad's others
        for name in order[r % len(order):] + order[:r % len(order)]:
            step = steps[name]
            c0, t0 = time.process_time(), time.perf_counter()
            losses[name] = step()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: (statistics.median(times[name]), float(losses[name].detach()),
                   min(times[name]), statistics.median(cpu[name])) for name in steps}


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(results)
    ms = [results[n][0] * 1e3 for n in names]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    bars = ax.barh(names[::-1], ms[::-1], color="#4c72b0")
    base = results.get("torch eager", (None,))[0]
    for b, n in zip(bars, names[::-1]):
        label = f"{results[n][0] * 1e3:.2f} ms"
        if base:
            label += f"  ({results[n][0] / base:.2f}x torch eager)"
        ax.text(b.get_width(), b.get_y() + b.get_height() / 2, " " + label, va="center",
                fontsize=8)
    ax.set_xlabel("median step time (ms), 1 thread")
    ax.set_title(f"LeNet-5 training step, batch {BATCH}, 1x28x28 float32")
    ax.set_xlim(0, max(ms) * 1.6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--plot", default="bench/results/lenet.png")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    args = p.parse_args(argv)
    common.pin_threads(1)
    results = measure({n: SYSTEMS[n] for n in args.systems.split(",")}, args.repeats,
                      args.warmup)
    base, _, fast, base_cpu = results.get("torch eager", (None,) * 4)
    lines = [f"{'system':28s} {'median ms':>9s} {'ratio':>6s} {'fastest ms':>10s} "
             f"{'ratio':>6s} {'CPU ms':>7s} {'ratio':>6s} {'final loss':>10s}"]
    for name, (t, loss, best, c) in results.items():
        ratios = [f"{a / b:.2f}x" if b else "-" for a, b in ((t, base), (best, fast),
                                                              (c, base_cpu))]
        lines.append(f"{name:28s} {t * 1e3:9.2f} {ratios[0]:>6s} {best * 1e3:10.2f} "
                     f"{ratios[1]:>6s} {c * 1e3:7.2f} {ratios[2]:>6s} {loss:10.6f}")
    print("\n".join(lines))
    if args.plot:
        print("plot:", plot(results, args.plot))
        with open(args.plot.rsplit(".", 1)[0] + ".txt", "w") as fh:  # the table beside it
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

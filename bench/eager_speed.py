"""Eager numgrad against eager PyTorch where the framework's own cost is the cost: small
tensors, 1 thread, the two interleaved in one run (ratios, not absolute times, are the
result). The cases are the ones a user types into Jupyter and a small training step.

    python -m bench.eager_speed [--rounds 7] [--plot bench/results/eager_speed.png] [--ceiling]
        [--cuda]  (NUMBA_ENABLE_CUDASIM=1 without a GPU)

Prints median microseconds per call, the ratio numgrad/torch per case and their geometric
mean; ``--plot`` draws the ratios. Goals: geometric mean <= 1.5 (aim 1.0), MLP step <= 1.5.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import time

# One thread on both sides: torch.set_num_threads(1) below, and NumPy's BLAS (OpenBLAS's
# threads spin, so on a busy 2-core machine a 64x64 matmul could take milliseconds).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402  (after the thread settings)


def _cases(lib, F):
    """name -> (setup() -> state, call(state)) for one library (numgrad or torch)."""
    rng = np.random.default_rng(0)
    a10 = rng.standard_normal(10).astype(np.float32)
    b10 = rng.standard_normal(10).astype(np.float32)
    X = rng.standard_normal((32, 64)).astype(np.float32)
    W1 = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    W2 = (rng.standard_normal((64, 10)) * 0.1).astype(np.float32)
    Y = rng.integers(0, 10, 32)
    layers = [((rng.standard_normal((16, 16)) * 0.2).astype(np.float32),
               np.zeros(16, np.float32)) for _ in range(8)]

    def t(a, grad=False):
        return lib.tensor(a, requires_grad=grad)

    def add():
        x, y = t(a10, True), t(b10)
        return lambda: x + y

    def chain_fwd():
        x, y = t(a10, True), t(b10)
        return lambda: ((x * y).sin() + x).exp().sum()

    def chain_fwd_bwd():
        x, y = t(a10, True), t(b10)

        def call():
            x.grad = None
            ((x * y).sin() + x).exp().sum().backward()
        return call

    def no_grad():
        x, y = t(a10, True), t(b10)

        def call():
            with lib.no_grad():
                return ((x * y).sin() + x).exp().sum()
        return call

    def mlp_step():
        x, w1, w2, y = t(X), t(W1, True), t(W2, True), lib.tensor(Y)

        def call():
            w1.grad = w2.grad = None
            F.cross_entropy((x @ w1).relu() @ w2, y).backward()
        return call

    def linear_loop():
        x = t(X[:4, :16])
        ws = [(t(w, True), t(b, True)) for w, b in layers]

        def call():
            h = x
            for w, b in ws:
                h = F.linear(h, w, b).clamp(-1, 1)
            return h
        return call

    def train_step():
        # The PyTorch habit: a Module, an optimizer, zero_grad / loss / backward / step.
        gen = np.random.default_rng(1)
        model = lib.nn.Sequential(lib.nn.Linear(64, 128), lib.nn.ReLU(), lib.nn.Linear(128, 10))
        with lib.no_grad():
            for p in model.parameters():
                p.copy_(lib.tensor(gen.standard_normal(tuple(p.shape)).astype(np.float32) * 0.1))
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        x, y = t(np.resize(X, (64, 64))), lib.tensor(np.resize(Y, 64))

        def call():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return call

    return {"x + y, 10 elements, x requires grad": add,
            "((x*y).sin() + x).exp().sum() forward": chain_fwd,
            "the same, forward + backward": chain_fwd_bwd,
            "the same under no_grad": no_grad,
            "MLP step: cross_entropy((X@W1).relu()@W2) + backward, 32x64": mlp_step,
            "8 Linear(16,16)+clamp layers, forward": linear_loop,
            "train step: MLP 64-128-10, SGD, batch 64 (nn + optim)": train_step}


def _per_call(call, seconds=0.05):
    n, t0 = 0, time.perf_counter()
    while True:
        call()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return dt / n


def run(rounds=7):
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    import torch
    import torch.nn.functional as TF

    import numgrad as ng
    import numgrad.nn.functional as NF
    torch.set_num_threads(1)
    ng_cases, torch_cases = _cases(ng, NF), _cases(torch, TF)
    rows = []
    for name in ng_cases:
        a, b = ng_cases[name](), torch_cases[name]()
        for _ in range(20):  # warm both
            a(), b()
        ta, tb = [], []
        for _ in range(rounds):  # interleaved: drift on a shared machine hits both alike
            ta.append(_per_call(a))
            tb.append(_per_call(b))
        rows.append((name, statistics.median(ta), statistics.median(tb)))
    geo = math.exp(statistics.fmean(math.log(a / b) for _, a, b in rows))
    print(f"{'call':64s} {'torch':>9s} {'numgrad':>9s} {'ratio':>6s}")
    for name, a, b in rows:
        print(f"{name:64s} {b * 1e6:7.1f}us {a * 1e6:7.1f}us {a / b:5.2f}x")
    print(f"geometric mean of the ratios: {geo:.2f}x (goal <= 1.5x); 1 thread, median of "
          f"{rounds} interleaved rounds")
    return rows, geo


def ceiling(rounds=5):
    """What a lazy eager mode (record the ops, compile them as a plan on ``backward()``) could
    win on the MLP step, bounded by measurement: it must still dispatch every forward op in
    Python (the ``no_grad`` forward), and at best runs the backward as ``@ng.jit`` on the loss
    does; NumPy by hand is the floor of the kernels themselves."""
    import torch
    import torch.nn.functional as TF

    import numgrad as ng
    import numgrad.nn.functional as NF
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((32, 64)).astype(np.float32)
    W1 = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    W2 = (rng.standard_normal((64, 10)) * 0.1).astype(np.float32)
    Y = rng.integers(0, 10, 32)
    x, w1, w2, y = ng.tensor(X), ng.tensor(W1, requires_grad=True), \
        ng.tensor(W2, requires_grad=True), ng.tensor(Y)
    tx, tw1, tw2, ty = torch.tensor(X), torch.tensor(W1, requires_grad=True), \
        torch.tensor(W2, requires_grad=True), torch.tensor(Y)

    @ng.jit
    def loss(x, w1, w2, y):
        return NF.cross_entropy((x @ w1).relu() @ w2, y)

    def eager():
        w1.grad = w2.grad = None
        NF.cross_entropy((x @ w1).relu() @ w2, y).backward()

    def forward_no_grad():
        with ng.no_grad():
            NF.cross_entropy((x @ w1).relu() @ w2, y)

    def jitted():
        w1.grad = w2.grad = None
        loss(x, w1, w2, y).backward()

    def torch_eager():
        tw1.grad = tw2.grad = None
        TF.cross_entropy((tx @ tw1).relu() @ tw2, ty).backward()

    rows = np.arange(32)

    def numpy_by_hand():
        h = X @ W1
        r = np.maximum(h, 0)
        z = r @ W2
        s = z - z.max(1, keepdims=True)
        lp = s - np.log(np.exp(s).sum(1, keepdims=True))
        g = np.exp(lp)
        g[rows, Y] -= 1
        g /= 32
        return -lp[rows, Y].mean(), X.T @ np.where(h <= 0, 0, g @ W2.T), r.T @ g

    cases = {"torch eager": torch_eager, "numgrad eager": eager,
             "numgrad forward under no_grad": forward_no_grad,
             "numgrad @ng.jit loss + backward": jitted, "NumPy by hand": numpy_by_hand}
    for f in cases.values():
        for _ in range(3):
            f()
    times = {k: [] for k in cases}
    for _ in range(rounds):
        for k, f in cases.items():
            times[k].append(_per_call(f))
    base = statistics.median(times["torch eager"])
    print("MLP step, what a lazy eager mode could win (median us, ratio to torch eager):")
    for k, v in times.items():
        m = statistics.median(v)
        print(f"  {k:34s} {m * 1e6:7.1f}us {m / base:5.2f}x")


@contextlib.contextmanager
def _sim_launches_and_copies():
    """Kernel launches and host<->device copies while active, counted on Numba's simulator
    classes (a device function called inside a kernel is no launch). Yields the counts."""
    from unittest import mock
    from numba import cuda
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    counts = {"launches": 0, "copies": 0}
    call = FakeCUDAKernel.__call__

    def launch(self, *a, **k):
        counts["launches"] += not self._device
        return call(self, *a, **k)

    def copying(fn):
        def wrapper(*a, **k):
            counts["copies"] += 1
            return fn(*a, **k)
        return wrapper
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(FakeCUDAKernel, "__call__", launch))
        for name in ("copy_to_host", "copy_to_device"):
            stack.enter_context(mock.patch.object(FakeCUDAArray, name,
                                                  copying(getattr(FakeCUDAArray, name))))
        stack.enter_context(mock.patch.object(cuda, "to_device", copying(cuda.to_device)))
        yield counts


def cuda_table():
    """Structural counters of eager CUDA calls (``ng.cuda.memory_stats`` deltas and, under
    the simulator (``NUMBA_ENABLE_CUDASIM=1``), kernel launches and host<->device copies over
    one warm call)."""
    import numgrad as ng
    import numgrad.nn.functional as NF
    if not ng.cuda.is_available():
        print("CUDA counters: no device (run with NUMBA_ENABLE_CUDASIM=1)")
        return
    rng = np.random.default_rng(0)
    x = ng.tensor(rng.standard_normal(10).astype(np.float32)).cuda().requires_grad_()
    y = ng.tensor(rng.standard_normal(10).astype(np.float32)).cuda()
    logits = ng.tensor(rng.standard_normal((4, 3)).astype(np.float32)).cuda().requires_grad_()
    target = ng.tensor(np.array([0, 2, 1, 0])).cuda()
    cases = {"x + y": lambda: x + y, "x.sin()": lambda: x.sin(),
             "(x * y).sum()": lambda: (x * y).sum(),
             "(x * y).sum().backward()": lambda: (x * y).sum().backward(),
             "cross_entropy(4x3) + backward": lambda: NF.cross_entropy(logits, target).backward()}
    keys = ("allocs", "cache_hits", "device_mallocs", "frees")
    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    extra = ("launches", "copies") if simulated else ()
    print(f"CUDA eager, one warm call: {'call':34s} "
          + " ".join(f"{k:>14s}" for k in keys + extra))
    for name, f in cases.items():
        f()
        f()  # compiled and cached: what a loop pays from then on
        with (_sim_launches_and_copies() if simulated else contextlib.nullcontext({})) as n:
            before = ng.cuda.memory_stats()
            f()
            after = ng.cuda.memory_stats()
        print(f"{'':27s}{name:34s} " + " ".join(f"{after[k] - before[k]:14d}" for k in keys)
              + "".join(f" {n[k]:14d}" for k in extra))


def plot(rows, geo, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    names = [n.split(":")[0][:40] for n, _, _ in rows]
    ratios = [a / b for _, a, b in rows]
    bars = ax.barh(names, ratios, color="#1c7ed6")
    ax.bar_label(bars, labels=[f"{r:.2f}x" for r in ratios], fontsize=8, padding=2)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.axvline(1.5, color="#e67700", lw=1, ls="--", label="goal 1.5x")
    ax.invert_yaxis()
    ax.set_xlabel("numgrad eager time / torch eager time (lower is better), 1 thread")
    ax.set_title(f"Eager overhead on small tensors: geometric mean {geo:.2f}x")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--plot", metavar="PNG")
    p.add_argument("--ceiling", action="store_true",
                   help="also bound what a lazy eager mode could win on the MLP step")
    p.add_argument("--cuda", action="store_true",
                   help="also print eager CUDA calls' allocator counters")
    args = p.parse_args()
    rows, geo = run(args.rounds)
    if args.plot:
        print("plot:", plot(rows, geo, args.plot))
    if args.ceiling:
        ceiling(args.rounds)
    if args.cuda:
        cuda_table()

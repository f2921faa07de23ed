"""500 distinct shapes of W2's function, and what a shape-generic plan costs per call.

Run: python bench/shape_sweep.py [--shapes 500] [--steady]

Sweep: ``jit(value_and_grad(w2))`` called twice at each of N distinct vector lengths
(spread over 10 ... 400,000, both sides of the prange threshold), each result checked
against NumPy. The first length gets a static-extent plan; the second, of the same rank,
makes the function shape-generic (backends.cpu.renderer.Extents), and every later length traces
again but reuses the generic kernels. Prints traces, ``stats.compiles`` (plans that
needed kernels this function had not compiled), the kernel modules Numba compiled in
the process, the time, and RSS growth (from the first call on) with a fresh disk cache.

--steady: per-call time of a static plan and of the generic plan at the same shape, for
W2 (value_and_grad; and its mean instead of its sum, called then ``.backward()``, whose
backward divides by n: a literal in the static plan, an input of the generic one), W4
(the 600-op chain, value_and_grad), W3 (the 784-512-10 MLP at batch 256, called then
``.backward()``: its NLL mean, and an MSE against one-hot targets, a mean over the batch)
and the digits MLP's training step of ``bench/train_loop.py`` at its batch of 64
(``step``: value_and_grad and the SGD update in one call; ``loss``: ``f(x).backward()``,
the habit path): medians, the two plans' calls alternating so that the machine's load
drifts equally on both.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("NUMGRAD_CACHE_DIR", tempfile.mkdtemp(prefix="numgrad-sweep-"))

import numgrad as ng  # noqa: E402


def w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()


def w2_mean(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).mean()


def w2_ref(x, y):
    u = x * y + np.sin(x)
    t, e = np.tanh(u), np.exp(-y * y)
    se = (1 - t * t) * e
    return (t * e).sum(), se * (y + np.cos(x)), se * x - 2 * y * t * e


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def kernel_modules():
    return sum(1 for n in sys.modules if n.startswith("numgrad_kernels_"))


def sweep(n_shapes, max_plans=64):
    f = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)), max_plans=max_plans)
    sizes = np.unique(np.geomspace(10, 400_000, n_shapes * 2).astype(int))
    rng = np.random.default_rng(0)
    sizes = rng.permutation(sizes)[:n_shapes]
    assert len(set(sizes)) == n_shapes
    rss0 = mods0 = None
    worst = 0.0
    t0 = time.perf_counter()
    for i, n in enumerate(sizes):
        xs, ys = rng.standard_normal(n), rng.standard_normal(n)
        x, y = ng.tensor(xs), ng.tensor(ys)
        for _ in range(2):
            v, (gx, gy) = f(x, y)
        rv, rgx, rgy = w2_ref(xs, ys)
        for got, want in ((v.numpy(), rv), (gx.numpy(), rgx), (gy.numpy(), rgy)):
            err = np.max(np.abs(got - want) / (1 + np.abs(want)))
            worst = max(worst, float(err))
        if i == 0:
            rss0, mods0 = rss_mb(), kernel_modules()
    elapsed = time.perf_counter() - t0
    s = f.stats
    print(f"{n_shapes} distinct shapes (n = {sizes.min()} ... {sizes.max()}), 2 calls each: "
          f"{elapsed:.1f} s")
    print(f"  traces {s.traces}, compiles {s.compiles}, kernel modules built in this process "
          f"{kernel_modules()} ({kernel_modules() - mods0} after the first shape), "
          f"plans kept {len(f._plans)}, compile_seconds {s.compile_seconds:.2f}")
    print(f"  RSS after the first shape {rss0:.0f} MB, after all {rss_mb():.0f} MB "
          f"(growth {rss_mb() - rss0:.0f} MB); worst relative error vs NumPy {worst:.1e}")


def _interleaved(fns, args, repeat):
    """Median seconds per call of each fn, calls alternating (the box's load drifts)."""
    for fn in fns:
        for _ in range(5):
            fn(*args)
    ts = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn(*args)
            ts[k].append(time.perf_counter() - t)
    return [statistics.median(t) for t in ts]


def steady():
    from bench import w4_chain
    rng = np.random.default_rng(1)
    cases = [("W2 n=1e3", w2, (1000,), 2000), ("W2 n=1e5", w2, (100_000,), 300),
             ("W2 n=1e6", w2, (1_000_000,), 60)]
    cases += [(f"W4 n={n:.0e}", lambda x: w4_chain.chain_ng(x, w4_chain.STEPS), (n,), r)
              for n, r in ((1000, 2000), (100_000, 200))]
    for name, fn, shape, repeat in cases:
        n = shape[0]
        data = [ng.tensor(rng.standard_normal(n)) for _ in range(fn.__code__.co_argcount)]
        other = [ng.tensor(rng.standard_normal(n + 7)) for _ in data]
        a, b = _interleaved(_pair(lambda: ng.jit(ng.value_and_grad(
            fn, argnums=tuple(range(len(data))))), other), data, repeat)
        print(f"  {name}: static {a * 1e3:.3f} ms, generic {b * 1e3:.3f} ms "
              f"({b / a:.2f}x)")
    for n, repeat in ((1000, 2000), (100_000, 300)):
        data = [ng.tensor(rng.standard_normal(n)) for _ in range(2)]
        other = [ng.tensor(rng.standard_normal(n + 7)) for _ in range(2)]
        a, b = _interleaved(_pair(lambda: _habit(w2_mean), other), data, repeat)
        print(f"  W2 mean n={n:.0e}, f(x).backward(): static {a * 1e3:.3f} ms, "
              f"generic {b * 1e3:.3f} ms ({b / a:.2f}x)")
    w3_steady()
    mlp_steady()


def _pair(make, other):
    """``[static, generic]``: two calls ``make()`` returns (each with a fresh jitted
    function), the second made shape-generic by two calls at the shapes of ``other``."""
    static, generic = make(), make()
    generic(*other)
    generic(*other)
    return [static, generic]


def _habit(fn):
    """``fn`` jitted, as a call then ``.backward()`` on leaves made from its arguments."""
    f = ng.jit(fn)

    def call(*args):
        ps = [a.detach().requires_grad_(True) for a in args]
        f(*ps).backward()
    return call


def _habit_on(fn, params, *extra):
    """``fn`` jitted, as a call on leaves made from ``params`` (then the call's arguments
    and ``extra``), then ``.backward()``; the leaves' gradients are cleared after."""
    f = ng.jit(fn)
    ps = [p.detach().requires_grad_(True) for p in params]

    def call(*args):
        f(*ps, *args, *extra).backward()
        for p in ps:
            p.grad = None
    return call


def w3_steady(repeat=300):
    """W3's MLP at batch 256, called then ``.backward()``: its NLL mean (a sum over a
    sum), and an MSE against one-hot targets (its backward divides by the batch's
    elements); the generic plan made by a batch of 200."""
    from bench import w3_mlp
    rng = np.random.default_rng(3)
    case = w3_mlp.cases(False)[0]
    data = w3_mlp.make_data(case)
    params = [ng.from_numpy(data[k]) for k in w3_mlp.PARAMS]

    def mse(W1, b1, W2, b2, X, T):
        F = ng.nn.functional
        z = F.linear(F.relu(F.linear(X, W1, b1)), W2, b2)
        return F.mse_loss(z, F.one_hot(T, 10).to(z.dtype))

    X, T = ng.from_numpy(data["X"]), ng.from_numpy(data["T"])
    Xs = ng.from_numpy(rng.standard_normal((200, 784)).astype(np.float32))
    Ts = ng.tensor(rng.integers(0, 10, 200))
    for name, fn in (("NLL", w3_mlp.loss_ng), ("MSE", mse)):
        a, b = _interleaved(_pair(lambda: _habit_on(fn, params), (Xs, Ts)), (X, T), repeat)
        print(f"  W3 {name} B=256, f(x).backward(): static {a * 1e3:.3f} ms, "
              f"generic {b * 1e3:.3f} ms ({b / a:.2f}x)")


def mlp_steady(repeat=1500):
    """The digits MLP step, batch 64 (and the generic plan made by a batch of 5)."""
    from bench import train_loop as tl
    rng = np.random.default_rng(2)
    params = tl.init_params()
    X = ng.tensor(rng.random((64, 64)).astype(np.float32))
    T = ng.tensor(rng.integers(0, 10, 64))
    small = (ng.tensor(rng.random((5, 64)).astype(np.float32)),
             ng.tensor(rng.integers(0, 10, 5)))
    def step():
        f = ng.jit(tl.sgd_step)
        return lambda *args: f(*params, *args, 0.1)

    for kind, make in (("step", step),
                       ("loss", lambda: _habit_on(tl.weighted_loss, params, 0.1))):
        a, b = _interleaved(_pair(make, small), (X, T), repeat)
        print(f"  digits MLP {kind}, B=64: static {a * 1e6:.1f} us, generic {b * 1e6:.1f} us "
              f"({b / a:.2f}x)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, default=500)
    p.add_argument("--steady", action="store_true")
    p.add_argument("--max-plans", type=int, default=64)
    args = p.parse_args()
    if args.steady:
        steady()
    else:
        sweep(args.shapes, args.max_plans)


if __name__ == "__main__":
    main()

"""Where the PyTorch-habit path's time goes: W2 through ``@ng.jit`` called, then
``.backward()``, against one ``jit(value_and_grad)`` call (the sweep's goal 2).

    python bench/w2_habit_breakdown.py [n ...] [--dtype float32] [--reps 30]

For each size it prints, per call: the structural facts (values the forward saves for
the backward and their bytes, equations the backward recomputes, bytes each program
reads and writes, kernels, whether ``.grad`` took the backward's array without a copy,
minor page faults) and the time of each piece, measured interleaved in one process
(wall median and min, CPU median: on a shared box the CPU time and the minimum are the
steadier numbers). The pieces: forward program, the call around it (guard, node),
backward program (the ordinary path, run piece by piece on a plan that does not
speculate), and the whole call + ``.backward()`` as a user runs it (after its first
backward seeded with 1 the call runs the joint program: compiler/speculate.py);
``v&g`` is the fused program and its call.
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numgrad as ng  # this checkout's, not an installed one


def w2(x, y):
    return ((x * y + ng.sin(x)).tanh() * ng.exp(-y * y)).sum()


def _bytes_moved(sched):
    """(bytes read, bytes written) by a schedule's kernels: their array inputs and outputs
    (one-element values not counted)."""
    rd = wr = 0
    for k in sched.kernels:
        rd += sum(v.dtype.itemsize * int(np.prod(v.shape)) for v in k.inputs
                  if int(np.prod(v.shape)) > 1)
        wr += sum(v.dtype.itemsize * int(np.prod(v.shape)) for v in k.outputs
                  if int(np.prod(v.shape)) > 1)
    return rd, wr


def _faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure(n, dtype="float64", reps=30):
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    f = ng.jit(w2)            # the habit path, as a user runs it
    parts = ng.jit(w2)        # the same plan, run piece by piece
    vg = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)))
    x, y = ng.tensor(xa, requires_grad=True), ng.tensor(ya, requires_grad=True)
    xd, yd = ng.tensor(xa), ng.tensor(ya)

    def habit():
        x.grad = y.grad = None
        f(x, y).backward()

    for _ in range(4):  # serial tiers, then the prange tiers (and the joint program)
        habit()
        vg(xd, yd)
    parts(x, y).backward()
    hplan = next(iter(f._fast.values()))
    plan = next(iter(parts._fast.values()))
    plan.spec = None  # the pieces: forward program, then backward program
    vplan = next(iter(vg._fast.values()))
    loss = parts(x, y)
    node = loss.grad_fn
    bwd_args = node._arrays + node._saved + [np.ones((), dtype)]
    saved_mb = sum(a.nbytes for a in node._saved) / 1e6
    del loss, node
    habit()
    # A copy made by .grad would be NumPy's (no base); a kernel's array keeps its MemInfo.
    stolen = all(g._data.base is not None for g in (x.grad, y.grad))
    sched_f, sched_b = plan.schedule()
    (sched_v,) = vplan.schedule()
    # The partition puts the forward's equations the backward recomputes first; the
    # backward's own carry the trace's "bwd" mark.
    recomputed = sum(1 for e in plan.bwd_graph.eqns if not e.ann.get("bwd"))
    spec = getattr(hplan, "spec", None)  # (absent before compiler/speculate.py)
    facts = {
        "call + .backward() runs the joint program (compiler/speculate.py)":
            bool(spec and spec.on and spec.joint is not None),
        "saved values": f"{plan.n_saved} ({saved_mb:.1f} MB)",
        "bwd equations recomputed from the forward": recomputed,
        "kernels fwd / bwd / v&g": f"{len(sched_f.kernels)} / {len(sched_b.kernels)} / "
                                   f"{len(sched_v.kernels)}",
        "MB read+written fwd / bwd / v&g": " / ".join(
            "{:.0f}+{:.0f}".format(*(b / 1e6 for b in _bytes_moved(s)))
            for s in (sched_f, sched_b, sched_v)),
        ".grad takes the computed arrays (no copy)": stolen,
    }

    pieces = {
        "v&g call": lambda: vg(xd, yd),
        "v&g program": lambda: vplan.fwd([xa, ya]),
        "call + .backward()": habit,
        "forward call": lambda: parts(x, y),
        "forward program": lambda: plan.fwd([xa, ya]),
        "backward program": lambda: plan.bwd(list(bwd_args)),
    }
    wall = {k: [] for k in pieces}
    cpu = {k: [] for k in pieces}
    flt = {k: [] for k in pieces}
    gc.collect()
    for _ in range(reps):
        for k, fn in pieces.items():
            p0, f0, t0 = time.process_time(), _faults(), time.perf_counter()
            fn()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - p0)
            flt[k].append(_faults() - f0)
    # backward alone = the habit step minus its forward call (same interleaved rounds)
    med = {k: statistics.median(v) for k, v in wall.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    return facts, wall, cpu, flt, med, cmed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", default=["1e6"])
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args(argv)
    for s in a.sizes:
        n = int(float(s))
        facts, wall, _, flt, med, cmed = measure(n, a.dtype, a.reps)
        print(f"\nW2 n={s} {a.dtype}, {numba.get_num_threads()} threads, "
              f"{a.reps} interleaved rounds")
        for k, v in facts.items():
            print(f"  {k}: {v}")
        print("| piece | wall median ms | wall min ms | CPU median ms | faults/call |")
        print("|---|---|---|---|---|")
        for k in wall:
            print(f"| {k} | {med[k] * 1e3:.3f} | {min(wall[k]) * 1e3:.3f} | "
                  f"{cmed[k] * 1e3:.3f} | {statistics.median(flt[k]):.0f} |")
        plain = med["forward call"] + med["backward program"]
        print(f"  the ordinary path (forward call + backward program, no speculation): "
              f"{plain * 1e3:.3f} ms wall median, "
              f"{(cmed['forward call'] + cmed['backward program']) * 1e3:.3f} ms CPU median; "
              f"/ v&g call: {plain / med['v&g call']:.2f} wall, "
              f"{(cmed['forward call'] + cmed['backward program']) / cmed['v&g call']:.2f} CPU")
        print(f"  ratio call + .backward() / v&g call: wall median "
              f"{med['call + .backward()'] / med['v&g call']:.2f}, wall min "
              f"{min(wall['call + .backward()']) / min(wall['v&g call']):.2f}, CPU median "
              f"{cmed['call + .backward()'] / cmed['v&g call']:.2f}")


if __name__ == "__main__":
    main()

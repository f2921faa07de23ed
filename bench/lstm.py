"""A 1-layer LSTM training step (input 128, hidden 128, sequence 35, batch 20, float32, one
thread): forward, mean squared error against a target, the gradients of all four parameters.

Systems, all from the same weights and data, timed in one run so the ratios are comparable:
numgrad eager (``nn.LSTM`` + ``.backward()``), numgrad jit (the loss under ``@ng.jit``, then
``.backward()``), numgrad jit v&g (``ng.jit(ng.value_and_grad(...))`` of the same loss written
over the weights), torch eager and torch.compile. Each gradient is checked against torch eager's
before timing; then the systems take turns, one step each per round. Prints a table of median
step times and ratios to torch eager (and the fastest step's, steadier on a loaded machine), and
writes a plot::

    python bench/lstm.py                     # bench/results/lstm.png, bench/results/lstm.txt
    python bench/lstm.py --rounds 50 --no-compile --out /tmp/lstm.png
    python bench/lstm.py --systems "numgrad eager" --out /tmp/lstm.png
    python bench/lstm.py --clock cpu --out /tmp/lstm.png   # CPU time: steadier under load
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import pin_threads  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN = 35, 20, 128, 128
NAMES = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")


def make_data():
    import numpy as np
    rng = np.random.default_rng(0)
    bound = 1 / np.sqrt(HIDDEN)
    f32 = np.float32
    w = {"weight_ih_l0": rng.uniform(-bound, bound, (4 * HIDDEN, INPUT)).astype(f32),
         "weight_hh_l0": rng.uniform(-bound, bound, (4 * HIDDEN, HIDDEN)).astype(f32),
         "bias_ih_l0": rng.uniform(-bound, bound, 4 * HIDDEN).astype(f32),
         "bias_hh_l0": rng.uniform(-bound, bound, 4 * HIDDEN).astype(f32)}
    x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(f32)
    y = rng.standard_normal((SEQ, BATCH, HIDDEN)).astype(f32)
    return w, x, y


def numgrad_systems(w, x, y):
    import numgrad as ng
    from numgrad import ops
    from numgrad.nn import functional as F
    try:
        from numgrad.nn.rnn import _lstm_layer
    except ImportError:  # a tree from before the layer primitive (for before/after runs)
        from numgrad.nn.rnn import _sequence

        def _lstm_layer(X, w_ih, w_hh, b_ih, b_hh, h0, c0):
            outs, h, c = _sequence("LSTM", ops.unbind(X, 0), w_ih, w_hh, b_ih, b_hh, h0, c0)
            return ops.stack(outs, 0), h, c

    lstm = ng.nn.LSTM(INPUT, HIDDEN)
    lstm.load_state_dict({k: ng.from_numpy(v) for k, v in w.items()})
    X, Y = ng.from_numpy(x), ng.from_numpy(y)
    params = [getattr(lstm, n) for n in NAMES]

    def loss(X, Y):
        return F.mse_loss(lstm(X)[0], Y)

    def loss_of_weights(w_ih, w_hh, b_ih, b_hh, X, Y):
        # nn.LSTM's own recurrence, with the weights as arguments for value_and_grad.
        h0 = ng.zeros(BATCH, HIDDEN)
        out, _, _ = _lstm_layer(X, w_ih, w_hh, b_ih, b_hh, h0, h0)
        return F.mse_loss(out, Y)

    jitted = ng.jit(loss)
    vg = ng.jit(ng.value_and_grad(loss_of_weights, argnums=(0, 1, 2, 3)))

    def backward_step(f):
        def step():
            for p in params:
                p.grad = None
            out = f(X, Y)
            out.backward()
            return [p.grad.numpy() for p in params]
        return step

    def vg_step():
        _, grads = vg(*[p.detach() for p in params], X, Y)
        return [g.numpy() for g in grads]

    return {"numgrad eager": backward_step(loss), "numgrad jit": backward_step(jitted),
            "numgrad jit v&g": vg_step}


def torch_systems(w, x, y, compile_too):
    import torch
    lstm = torch.nn.LSTM(INPUT, HIDDEN)
    lstm.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()})
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    params = [getattr(lstm, n) for n in NAMES]

    def grads():
        loss = torch.nn.functional.mse_loss(lstm(X)[0], Y)
        return torch.autograd.grad(loss, params)

    systems = {"torch eager": lambda: [g.numpy() for g in grads()]}
    if compile_too:
        torch._dynamo.reset()
        compiled = torch.compile(grads, dynamic=False)
        systems["torch.compile"] = lambda: [g.numpy() for g in compiled()]
    return systems


def time_steps(steps, rounds, warmup=3, clock=time.perf_counter):
    """``{name: (median, fastest)}`` seconds per step. The systems take turns, one step each
    per round, so a load change on the shared machine falls on all of them alike."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    times = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            t0 = clock()
            step()
            times[name].append(clock() - t0)
    return {name: (statistics.median(ts), min(ts)) for name, ts in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: this process's CPU time per step (steadier where other "
                         "processes share the cores; one thread, so it is the step's work)")
    ap.add_argument("--out", default=os.path.join("bench", "results", "lstm.png"))
    ap.add_argument("--systems", default=None,
                    help="comma-separated names to time (torch eager always runs)")
    args = ap.parse_args(argv)
    info = pin_threads(1)
    import numpy as np
    w, x, y = make_data()
    systems = torch_systems(w, x, y, not args.no_compile)
    systems.update(numgrad_systems(w, x, y))
    if args.systems:
        keep = set(args.systems.split(",")) | {"torch eager"}
        systems = {k: v for k, v in systems.items() if k in keep}
    want = systems["torch eager"]()
    results, ok = {}, {}
    for name, step in systems.items():
        try:
            got = step()
            err = max(float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))
                      for a, b in zip(got, want))
            if err > 1e-4:
                raise AssertionError(f"gradients differ from torch eager's (rel err {err:.1e})")
            ok[name] = step
        except Exception as e:  # noqa: BLE001 - one system failing must not hide the rest
            results[name] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    results.update(time_steps(ok, args.rounds, clock=clock))
    results = {name: results[name] for name in systems}
    base, base_min = results["torch eager"]
    lines = [f"LSTM step: seq {SEQ}, batch {BATCH}, input {INPUT}, hidden {HIDDEN}, float32, "
             f"threads {info['threads']} (median of {args.rounds}, systems taking turns, "
             f"{args.clock} clock)",
             f"{'system':<18}{'ms/step':>10}{'x torch eager':>15}{'fastest ms':>12}{'x':>7}"]
    for name, t in results.items():
        if isinstance(t, str):
            lines.append(f"{name:<18}{t}")
        else:
            lines.append(f"{name:<18}{t[0] * 1e3:>10.2f}{t[0] / base:>15.2f}"
                         f"{t[1] * 1e3:>12.2f}{t[1] / base_min:>7.2f}")
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(os.path.splitext(args.out)[0] + ".txt", "w") as fh:
        fh.write(text + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        ok = {k: v[0] for k, v in results.items() if not isinstance(v, str)}
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.barh(list(ok), [v * 1e3 for v in ok.values()],
                color=["tab:orange" if k.startswith("torch") else "tab:blue" for k in ok])
        for i, v in enumerate(ok.values()):
            ax.text(v * 1e3, i, f" {v / base:.2f}x", va="center")
        ax.invert_yaxis()
        ax.set_xlabel("ms per training step (lower is better)")
        ax.set_title(f"1-layer LSTM, hidden {HIDDEN}, seq {SEQ}, batch {BATCH}, 1 thread")
        fig.tight_layout()
        fig.savefig(args.out, dpi=100)
        print(f"plot: {args.out}")
    except ImportError:
        print("matplotlib not installed: no plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())

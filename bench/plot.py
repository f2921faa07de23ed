"""The benchmark figure: speedups per workload, W2 time against size with a
memory-bandwidth roofline, and how many calls it takes for compilation to pay."""
from __future__ import annotations

import textwrap

COLORS = {
    "numgrad eager": "#1f77b4",
    "numgrad jit": "#ff7f0e",
    "numgrad jit v&g": "#d62728",
    "torch eager": "#2ca02c",
    "torch.compile": "#98df8a",
    "jax jit": "#9467bd",
    "numpy": "#7f7f7f",
}
COMPILED = ("numgrad jit", "numgrad jit v&g", "torch.compile", "jax jit")


def plot_results(rows, meta, path):
    """Draw the panels the rows support (speedups; W2 against size with the roofline;
    W2 break-even), side by side, into ``path``; returns ``path``, or None if none can be
    drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(meta["systems"])
    ok = [r for r in rows if r.get("time_s")]
    w2 = [r for r in ok if r["workload"] == "W2" and r["dtype"] == "float64"]
    panels = []
    heads = _headlines(ok)
    if heads:
        panels.append(lambda ax: _speedups(ax, ok, heads, systems, meta, rows))
    if len({r["size"] for r in w2}) >= 2:
        panels.append(lambda ax: _w2_sizes(ax, w2, systems, meta))
        if any(r["system"] == "numgrad eager" for r in w2) and \
                any(r["system"] in COMPILED for r in w2):
            panels.append(lambda ax: _break_even(ax, rows, w2))
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels) + 0.5, 5.8),
                             squeeze=False)
    for draw, ax in zip(panels, axes[0]):
        draw(ax)
    n = meta.get("threads", {}).get("threads")
    fig.suptitle(f"numgrad bench ({meta.get('mode')}), {n} thread{'' if n == 1 else 's'}, "
                 f"{meta.get('versions', {}).get('cpu', '')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _headlines(ok):
    heads = []
    for r in ok:
        key = (r["workload"], r["case"])
        if r.get("headline") and key not in heads:
            heads.append(key)
    return heads


def _speedups(ax, ok, heads, systems, meta, rows):
    """Speedup over torch eager (or numgrad eager), headline case of each workload; a
    system without a bar says why where its bar would stand (torch.compile cannot
    double-backward W5, say)."""
    width = 0.8 / max(len(systems), 1)
    for i, s in enumerate(systems):
        xs, ys = [], []
        for j, key in enumerate(heads):
            by = {x["system"]: x for x in ok if (x["workload"], x["case"]) == key}
            base = by.get("torch eager") or by.get("numgrad eager")
            x = j + (i - len(systems) / 2 + 0.5) * width
            if s in by and base:
                xs.append(x)
                ys.append(base["time_s"] / by[s]["time_s"])
            elif base:
                why = next((r for r in rows if (r["workload"], r["case"]) == key
                            and r["system"] == s and r["status"] != "ok"), None)
                if why is not None:
                    ax.text(x, 1.0, f"{s}: {why['status']}", rotation=90, fontsize=6,
                            ha="center", va="bottom", color=COLORS.get(s, "k"))
        if xs:
            bars = ax.bar(xs, ys, width, label=s, color=COLORS.get(s))
            ax.bar_label(bars, labels=[f"{y:.2g}" for y in ys], fontsize=6, rotation=90,
                         padding=2)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(heads)))
    ax.set_xticklabels([f"{w}\n" + "\n".join(textwrap.wrap(c, 13)) for w, c in heads],
                       fontsize=7)
    base_name = "torch eager" if "torch eager" not in meta.get("skipped", {}) else "numgrad eager"
    ax.set_ylabel(f"speedup over {base_name} (higher is better)")
    ax.set_title("Speedup per workload (steady state)")
    ax.legend(fontsize=7)


def _w2_sizes(ax, w2, systems, meta):
    """W2 time against size, float64, with the triad roofline."""
    sizes = sorted({r["size"] for r in w2})
    for s in systems:
        pts = sorted((r["size"], r["time_s"]) for r in w2 if r["system"] == s)
        if pts:
            ax.plot(*zip(*pts), "o-", label=s, color=COLORS.get(s))
    triad = meta.get("triad") or {}
    if sizes and triad.get("GBps"):
        bw = triad["GBps"] * 1e9
        # fwd+bwd must at least read x, y and write dx, dy: 4 arrays of 8 bytes
        ax.plot(sizes, [4 * 8 * n / bw for n in sizes], "k--", lw=1.2,
                label=f"memory roofline ({triad['GBps']:.1f} GB/s triad, 32 B/elem)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements n (W2, float64)")
    ax.set_ylabel("time per forward+backward (s)")
    ax.set_title("W2: time against problem size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _break_even(ax, rows, w2):
    """Calls needed before the compile time is paid back, against numgrad eager."""
    eager = {r["size"]: r["time_s"] for r in w2 if r["system"] == "numgrad eager"}
    allw2 = [r for r in rows if r["workload"] == "W2" and r["dtype"] == "float64"]
    for s in COMPILED:
        pts = []
        for r in allw2:
            if r["system"] != s or not r.get("time_s") or r["size"] not in eager:
                continue
            if r.get("first_call") not in (None, "compile"):
                continue  # its first call compiled nothing: there is no compile to repay
            gain = eager[r["size"]] - r["time_s"]
            extra = max((r.get("first_call_s") or 0.0) - r["time_s"], 0.0)
            if gain > 0:
                pts.append((r["size"], max(extra / gain, 1.0)))
        if pts:
            ax.plot(*zip(*sorted(pts)), "o-", label=s, color=COLORS.get(s))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements n (W2, float64)")
    ax.set_ylabel("calls until compile time is repaid")
    ax.set_title("W2: break-even vs numgrad eager\n(missing point: never faster, or its "
                 "first call compiled nothing)")
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=7)


if __name__ == "__main__":  # re-plot a results file: python -m bench.plot results.json out.png
    import json
    import sys
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    print(plot_results(doc["rows"], doc["meta"], sys.argv[2] if len(sys.argv) > 2 else
                       sys.argv[1].rsplit(".", 1)[0] + ".png"))

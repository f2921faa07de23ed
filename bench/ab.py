"""Before/after: numgrad's bench at two git revisions, interleaved, as ratios.

    python bench/ab.py BEFORE [AFTER] [--rounds N] [-- BENCH ARGS]

Checks out BEFORE and AFTER (default: the working tree, uncommitted edits included)
into scratch git worktrees, then runs ``python -m numgrad bench --quick`` in each, in
turns (A B A B ...), each run in a fresh process with its own empty kernel cache warmed
by the bench's own warm-up, so a busy spell of the machine hits both sides alike. Prints
per case the median over rounds of each side's median time, and AFTER / BEFORE.
Extra arguments after ``--`` go to the bench (default: ``--system "numgrad jit"
--system "numgrad jit v&g"``).

A ratio within about 10% of 1 is noise on a shared 2-core machine; quote the spread.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _worktree(rev, where):
    """A checkout of ``rev`` at ``where`` (``None``: a copy of the working tree)."""
    if rev is None:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(where),
                        "HEAD"], check=True)
        diff = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD", "--binary"],
                              capture_output=True, check=True).stdout
        if diff:
            subprocess.run(["git", "-C", str(where), "apply", "--whitespace=nowarn"],
                           input=diff, check=True)
        untracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--others",
                                    "--exclude-standard"], capture_output=True, text=True,
                                   check=True).stdout.split()
        for f in untracked:
            (where / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, where / f)
    else:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(where),
                        rev], check=True)


def _run(tree, bench_args, out, cache):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(cache), PYTHONPATH=str(tree))
    # bench.runner, not ``numgrad bench``: older revisions had a CLI that
    # passed only some of the runner's options through.
    cmd = [sys.executable, "-m", "bench.runner", "--quick", "--no-plot", "--rounds", "3",
           "--out-dir", str(out)] + bench_args
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    rows = json.loads(next(out.glob("*.json")).read_text())["rows"]
    return {(r["workload"], r["case"], r["system"]): r["time_s"] for r in rows
            if r.get("status") in ("ok", "unchecked") and r.get("time_s")}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", help="git revision for the baseline")
    p.add_argument("after", nargs="?", help="git revision (default: the working tree)")
    p.add_argument("--rounds", type=int, default=2, help="A/B pairs (default 2)")
    a = p.parse_args(argv)
    bench_args = extra or ["--system", "numgrad jit", "--system", "numgrad jit v&g"]
    tmp = Path(tempfile.mkdtemp(prefix="numgrad_ab_"))
    trees = {"before": tmp / "before", "after": tmp / "after"}
    times = {"before": [], "after": []}
    try:
        _worktree(a.before, trees["before"])
        _worktree(a.after, trees["after"])
        for k in range(a.rounds):
            for side in ("before", "after"):
                print(f"round {k + 1}/{a.rounds}: {side}", file=sys.stderr, flush=True)
                out = tmp / f"out_{side}_{k}"
                out.mkdir()
                times[side].append(_run(trees[side], bench_args, out, tmp / f"cache_{side}"))
    finally:
        for t in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(t)],
                           capture_output=True)
    keys = sorted(set.intersection(*(set(t) for t in times["before"] + times["after"])))
    print(f"{'workload':8} {'case':24} {'system':18} {'before':>10} {'after':>10} "
          f"{'after/before':>12}  per-round ratios")
    for key in keys:
        b = statistics.median(t[key] for t in times["before"])
        f = statistics.median(t[key] for t in times["after"])
        per = " ".join(f"{ta[key] / tb[key]:.2f}" for tb, ta in zip(times["before"],
                                                                       times["after"]))
        print(f"{key[0]:8} {key[1][:24]:24} {key[2][:18]:18} {b * 1e3:8.3f}ms {f * 1e3:8.3f}ms "
              f"{f / b:12.2f}  {per}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

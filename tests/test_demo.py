"""``python -m numgrad demo``: it prints each case's code, the real text of errors and
warnings, shows handle.remove(), and ends with a one-line summary; both columns agree;
the eager column lists eager code, and the times say what they measure."""

from __future__ import annotations

import time

from numgrad import demo


def test_demo_teaches_eagerly(capsys):
    assert demo.run(compiled=False) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[:2]
    assert "detach" in head[0] and "@ng.jit" in head[1]  # two opening lines
    assert "code     │ def f_detached(x):" in out  # the code comes before its results
    assert out.index("code     │ def f(x):") < out.index("eager    │ f: x.grad")
    assert "UserWarning: The .grad attribute of a Tensor that is not a leaf" in out
    assert "(UserWarning: True)" not in out
    assert "RuntimeError: grad can be implicitly created only for scalar outputs" in out
    assert "handle.remove()" in out
    assert "after handle.remove(): v.grad = tensor([1., 2., 3.])" in out
    assert "x.grad = tensor([5., 5." in out and "x.grad = tensor([2., 2." in out
    last = [ln for ln in out.splitlines() if ln.strip()][-1]
    assert last.startswith("Summary:")


def test_the_eager_column_lists_eager_code(capsys):
    demo.run(compiled=False)
    code = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  code     │")]
    assert code and not any("jit" in ln for ln in code)
    assert "  code     │     fn(x).backward()" in code
    # It is the code that ran: the eager column's namespace has no `jit` at all.
    for _, source in demo.CASES:
        assert "jit(" not in demo.eager_source(source)


def test_demo_compiled_column_agrees(capsys):
    assert demo.run(compiled=True) == 0
    out = capsys.readouterr().out
    assert out.count("same in both columns") == len(demo.CASES)
    assert f"{len(demo.CASES)}/{len(demo.CASES)} cases print the same" in out
    assert "  jit code │     jit(fn)(x).backward()" in out  # what the compiled column changes
    assert out.count("steady state: eager") == len(demo.CASES)
    assert out.count("compiled first run") == len(demo.CASES)
    assert "(trace + compile" in out


def test_steady_state_is_timed_after_the_warm_up_runs():
    # A run that is slow on its first calls (a later tier compiling) and fast after.
    calls = []

    def run():
        calls.append(1)
        if len(calls) <= demo.WARM_RUNS:
            time.sleep(0.05)

    warm, steady = demo._steady(run)
    assert len(calls) == demo.WARM_RUNS + demo.TIMED_RUNS
    assert warm >= 0.05 * demo.WARM_RUNS and steady < 0.02

"""``python -m numgrad demo``: it prints each case's code, the real text of errors and
warnings, shows handle.remove(), and ends with a one-line summary; both columns agree."""

from __future__ import annotations

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
    assert "handle.remove()" in out and "after handle.remove(): v.grad = tensor([1., 2., 3.])" in out
    assert "x.grad = tensor([5., 5." in out and "x.grad = tensor([2., 2." in out
    last = [ln for ln in out.splitlines() if ln.strip()][-1]
    assert last.startswith("Summary:")


def test_demo_compiled_column_agrees(capsys):
    assert demo.run(compiled=True) == 0
    out = capsys.readouterr().out
    assert out.count("same in both columns") == len(demo.CASES)
    assert f"{len(demo.CASES)}/{len(demo.CASES)} cases print the same" in out

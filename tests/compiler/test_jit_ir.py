"""Inspection of compiled functions: the IR listing and its annotations, the reference
evaluator, Graphviz/HTML renderings, the generated source and the stats."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import W_DATA, X_DATA, assert_close, pair, to_numpy  # noqa: E402

G = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=np.float32)


def _keep(g):
    return None


def _annotated(x, w):
    d = x.detach() * w
    with ng.no_grad():
        c = x.exp()
    h = x.sigmoid() * w
    h.register_hook(_keep)
    return (h + d + c).sum()


def _annotated_torch(x, w):
    d = x.detach() * w
    with torch.no_grad():
        c = x.exp()
    h = x.sigmoid() * w
    return (h + d + c).sum()


def _plain(x, w):
    return (x.tanh() * w + x).sum(dim=1)


ANNOTATED = ng.jit(_annotated, backend="numpy")
PLAIN = {"numpy": ng.jit(_plain, backend="numpy"), "cpu": ng.jit(_plain)}


def _lines(graph, op):
    return [ln for ln in str(graph).splitlines() if re.search(rf"= {re.escape(op)}\b", ln)]


def test_listing_shows_ops_and_annotations():
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA)
    g = ANNOTATED.trace(x, w)
    text = str(g)
    assert repr(g) == text
    header = text.splitlines()[0]
    assert header.startswith("{ lambda") and "{grad}" in header
    for op in ("detach", "exp", "sigmoid", "mul", "hook", "sum"):
        assert _lines(g, op), f"{op} missing from\n{text}"
    assert "{detach}" in _lines(g, "detach")[0]
    assert "{no_grad}" in _lines(g, "exp")[0]
    assert "{no_grad}" not in _lines(g, "sigmoid")[0]  # the forward sigmoid is recorded
    assert "{hook}" in _lines(g, "hook")[0]
    assert text.rstrip().endswith("}")
    assert g.verify() is True


def test_listing_marks_only_inputs_that_require_grad():
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA, requires_grad=False)
    header = str(PLAIN["numpy"].trace(x, w)).splitlines()[0]
    assert header.count("{grad}") == 1
    xn, _ = pair(X_DATA, requires_grad=False)
    text = str(PLAIN["numpy"].trace(xn, w))
    assert "{grad}" not in text


def test_annotated_function_runs_like_torch():
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    out = ANNOTATED(x, w)
    tout = _annotated_torch(tx, tw)
    assert_close(out, tout.detach())
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_eval_of_forward_graph_matches_compiled_call(backend):
    x, tx = pair(X_DATA, requires_grad=False)
    w, tw = pair(W_DATA, requires_grad=False)
    cf = PLAIN[backend]
    g = cf.trace(x, w)
    got = g.eval(X_DATA, W_DATA)
    out = cf(x, w)
    assert len(got) == 1
    np.testing.assert_allclose(got[0], to_numpy(out), rtol=1e-6, atol=1e-7)
    assert_close(out, _plain(tx, tw))


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_eval_of_joint_graph_gives_value_and_grads(backend):
    x, tx = pair(X_DATA)
    w, tw = pair(W_DATA)
    cf = PLAIN[backend]
    g = cf.trace(x, w)
    ct = G[:, 0].copy()  # the cotangent of the (2,) output
    n_in = len(g.inputs)
    assert n_in == 3  # x, w, and one cotangent
    value, gx, gw = g.eval(X_DATA, W_DATA, ct)
    out = cf(x, w)
    out.backward(ng.tensor(ct))
    tout = _plain(tx, tw)
    tout.backward(torch.tensor(ct))
    np.testing.assert_allclose(value, to_numpy(out), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx, to_numpy(x.grad), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw, to_numpy(w.grad), rtol=1e-5, atol=1e-6)
    assert_close(x.grad, tx.grad)


def test_to_dot_and_html():
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA)
    g = ANNOTATED.trace(x, w)
    dot = g.to_dot()
    assert dot.startswith("digraph")
    assert dot.rstrip().endswith("}")
    assert dot.count("shape=box") == len(g.eqns)
    assert "->" in dot
    html = g._repr_html_()
    assert "<svg" in html and "</svg>" in html  # drawn by numgrad: no Graphviz needed
    listing = html.split("<pre>")[1].split("</pre>")[0]  # the IR, folded under the picture
    assert "sigmoid" in listing and "{hook}" in listing  # braces need no escaping
    assert "<" not in listing


def test_cpu_source_is_numba():
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA)
    src = PLAIN["cpu"].source(x, w)
    assert isinstance(src, str)
    assert "@njit" in src and "def " in src
    compile(src.split("\n\n# generated")[0], "<numgrad-source>", "exec")  # valid Python
    stats = PLAIN["cpu"].stats
    for field in ("traces", "compiles", "cache_hits", "disk_hits", "kernels"):
        assert isinstance(getattr(stats, field), int)
    assert stats.kernels >= 1


def test_numpy_backend_source_is_a_string():
    x, _ = pair(X_DATA)
    w, _ = pair(W_DATA)
    src = PLAIN["numpy"].source(x, w)
    assert isinstance(src, str) and "tanh" in src
    assert PLAIN["numpy"].stats.kernels == 0


def test_trace_does_not_run_the_function():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    cf = ng.jit(f, backend="numpy")
    x, _ = pair(X_DATA)
    cf.trace(x)
    cf.trace(x)
    assert len(calls) == 1  # traced once; the second trace() reuses the plan
    cf(x)
    assert len(calls) == 1 and cf.stats.traces == 1

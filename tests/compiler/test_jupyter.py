"""What a Jupyter user meets: pictures (numgrad's own SVG), IR names and constants, the
source object, short tracebacks naming cells, and the slow-compile progress line."""

from __future__ import annotations

import sys
import time
import traceback
import types
from pathlib import Path
import xml.dom.minidom

import numpy as np
import pytest

import numgrad as ng
from numgrad.compiler import progress, tracebacks


def _hooked(x, weight):
    d = x.detach() * weight
    with ng.no_grad():
        c = x.exp()
    h = x.sigmoid() * weight * 3.5
    h.register_hook(lambda g: g)
    return (h + d + c).sum()


HOOKED = ng.jit(_hooked, backend="numpy")


def _fused(x, y):
    return (ng.tanh(x * y) * 2.0).sum()


FUSED = ng.jit(_fused)


def _svg_ok(svg):
    xml.dom.minidom.parseString(svg)  # well-formed, so browsers draw it
    return True


def _inputs():
    return ng.ones(4, requires_grad=True), ng.ones(4, requires_grad=True)


def test_listing_keeps_parameter_names_and_shows_constants():
    x, w = _inputs()
    text = str(HOOKED.trace(x, w))
    header = text.splitlines()[0]
    assert "x:f32[4]{grad}" in header and "weight:f32[4]{grad}" in header
    # No intermediate value takes a parameter's name: each name is defined once.
    defined = [ln.split(":")[0].strip() for ln in text.splitlines()[1:] if " = " in ln]
    assert "x" not in defined and len(defined) == len(set(defined))
    assert any(" 3.5" in ln for ln in text.splitlines() if "= mul" in ln)  # the constant's value
    assert "# backward" in text  # forward and derived backward are visibly separated
    fwd, bwd = text.split("# backward")
    assert "{no_grad}" in fwd and "{detach}" in fwd and "{hook}" in bwd
    assert "ct:f32[]" in header  # the incoming gradient is named
    # Names change nothing the graph computes.
    assert HOOKED.trace(x, w).verify()


def test_graph_html_is_an_inline_svg_with_bands_and_colours():
    x, w = _inputs()
    g = HOOKED.trace(x, w)
    html = g._repr_html_()
    svg = html[html.index("<svg"):html.index("</svg>") + 6]
    assert _svg_ok(svg)
    assert ">forward<" in svg and "backward" in svg
    for kind in ("ng-hook", "ng-detach", "ng-no_grad", "ng-input"):
        assert kind in svg, kind
    assert "<details>" in html and "weight" in html


def test_trace_picture_boxes_the_fused_kernels():
    x, y = ng.ones(5, dtype=ng.float64, requires_grad=True), ng.ones(5, dtype=ng.float64)
    g = FUSED.trace(x, y)
    assert g.stages and set(g.stages.values()) >= {"forward kernel 0", "backward kernel 0"}
    svg = g.picture().svg()
    assert svg.count('class="ng-stage"') >= 2 and "forward kernel 0" in svg


def test_source_is_a_str_that_renders_highlighted():
    x, y = ng.ones(5, dtype=ng.float64, requires_grad=True), ng.ones(5, dtype=ng.float64)
    src = FUSED.source(x, y)
    assert isinstance(src, str) and "@njit" in src
    assert "forward program" in src and "backward program" in src
    compile(src, "<numgrad-source>", "exec")  # still valid Python, labels are comments
    html = src._repr_html_()
    assert html.count("<details") == 2 and "<span" in html and "&lt;" not in src
    with ng.no_grad():
        plain = FUSED.source(x, y)
    assert "backward program" not in plain


def test_eager_graph_picture_marks_leaves_saved_tensors_and_hooks():
    x = ng.ones(3, requires_grad=True)
    x.register_hook(lambda g: g)
    y = ng.ones(3, requires_grad=False)
    r = (x * y + x.detach() ** 3).sum()
    pic = ng.viz.graph(r, names={"x": x, "y": y, "r": r})  # a saved tensor takes its name
    svg = pic.svg()
    assert _svg_ok(svg)
    for text in ("SumBackward0", "AddBackward0", "MulBackward0", ">x<", ">r<", "saved y"):
        assert text in svg, text
    assert "ng-hook" in svg  # x carries a hook
    assert "PowBackward0" not in svg  # the detached branch is not in the graph
    html = r.grad_fn._repr_html_()
    assert "<svg" in html and _svg_ok(html[html.index("<svg"):html.index("</svg>") + 6])


def test_eager_graph_marks_a_saved_tensor_modified_in_place():
    a = ng.tensor([1.0, 2.0], requires_grad=True)
    b = a.sigmoid()
    b.detach().zero_()
    svg = ng.viz.graph(b).svg()
    assert "modified: v1, saved v0" in svg


def test_graph_of_a_compiled_call_draws_its_backward_node():
    x, w = _inputs()
    out = HOOKED(x, w)
    svg = ng.viz.graph(out, names={"x": x, "w": w}).svg()
    assert "CompiledFunctionBackward" in svg and ">w<" in svg


def _control_flow(x):
    if x.sum() > 0:  # the user's mistake
        return x
    return -x


_PKG = Path(ng.__file__).resolve().parent


def _in_package(filename):
    # By the package's own directory: a clone of the repository is itself named numgrad/,
    # so "/numgrad/" in a path would also count the tests' frames.
    return Path(filename).resolve().is_relative_to(_PKG)


def test_tracing_error_traceback_keeps_only_user_frames():
    f = ng.jit(_control_flow, backend="numpy")
    with pytest.raises(ng.TracingError) as info:
        f(ng.ones(3))
    frames = traceback.extract_tb(info.value.__traceback__)
    numgrad_frames = [fs for fs in frames if _in_package(fs.filename)]
    assert len(numgrad_frames) == 1  # the public call that re-raises it (hidden in IPython)
    assert numgrad_frames[0].name == "__call__"
    assert frames[-1].name == "_control_flow" and "x.sum() > 0" in frames[-1].line
    assert "test_jupyter.py" in str(info.value)  # the message names the user's line
    assert tracebacks.NOTE in getattr(info.value, "__notes__", [])


def test_traceback_filtering_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("NUMGRAD_TRACEBACK_FILTERING", "off")
    f = ng.jit(_control_flow, backend="numpy")
    with pytest.raises(ng.TracingError) as info:
        f(ng.ones(3))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert sum(_in_package(fs.filename) for fs in frames) > 3


def test_error_message_names_the_ipython_cell(monkeypatch):
    cell = "/tmp/ipykernel_123/456.py"

    class Compiler:
        def format_code_name(self, name):
            return ("Cell", "In[7]") if name == cell else None

    shell = types.SimpleNamespace(compile=Compiler())
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    code = compile("def f(x):\n    if x.max() > 0:\n        return x\n    return x\n", cell, "exec")
    ns = {}
    exec(code, ns)
    with pytest.raises(ng.TracingError, match=r"at Cell In\[7\], line 2"):
        ng.jit(ns["f"], backend="numpy")(ng.ones(2))


def _slow(x):
    time.sleep(0.4)
    return x * 2


def test_slow_compile_prints_one_line_and_hits_print_nothing(monkeypatch, capsys):
    monkeypatch.setenv("NUMGRAD_PROGRESS_DELAY", "0.1")
    f = ng.jit(_slow, backend="numpy")
    x = ng.ones(3)
    f(x)
    err = capsys.readouterr().err
    assert err.count("numgrad: compiling _slow") == 1 and "done in" in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1
    f(x)
    assert capsys.readouterr().err == ""  # a cache hit is silent


def test_fast_compile_prints_nothing(capsys):
    f = ng.jit(lambda x: x + 1, backend="numpy")
    f(ng.ones(2))
    assert capsys.readouterr().err == ""


def test_progress_counts_kernels_bound_in_the_module():
    name = "numgrad_test_progress_module"
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    try:
        with progress.compiling("loss"):
            progress.note("bwd", name, ["k0", "k1", "k2"])
            mod.k0 = mod.k1 = object()
            rep = progress._local.current
            assert rep.text() == "numgrad: compiling loss (backward 2/3 kernels)…"
    finally:
        del sys.modules[name]
    assert progress._local.current is None



def test_names_of_nested_and_star_arguments():
    from numgrad.compiler.pytree import leaf_names

    def f(params, *rest, scale=1.0, **extra):
        return params

    names = leaf_names(f, ((1, 2), 3, {"a": 4}), {"scale": 2.0, "bias": 5, "α": 6})
    assert names == ["params_0", "params_1", "rest_0", "rest_1_a", "scale", "bias", None]


def test_parameter_named_like_a_letter_value_keeps_its_name():
    def g(b, a):  # letters the IR would otherwise give intermediates
        return (a * b + a).sum()

    cf = ng.jit(g, backend="numpy")
    a, b = ng.ones(3, requires_grad=True), ng.ones(3, requires_grad=True)
    text = str(cf.trace(b, a))
    defined = [ln.split(":")[0].strip() for ln in text.splitlines()[1:] if " = " in ln]
    assert "a" not in defined and "b" not in defined
    assert text.splitlines()[0].startswith("{ lambda b:f32[3]{grad} a:f32[3]{grad}")
    out = cf(b, a)
    out.backward()
    assert np.allclose(a.grad.numpy(), 2.0) and np.allclose(b.grad.numpy(), 1.0)


def test_value_and_grad_trace_shows_its_backward_band():
    vg = ng.jit(ng.value_and_grad(lambda x: (x.tanh() * 3.0).sum()), backend="numpy")
    g = vg.trace(ng.ones(3))
    assert "# backward" in str(g)
    bwd = str(g).split("# backward")[1]
    assert "{no_grad}" not in bwd and "tanh" not in bwd  # the derivative, not the forward
    assert ">backward (derived)<" in g.picture().svg()


def test_progress_line_ends_with_the_parts_it_started_counting(monkeypatch, capsys):
    monkeypatch.setenv("NUMGRAD_PROGRESS_DELAY", "0.05")
    name = "numgrad_test_progress_parts"
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    try:
        with progress.compiling("loss"):
            progress.note("fwd", name, ["f0"])
            mod.f0 = object()
            progress.note("bwd", name, ["b0", "b1"])
            time.sleep(0.3)
            mod.b0 = mod.b1 = object()
    finally:
        del sys.modules[name]
    err = capsys.readouterr().err
    start, end = err.split("…")
    assert start == "numgrad: compiling loss (forward 1 kernel + backward 0/2 kernels)"
    assert end.startswith(" done in ") and end.rstrip().endswith(
        "(forward 1 kernel + backward 2 kernels)")


def test_in_a_notebook_the_line_is_one_display_updated_in_place(monkeypatch, capsys):
    shown = []

    class Handle:
        def update(self, obj, raw):
            shown.append(obj["text/plain"])

    monkeypatch.setenv("NUMGRAD_PROGRESS_DELAY", "0.05")
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(progress, "_display", lambda text: shown.append(text) or Handle())
    with progress.compiling("loss"):
        time.sleep(0.3)
    assert capsys.readouterr().err == ""  # no stderr box
    assert shown[0] == "numgrad: compiling loss (tracing)…"
    assert shown[-1].startswith("numgrad: compiled loss: done in ")


def test_stats_print_seconds_to_the_millisecond():
    f = ng.jit(_slow, backend="numpy")
    f(ng.ones(2))
    text = repr(f.stats)
    seconds = text.split("compile_seconds=")[1].rstrip(")")
    assert len(seconds.split(".")[1]) <= 3 and float(seconds) >= 0.4


def test_graphviz_svg_without_dot_says_how_to_get_it(monkeypatch):
    import shutil
    g = ng.jit(lambda x: x * 2, backend="numpy").trace(ng.ones(2))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="install Graphviz"):
        g.graphviz_svg()

"""compiler.pipeline: ``lower`` runs the stages ``STAGES`` names, in that order, and the
programs it gives compute what eager mode computes."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
from numgrad.compiler import pipeline


def test_stages_are_the_functions_lower_calls(monkeypatch):
    calls = []
    for name in pipeline.STAGES:
        stage = getattr(pipeline, name)

        def spy(*args, _stage=stage, _name=name, **kwargs):
            calls.append(_name)
            return _stage(*args, **kwargs)
        monkeypatch.setattr(pipeline, name, spy)
    f = ng.jit(lambda x: (x * x).sum(), backend="numpy")
    x = ng.tensor([1.0, 2.0, 3.0], requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    per_graph = list(pipeline.STAGES[3:])
    # trace and autodiff once, the passes per graph, then each graph through the backend.
    assert calls == ["trace", "autodiff", "passes", "passes"] + per_graph + per_graph


def test_stage_names_are_in_pipeline_order():
    assert pipeline.STAGES == ("trace", "autodiff", "passes", "schedule", "render", "build",
                               "load")


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_compile_graph_runs_one_graph(backend):
    from numgrad.compiler.backends import get_backend
    f = ng.jit(lambda x: (x.exp() + 1.0).sum(dim=0))
    x = ng.tensor(np.arange(6.0).reshape(2, 3))
    graph = f.trace(x)
    prog = pipeline.compile_graph(graph, get_backend(backend),
                                  pipeline.Options(name="g", cache=False))
    (out,) = prog([x.numpy()])
    np.testing.assert_allclose(out, (np.exp(x.numpy()) + 1.0).sum(axis=0))

"""ng.profiler in torch.profiler's shape: eager ops and backward nodes, a compiled call's
stages and kernels, nesting, the table, the Chrome trace."""
from __future__ import annotations

import json

import pytest

import numgrad as ng
from numgrad.ops.registry import Primitive


@ng.jit
def _loss(x, w):
    return ((x.sin() * x) @ w).tanh().sum()


def _names(prof):
    return [e.name for e in prof.events()]


def test_eager_ops_and_backward_nodes_are_events():
    x = ng.randn(8, requires_grad=True)
    with ng.profiler.profile(record_shapes=True) as prof:
        (x.sin() * x).sum().backward()
    names = _names(prof)
    for op in ("numgrad::sin", "numgrad::mul", "numgrad::sum"):
        assert op in names
    assert "autograd::engine::evaluate_function: MulBackward0" in names
    rows = {a.key: a for a in prof.key_averages(group_by_input_shape=True)}
    assert rows["numgrad::mul"].input_shapes == ((8,), (8,))
    for a in prof.key_averages():
        assert 0 <= a.self_cpu_time_total <= a.cpu_time_total + 1e-9
        assert a.cpu_time == pytest.approx(a.cpu_time_total / a.count)


def test_a_compiled_call_shows_its_stages_once_and_its_kernels_each_call():
    x, w = ng.randn(16, requires_grad=True), ng.randn(16, 3, requires_grad=True)
    with ng.profiler.profile() as first:
        _loss(x, w).backward()
    stages = [n for n in _names(first) if n.startswith("jit::")]
    for stage in ("jit::trace", "jit::autodiff", "jit::passes", "jit::build"):
        assert stage in stages
    with ng.profiler.profile() as later:
        _loss(x, w).backward()
        _loss(x, w).backward()
    names = _names(later)
    assert "jit::trace" not in names  # a warm call traces nothing
    assert any(n.startswith("kernel ") for n in names)
    assert any(n.startswith("jit::program") for n in names)


def test_table_sorts_limits_and_names_its_columns():
    x = ng.randn(4)
    with ng.profiler.profile() as prof:
        for _ in range(3):
            x.exp()
        x.log()
    table = prof.key_averages().table(sort_by="count", row_limit=1)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert lines[3].startswith("numgrad::exp") and lines[3].rstrip().endswith("3")
    assert "numgrad::log" not in table  # row_limit=1
    assert lines[-1].startswith("Self CPU time total:")
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="bogus")


def test_record_function_nests_and_self_time_excludes_children(tmp_path):
    x = ng.randn(100)

    @ng.profiler.record_function("outer")
    def work():
        return (x * 2).exp()

    with ng.profiler.profile() as prof:
        work()
    rows = {a.key: a for a in prof.key_averages()}
    outer = rows["outer"]
    inner = rows["numgrad::mul"].cpu_time_total + rows["numgrad::exp"].cpu_time_total
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - inner, abs=1e-3)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.loads(open(path).read())["traceEvents"]
    assert {e["ph"] for e in events} == {"X"}
    assert {e["name"] for e in events} >= {"outer", "numgrad::mul", "numgrad::exp"}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in events)


def test_profiling_ends_cleanly_and_one_profile_records_at_a_time():
    plain = Primitive.__call__
    with pytest.raises(ZeroDivisionError):
        with ng.profiler.profile():
            1 / 0
    assert Primitive.__call__ is plain
    with ng.profiler.profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            ng.profiler.profile().start()
    assert Primitive.__call__ is plain
    with ng.profiler.profile() as prof:
        pass
    ng.ones(2).exp()  # after the block: not recorded
    assert prof.events() == []

"""numgrad.utils.benchmark.Timer / Measurement: what they run, their statistics and their repr,
against torch.utils.benchmark's."""
import re

import numpy as np
import pytest

import numgrad as ng
from numgrad.utils.benchmark import Measurement, TaskSpec, Timer

torch = pytest.importorskip("torch")
from torch.utils.benchmark import Timer as TorchTimer  # noqa: E402
from torch.utils.benchmark.utils.common import Measurement as TorchMeasurement  # noqa: E402
from torch.utils.benchmark.utils.common import TaskSpec as TorchTaskSpec  # noqa: E402


def test_timeit_runs_the_statement_number_times_after_setup_with_globals():
    calls = []
    m = Timer("f()", setup="calls.clear()", globals={"f": lambda: calls.append(1),
                                                     "calls": calls}).timeit(7)
    assert len(calls) == 7 and m.number_per_run == 7 and len(m.raw_times) == 1
    assert m.times == [m.raw_times[0] / 7]
    assert Timer("torch.ones(2)").timeit(2).number_per_run == 2   # torch is numgrad here


def _strip(text):
    return re.sub(r"0x[0-9a-f]+", "ADDR", text).replace(
        "torch.utils.benchmark.utils.common", "numgrad.utils.benchmark")


@pytest.mark.parametrize("raw,number,setup,label", [
    ([3e-3], 3, "pass", None), ([1e-6, 2e-6, 1.5e-6, 9e-6, 1.1e-6], 10, "x = 1", "add"),
    ([0.5, 0.52, 0.51, 0.49], 1, "a = 1\nb = 2", None)])
def test_measurement_statistics_and_repr_match_torchs(raw, number, setup, label):
    spec = dict(stmt="y = x + 1", setup=setup, label=label)
    got = Measurement(number, raw, TaskSpec(**spec))
    want = TorchMeasurement(number, raw, TorchTaskSpec(**spec))
    assert _strip(repr(got)) == _strip(repr(want))
    np.testing.assert_allclose([got.median, got.mean, got.iqr],
                               [want.median, want.mean, want.iqr])
    assert got.title == want.title and got.meets_confidence() == want.meets_confidence()


def test_blocked_autorange_spends_at_least_min_run_time():
    m = Timer("sum(range(50))").blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and m.number_per_run >= 1


def test_bad_arguments_raise_torchs_errors():
    for kw in ({"stmt": lambda: 0}, {"global_setup": "int x;"}, {"language": "fortran"}):
        with pytest.raises(ValueError) as want:
            TorchTimer(**kw)
        with pytest.raises(ValueError) as got:
            Timer(**kw)
        assert str(got.value) == str(want.value)

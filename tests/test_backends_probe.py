"""What programs probe before choosing a device answers as PyTorch's does on a machine without
those backends: torch.xpu, torch.backends.mps, torch.backends.cudnn."""
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


def test_probes_answer_as_torch_without_those_backends():
    assert ng.xpu.is_available() is torch.xpu.is_available() is False
    assert ng.xpu.device_count() == torch.xpu.device_count() == 0
    assert ng.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert ng.backends.mps.is_built() is False
    assert ng.backends.cudnn.is_available() is False and ng.backends.cudnn.version() is None
    c, tc = ng.backends.cudnn, torch.backends.cudnn
    assert (c.enabled, c.benchmark, c.deterministic) == (tc.enabled, tc.benchmark,
                                                         tc.deterministic)


def test_cudnn_switches_are_settable(monkeypatch):
    monkeypatch.setattr(ng.backends.cudnn, "deterministic", True)
    assert ng.backends.cudnn.deterministic is True

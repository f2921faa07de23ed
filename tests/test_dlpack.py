"""DLPack both ways: numgrad <-> torch and numgrad <-> NumPy share memory (a write through
one side is read through the other), torch's refusals are matched, and CUDA producers
and CUDA tensors take the routes the protocol leaves (Numba's simulator without a GPU)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402

DTYPES = ["float32", "float64", "int64", "bool"]


def _data(dtype, shape=(2, 3)):
    a = np.arange(int(np.prod(shape))).reshape(shape) % 3
    return (a > 0) if dtype == "bool" else a.astype(dtype)


def _poke(dtype):
    return True if dtype == "bool" else 7


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_from_dlpack_shares_a_numgrad_tensors_memory(dtype):
    t = ng.tensor(_data(dtype))
    tt = torch.from_dlpack(t)
    assert tuple(tt.shape) == t.shape and str(tt.dtype) == f"torch.{dtype}"
    assert_close(t, tt)
    tt[0, 0] = _poke(dtype)            # write through torch ...
    assert t.numpy()[0, 0] == _poke(dtype)   # ... read through numgrad
    t[1, 2] = _poke(dtype)             # and the other way
    assert tt[1, 2].item() == _poke(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ng_from_dlpack_shares_a_torch_tensors_memory(dtype):
    tt = torch.tensor(_data(dtype))
    t = ng.from_dlpack(tt)
    assert t.dtype == getattr(ng, dtype) and t.shape == tuple(tt.shape)
    t[0, 1] = _poke(dtype)
    assert tt[0, 1].item() == _poke(dtype)
    tt[1, 0] = _poke(dtype)
    assert t.numpy()[1, 0] == _poke(dtype)


def test_strided_0d_and_empty_tensors_round_trip():
    base = ng.tensor(np.arange(12.0).reshape(3, 4))
    tt = torch.from_dlpack(base.T)          # a transposed view: strides travel
    assert_close(base.T, tt)
    tt[0, 2] = -1.0
    assert base.numpy()[2, 0] == -1.0
    back = ng.from_dlpack(torch.arange(12.0).reshape(3, 4).T)
    assert_close(back, torch.arange(12.0).reshape(3, 4).T)
    assert torch.from_dlpack(ng.tensor(2.5)).item() == 2.5
    assert torch.from_dlpack(ng.zeros(0, 3)).shape == (0, 3)
    assert ng.from_dlpack(torch.tensor(3)).shape == ()
    assert_close(torch.from_dlpack(ng.ones(1).expand(3)), torch.ones(3))  # a read-only view


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_from_dlpack_both_ways(dtype):
    t = ng.tensor(_data(dtype))
    a = np.from_dlpack(t)
    a[0, 0] = _poke(dtype)
    assert t.numpy()[0, 0] == _poke(dtype)
    b = _data(dtype).copy()
    u = ng.from_dlpack(b)
    b[1, 1] = _poke(dtype)
    assert u.numpy()[1, 1] == _poke(dtype)
    assert np.shares_memory(u.numpy(), b)


def test_dlpack_device_matches_torch():
    assert ng.ones(2).__dlpack_device__() == tuple(int(v) for v in
                                                   torch.ones(2).__dlpack_device__())
    assert ng.ones(2).__dlpack_device__() == (1, 0)


def test_export_of_a_tensor_requiring_grad_is_refused_as_torch():
    msgs = []
    for lib in (ng, torch):
        with pytest.raises(BufferError) as info:
            lib.ones(2, requires_grad=True).__dlpack__()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    with pytest.raises(BufferError, match="detach"):
        torch.from_dlpack(ng.ones(2, requires_grad=True))
    assert torch.from_dlpack(ng.ones(2, requires_grad=True).detach()).shape == (2,)


def test_copy_true_does_not_share():
    tt = torch.zeros(3)
    t = ng.from_dlpack(tt, copy=True)
    t[0] = 1.0
    assert tt[0].item() == 0.0


def test_clear_errors_for_non_producers_and_missing_dtypes():
    with pytest.raises(TypeError, match="DLPack producer"):
        ng.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="pass the tensor itself"):
        ng.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(2)))
    with pytest.raises(TypeError, match="no float16 dtype"):
        ng.from_dlpack(torch.ones(2, dtype=torch.float16))


class _Producer:
    """A device array as a GPU library would hand it over: DLPack's device query and
    capsule (refused here), or only the CUDA array interface of memory it owns."""

    def __init__(self, device, cai=None, dlpack=True):
        self._device = device
        if cai is not None:
            self.__cuda_array_interface__ = cai
        if dlpack:
            self.__dlpack_device__ = lambda: self._device
            self.__dlpack__ = self._refuse

    def _refuse(self, **kwargs):
        raise BufferError("this producer cannot export to DLPack")


def test_unreachable_devices_are_clear_errors():
    with pytest.raises(BufferError, match="cannot export"):
        ng.from_dlpack(_Producer((2, 0)))           # the producer's own error
    with pytest.raises(BufferError, match="device type 4"):
        ng.from_dlpack(_Producer((4, 0)))


def _simulator():
    import numgrad.cuda.device as cuda_device
    if not (cuda_device.simulated() or cuda_device.available()):
        pytest.skip("neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")


def test_cuda_producer_with_only_an_array_interface_is_imported_through_it():
    _simulator()
    src = ng.tensor(np.arange(4.0), device="cuda")  # stands in for a GPU library's memory
    t = ng.from_dlpack(_Producer((2, 0), src.__cuda_array_interface__, dlpack=False))
    assert t.device == ng.device("cuda", 0)
    assert t.__cuda_array_interface__["data"] == src.__cuda_array_interface__["data"]
    src._data.buf.copy_to_device(3 * np.arange(4.0))  # written on the producer's side
    np.testing.assert_array_equal(t.cpu().numpy(), 3 * np.arange(4.0))


def test_cuda_tensor_reports_kdlcuda_and_exports_a_capsule():
    _simulator()
    x = ng.ones(3, device="cuda")
    assert x.__dlpack_device__() == (2, 0)
    assert type(x.__dlpack__()).__name__ == "PyCapsule"   # layout: tests/compiler/backends/cuda

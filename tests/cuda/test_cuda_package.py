"""``ng.cuda`` is the eager CUDA runtime package (numgrad/cuda), and the slots through which
the layers above it plug in are filled by ``import numgrad``."""
from __future__ import annotations

import numgrad as ng
import numgrad.autograd.engine as engine
import numgrad.cuda.array as cuda_array
import numgrad.cuda.eager as cuda_eager
import numgrad.ops.late as late
from numgrad.ops.device_copy import to_device
from numgrad.ops.elementwise import to_dtype
from numgrad.tensor import Tensor


def test_ng_cuda_is_the_runtime_package():
    assert ng.cuda.__name__ == "numgrad.cuda"
    for name in ("is_available", "device_count", "memory_stats", "empty_cache", "synchronize"):
        assert callable(getattr(ng.cuda, name)), name
    # torch.cuda.device_count: 0 without a device; Numba's simulator is one device.
    assert ng.cuda.device_count() == (1 if ng.cuda.is_available() else 0)


def test_the_layers_above_fill_the_slots_below():
    interp = cuda_eager.INTERPRETER
    assert cuda_array.CudaArray._ng_interpreter is interp
    assert (interp.move, interp.cast_prim) == (to_device, to_dtype)
    assert callable(interp.record_alias) and callable(cuda_eager.load_compiler)
    assert cuda_array.is_seed is engine.is_implicit_seed
    assert Tensor._ng_engine is engine
    for slot in ("_ng_node_hooks", "_ng_creation", "_ng_printing", "_ng_dlpack"):
        assert getattr(Tensor, slot) is not None, slot
    unfilled = [k for k, v in vars(late).items() if not k.startswith("_") and v is None]
    assert unfilled == []
    assert ng.nn.functional.batch_norm.__module__ == "numgrad.nn.functional_norm"
    assert ng.optim.lr_scheduler.OneCycleLR.__module__ == "numgrad.optim.schedules"

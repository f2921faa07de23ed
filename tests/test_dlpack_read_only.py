"""``ng.from_dlpack`` of read-only host memory: numgrad's tensors are writable, so the memory
is copied (and an in-place op then works, as in PyTorch, instead of failing with a message
about overlapping memory); ``copy=False`` says it is read-only."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


def test_read_only_memory_is_copied_and_written_in_place_like_torch():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = ng.from_dlpack(a)
    t.add_(1)
    want = torch.from_dlpack(np.arange(3.0)).add_(1)
    np.testing.assert_array_equal(t.numpy(), want.numpy())
    np.testing.assert_array_equal(a, [0.0, 1.0, 2.0])  # the producer's memory is untouched
    with pytest.raises(BufferError, match="read-only"):
        ng.from_dlpack(a, copy=False)


def test_writable_memory_is_still_shared():
    a = np.zeros(3)
    ng.from_dlpack(a).add_(2)
    np.testing.assert_array_equal(a, [2.0, 2.0, 2.0])

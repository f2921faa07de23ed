"""ng.load takes torch.load's mmap= keyword: a path loads the same tensors, a file object is
PyTorch's ValueError."""
import io

import numpy as np
import pytest

import numgrad as ng


def test_mmap_path_loads_the_same_tensors(tmp_path):
    path = tmp_path / "ckpt.pt"
    sd = ng.nn.Linear(3, 2).state_dict()
    ng.save(sd, path)
    got = ng.load(path, mmap=True)
    assert list(got) == list(sd)
    for k in sd:
        np.testing.assert_array_equal(got[k].numpy(), sd[k].numpy())


def test_mmap_with_a_file_object_is_a_value_error():
    buf = io.BytesIO()
    ng.save({"a": ng.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="must be a file path in order to use the mmap"):
        ng.load(buf, mmap=True)

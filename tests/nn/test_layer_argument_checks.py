"""Bad sizes to ``nn.Linear``, ``nn.Embedding`` and ``nn.LayerNorm`` and bad ``batch_size``
to ``DataLoader`` are refused at construction with PyTorch's error class and text (not
accepted, to fail later or never)."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

LAYERS = [
    ("Linear", (3.5, 2)), ("Linear", (2, 3.5)), ("Linear", ("3", 2)), ("Linear", (-1, 2)),
    ("Linear", (2, -4)), ("Embedding", (-1, 2)), ("Embedding", (1.5, 2)),
    ("LayerNorm", ((2, 1.5),)), ("LayerNorm", ((1.5,),)),
    ("LayerNorm", (-2,)),
]


@pytest.mark.parametrize("name,args", LAYERS, ids=[f"{n}{a}" for n, a in LAYERS])
def test_bad_layer_sizes_raise_torchs_error(name, args):
    with pytest.raises(Exception) as want:
        getattr(torch.nn, name)(*args)
    with pytest.raises(type(want.value)) as got:
        getattr(ng.nn, name)(*args)
    assert str(got.value) == str(want.value)


def test_sizes_torch_takes_are_taken():
    for args in [(np.int64(3), 2), (0, 2), (True, 2)]:
        layer, ref = ng.nn.Linear(*args), torch.nn.Linear(*args)
        assert layer.weight.shape == tuple(ref.weight.shape)


@pytest.mark.parametrize("batch_size", [1.5, "2", np.int64(2), True, 0, -1, 2.0])
def test_bad_batch_sizes_raise_torchs_value_error(batch_size):
    with pytest.raises(ValueError) as want:
        torch.utils.data.DataLoader(list(range(5)), batch_size=batch_size)
    with pytest.raises(ValueError) as got:
        ng.utils.data.DataLoader(list(range(5)), batch_size=batch_size)
    assert str(got.value) == str(want.value)


def test_good_batch_sizes_still_batch():
    assert len(ng.utils.data.DataLoader(list(range(5)), batch_size=2)) == 3
    assert len(ng.utils.data.DataLoader(list(range(5)), batch_size=None)) == 5

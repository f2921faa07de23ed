"""utils.data and ng.randperm: batching, shuffling, drop_last and collation, against torch's
DataLoader where the order is deterministic."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import numgrad as ng
from numgrad.utils.data import DataLoader, Dataset, TensorDataset, default_collate

torch = pytest.importorskip("torch")
import torch.utils.data as tud  # noqa: E402


def _both(n=10):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.int64)
    return (TensorDataset(ng.from_numpy(x), ng.from_numpy(y)),
            tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))


def _lists(loader):
    return [tuple(t.tolist() for t in batch) for batch in loader]


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (5, False), (1, True),
                                                  (20, False), (20, True)])
def test_sequential_batches_match_torch(batch_size, drop_last):
    ours, theirs = _both()
    a = DataLoader(ours, batch_size=batch_size, drop_last=drop_last)
    b = tud.DataLoader(theirs, batch_size=batch_size, drop_last=drop_last)
    assert len(a) == len(b)
    assert _lists(a) == _lists(b)


def test_shuffle_covers_each_sample_once_and_is_seeded():
    ours, _ = _both(23)
    loader = DataLoader(ours, batch_size=4, shuffle=True)
    ng.manual_seed(0)
    first = [b[1].tolist() for b in loader]
    second = [b[1].tolist() for b in loader]
    assert sorted(sum(first, [])) == list(range(23)) and [len(b) for b in first][-1] == 3
    assert first != second  # a fresh order each epoch
    ng.manual_seed(0)
    assert [b[1].tolist() for b in loader] == first
    for xb, yb in loader:  # the pairs stay aligned
        assert (xb[:, 0].numpy() == yb.numpy() * 2).all()
    gen = DataLoader(ours, batch_size=4, shuffle=True, generator=np.random.default_rng(1))
    assert sorted(sum([b[1].tolist() for b in gen], [])) == list(range(23))


def test_batches_are_copies_of_the_dataset():
    ours, _ = _both()
    for loader in (DataLoader(ours, batch_size=4), DataLoader(ours, batch_size=4, shuffle=True)):
        xb, _ = next(iter(loader))
        xb.mul_(0)
        assert ours.tensors[0].numpy().sum() == np.arange(20).sum()


class _Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": ng.tensor([float(i), float(i * i)]), "i": i, "f": i / 2}


class _TSquares(tud.Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i), float(i * i)]), "i": i, "f": i / 2}


def test_map_dataset_collation_matches_torch():
    a = list(DataLoader(_Squares(), batch_size=2))
    b = list(tud.DataLoader(_TSquares(), batch_size=2))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert list(x) == list(y)
        for k in x:
            assert x[k].tolist() == y[k].tolist()
            assert str(x[k].dtype).split(".")[-1] == str(y[k].dtype).split(".")[-1]


def test_default_collate_tuples_lists_namedtuples():
    Pt = collections.namedtuple("Pt", "a b")
    out = default_collate([Pt(ng.tensor(1.0), 2), Pt(ng.tensor(3.0), 4)])
    assert type(out) is Pt and out.a.tolist() == [1.0, 3.0] and out.b.tolist() == [2, 4]
    assert [t.tolist() for t in default_collate([[1, 2], [3, 4]])] == [[1, 3], [2, 4]]
    assert default_collate([np.zeros(2), np.ones(2)]).tolist() == [[0, 0], [1, 1]]
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object()])


def test_batch_size_none_and_errors():
    ours, _ = _both(3)
    assert [s[1].item() for s in DataLoader(ours, batch_size=None)] == [0, 1, 2]
    with pytest.raises(ValueError, match="positive integer"):
        DataLoader(ours, batch_size=0)
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(ng.zeros(3), ng.zeros(4))


def test_randperm():
    ng.manual_seed(3)
    a = ng.randperm(50)
    assert a.dtype is ng.int64 and sorted(a.tolist()) == list(range(50))
    ng.manual_seed(3)
    assert ng.randperm(50).tolist() == a.tolist()
    assert ng.randperm(50).tolist() != a.tolist()
    assert ng.randperm(0).shape == (0,) and ng.randperm(4, dtype=ng.float64).dtype is ng.float64
    with pytest.raises(RuntimeError) as ours:
        ng.randperm(-1)
    with pytest.raises(RuntimeError) as theirs:
        torch.randperm(-1)
    assert str(ours.value) == str(theirs.value)

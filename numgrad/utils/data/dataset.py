"""utils.data.dataset: ``Dataset`` and ``TensorDataset`` (``torch.utils.data``).

Room: utils.
"""
from __future__ import annotations

from numgrad.tensor import Tensor


class Dataset:
    """A map-style dataset: subclasses give ``__getitem__(i)`` and ``__len__``
    (``torch.utils.data.Dataset``)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class TensorDataset(Dataset):
    """Samples are ``(t[i] for t in tensors)``, the tensors indexed along their first dim
    (``torch.utils.data.TensorDataset``).

    >>> ds = ng.utils.data.TensorDataset(ng.arange(6).reshape(3, 2), ng.arange(3))
    >>> len(ds), ds[1]
    (3, (tensor([2, 3]), tensor(1)))

    Raises ValueError when the tensors' first dims differ.
    """

    def __init__(self, *tensors: Tensor):
        if not tensors or any(not isinstance(t, Tensor) or t.ndim == 0 for t in tensors):
            raise TypeError("TensorDataset() expects one or more tensors with a first dim")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

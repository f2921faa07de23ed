"""utils.data.dataloader: ``DataLoader`` and ``default_collate`` (``torch.utils.data``).

Room: utils. Batches are formed in the main process (no workers). A ``TensorDataset`` is
sliced a whole batch at a time (one gather per tensor, not one index per sample); any other
dataset is indexed per sample and collated.

When the last batch will be smaller (``drop_last=False`` and a length the batch size does
not divide), every batch's tensors are marked as varying along dim 0 (as
``torch._dynamo.mark_dynamic`` marks them): an ``@ng.jit`` function called with them
builds a shape-generic plan from the first batch, which the last batch reuses without a
compile (docs/design-notes.md, "Partial last batch").
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.creation as creation
import numgrad.dtypes as dtypes
import numgrad.ops as ops
from numgrad.tensor import Tensor
from numgrad.utils.data.dataset import TensorDataset


def default_collate(batch: list):
    """Stack a list of samples into a batch, recursively through tuples, lists and dicts;
    numbers become a 1-D tensor, Python floats float64 (``torch.utils.data.default_collate``).

    Raises TypeError for a sample type it cannot batch."""
    first = batch[0]
    if isinstance(first, Tensor):
        return ops.stack(list(batch))
    if isinstance(first, np.ndarray):
        return ops.stack([creation.from_numpy(np.ascontiguousarray(a)) for a in batch])
    if isinstance(first, float):
        return creation.tensor(list(batch), dtype=dtypes.float64)  # as torch: Python floats
    if isinstance(first, (bool, int, np.number)):
        return creation.tensor(list(batch))
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in batch]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [default_collate(list(col)) for col in zip(*batch)]
        if hasattr(first, "_fields"):  # a namedtuple
            return type(first)(*columns)
        return tuple(columns) if isinstance(first, tuple) else columns
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(first).__name__}")


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` (``torch.utils.data.DataLoader``).

    ``shuffle=True`` draws a fresh order each epoch with ``ng.randperm`` (numgrad's
    generator, so ``ng.manual_seed`` makes it repeatable; or pass ``generator``, a NumPy
    ``Generator``); ``drop_last=True`` drops a final partial batch.

    >>> ds = ng.utils.data.TensorDataset(ng.arange(5))
    >>> [b[0].tolist() for b in ng.utils.data.DataLoader(ds, batch_size=2)]
    [[0, 1], [2, 3], [4]]

    Raises ValueError for a batch_size that is not a positive Python int (PyTorch's test).
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool = False,
                 drop_last: bool = False, collate_fn=None, generator=None):
        # PyTorch's BatchSampler test: a Python int (not a bool, float, str or NumPy int).
        if batch_size is not None and (not isinstance(batch_size, int)
                                       or isinstance(batch_size, bool) or batch_size < 1):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self.generator = generator

    def __len__(self):
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def _order(self):
        n = len(self.dataset)
        if self.shuffle:
            return creation.randperm(n, generator=self.generator)
        return None

    def __iter__(self):
        n = len(self.dataset)
        order = self._order()
        if self.batch_size is None:
            for i in range(n):
                yield self.dataset[int(order[i]) if order is not None else i]
            return
        fast = type(self.dataset) is TensorDataset and self.collate_fn is default_collate
        ragged = not self.drop_last and n % self.batch_size != 0
        for b in range(len(self)):
            lo, hi = b * self.batch_size, min((b + 1) * self.batch_size, n)
            if fast:
                # A gather copies; a slice would be a view, and an in-place op on the
                # batch would then write into the dataset.
                idx = order[lo:hi] if order is not None else creation.arange(lo, hi)
                batch = tuple(t[idx] for t in self.dataset.tensors)
            else:
                ids = order[lo:hi].tolist() if order is not None else range(lo, hi)
                batch = self.collate_fn([self.dataset[i] for i in ids])
            if ragged:
                _mark_batch_dim(batch)
            yield batch


def _mark_batch_dim(batch, depth=0):
    """Mark dim 0 of the tensors in ``batch`` (through tuples, lists and dicts) as one
    that varies between calls (``Tensor._ng_dynamic``)."""
    if isinstance(batch, Tensor):
        if batch.ndim:
            batch._ng_dynamic = (0,)
    elif isinstance(batch, (tuple, list)) and depth < 8:
        for b in batch:
            _mark_batch_dim(b, depth + 1)
    elif isinstance(batch, dict) and depth < 8:
        for b in batch.values():
            _mark_batch_dim(b, depth + 1)

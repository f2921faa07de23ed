"""ops.index_check: ``check_targets``, the bounds check of class indices that ``nll_loss``
(and so ``cross_entropy``) runs before it reads them, eagerly and under ``@ng.jit`` alike.

Room: ops. Imports NumPy and the registry. ``nll_loss`` picks each row's class through a
one-hot mask (traceable, no data-dependent indexing), and a mask never fails: an index
out of range would select nothing and add 0 to the loss. So the indices pass through this
identity op first, a host step that raises PyTorch's ``IndexError`` for any target outside
``[0, classes)`` other than ``ignore_index``. The common case costs one vectorised
unsigned comparison over the targets (negative int64 read as uint64 are huge), with no
kernel split: the targets are usually an input of the compiled function, so the step runs
before the first kernel, and on the CPU it passes the same array on without a copy.
"""
from __future__ import annotations

import numpy as np

from numgrad.ops.registry import defop


def _check(idx, classes, ignore_index):
    if not idx.size:
        return idx
    flat = idx if idx.flags.c_contiguous else np.ascontiguousarray(idx)
    # One pass, no temporary: read as unsigned a negative index is huge, so the largest
    # entry is below ``classes`` exactly when every entry is in [0, classes).
    unsigned = f"u{flat.itemsize}"
    if flat.view(unsigned).max() >= classes:
        flat = flat.reshape(-1)
        bad = flat[(flat.view(unsigned) >= classes) & (flat != ignore_index)]
        if bad.size:
            raise IndexError(f"Target {int(bad[0])} is out of bounds.")
    return idx


check_targets_p = defop("check_targets", inputs=("idx",), params=("classes", "ignore_index"),
                        impl=_check, abstract=lambda idx, classes, ignore_index: (
                            idx.shape, np.dtype(idx.dtype)))
check_targets_p.defvjp(None)


def check_targets(target, classes: int, ignore_index: int):
    """``target`` itself, after checking that each entry is a class index in
    ``[0, classes)`` or ``ignore_index`` (PyTorch's ``IndexError`` otherwise); checked
    when the values are known, so under ``@ng.jit`` on every call.

    >>> check_targets(ng.tensor([0, 2, -100]), 3, -100)
    tensor([   0,    2, -100])
    """
    return check_targets_p(target, classes=int(classes), ignore_index=int(ignore_index))

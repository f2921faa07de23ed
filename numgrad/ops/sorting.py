"""ops.sorting: sort, argsort and topk.

Room: ops. One new primitive, ``argsort``: the permutation that sorts a dim (no
gradient; integers have none). Values are ``gather(x, dim, indices)``, so the gradient
scatters back through the indices (``scatter_add``), as PyTorch's ``SortBackward0`` and
``TopkBackward0`` do, and every order of derivative comes from the indexing primitives.
Under ``@ng.jit`` the argsort runs its NumPy impl as a host step between kernels
(``role="host"``) and the gather reads its traced indices, so nothing in the compiler
is specific to sorting.

Order is PyTorch's on the CPU: stable (equal values keep their input order, both
ascending and descending), NaN above ``+inf`` (last ascending, first descending) and
``-0.0 == 0.0``.
"""
from __future__ import annotations

import numpy as np

from numgrad.ops.registry import defop
from numgrad.ops.layout import _dim
from numgrad.ops.reduction import _ValuesIndices  # (values, indices), like max(dim)
from numgrad.tensor import Tensor


def _np_argsort(x, dim, descending):
    if not descending:
        return np.argsort(x, axis=dim, kind="stable").astype(np.int64, copy=False)
    # A stable descending order that keeps equal values in input order: sort the reversed
    # dim ascending (stable), reverse that, and map positions back. NumPy's NaN-last
    # ascending order then puts NaN first, as PyTorch does.
    n = x.shape[dim]
    rev = np.argsort(np.flip(x, axis=dim), axis=dim, kind="stable")
    return (n - 1 - np.flip(rev, axis=dim)).astype(np.int64, copy=False)


argsort_p = defop("argsort", inputs=("x",), params=("dim", "descending"), impl=_np_argsort,
                  abstract=lambda x, dim, descending: (x.shape, np.dtype(np.int64)))
argsort_p.defvjp(None)


def _check(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _sorted_indices(x, dim, descending):
    """``(x as at least 1-D, dim, indices)``; a 0-d tensor sorts as one element."""
    from numgrad.ops.layout import reshape
    d = _dim(dim, max(x.ndim, 1))
    flat = reshape(x, (1,)) if x.ndim == 0 else x
    return flat, d, argsort_p(flat.detach(), dim=d, descending=bool(descending))


def _values(x, flat, d, idx):
    from numgrad.ops.composites import gather
    from numgrad.ops.layout import reshape
    values = gather(flat, d, idx)
    if x.ndim == 0:
        return reshape(values, ()), reshape(idx, ())
    return values, idx


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool | None = False,
         *, out=None) -> tuple:
    """``(values, indices)`` of ``input`` sorted along ``dim`` (``torch.sort``).

    The sort is always stable (equal values keep their order, as PyTorch's CPU sort
    does, so ``stable`` changes nothing); NaN sorts above ``inf``. The gradient of
    ``values`` scatters back through ``indices``.

    >>> v, i = ng.sort(ng.tensor([3., 1., 2.]), descending=True)
    >>> v, i
    (tensor([3., 2., 1.]), tensor([0, 2, 1]))
    """
    _check(input, "sort")
    if out is not None:
        raise TypeError("sort(): numgrad has no out= arguments; use the returned tensors")
    flat, d, idx = _sorted_indices(input, dim, descending)
    return _ValuesIndices(_values(input, flat, d, idx))


def argsort(input: Tensor, dim: int = -1, descending: bool = False,
            stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``torch.argsort``): int64, stable, no
    gradient.

    >>> ng.argsort(ng.tensor([3, 1, 2]))
    tensor([1, 2, 0])
    """
    _check(input, "argsort")
    from numgrad.ops.layout import reshape
    idx = _sorted_indices(input, dim, descending)[2]
    return reshape(idx, ()) if input.ndim == 0 else idx


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True,
         *, out=None) -> tuple:
    """``(values, indices)`` of the ``k`` largest (or, with ``largest=False``, smallest)
    entries along ``dim`` (``torch.topk``), in sorted order (also for ``sorted=False``,
    where PyTorch leaves the order unspecified). NaN counts as the largest value.

    Among equal values the first in input order is taken; PyTorch's CPU kernel may pick
    another of the tied entries (values agree; the gradient goes to the picked ones).
    Raises RuntimeError unless ``0 <= k <= input.size(dim)``.

    >>> ng.topk(ng.tensor([1., 4., 2., 8.]), 2)
    (tensor([8., 4.]), tensor([3, 1]))
    """
    _check(input, "topk")
    if out is not None:
        raise TypeError("topk(): numgrad has no out= arguments; use the returned tensors")
    k = int(k)
    flat, d, idx = _sorted_indices(input, dim, largest)
    if not 0 <= k <= flat.shape[d]:
        raise RuntimeError("selected index k out of range")
    if input.ndim == 0:
        return _ValuesIndices(_values(input, flat, d, idx))
    from numgrad.ops.indexing import getitem
    idx = getitem(idx, (slice(None),) * d + (slice(0, k),))
    return _ValuesIndices(_values(input, flat, d, idx))

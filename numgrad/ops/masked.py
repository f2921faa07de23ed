"""ops.masked: the ops whose result's length is the number of True entries of a mask:
``masked_select``, ``nonzero`` and ``argwhere``.

Room: ops. Composites over ``getitem`` (no primitive of their own): ``masked_select`` is
the broadcast input indexed by the broadcast mask, so its gradient is ``getitem``'s, a
scatter into zeros of the input's shape (summed back over broadcast dims by ``expand``).
Their extent depends on values, so a trace meeting one with a traced mask raises
``DataDependentError``, which ``@ng.jit`` answers with a graph break (``compiler.graph_break``).
"""
from __future__ import annotations

import threading

import numpy as np

import numgrad.tracing_hook as tracing_hook
from numgrad.errors import DataDependentError, user_location
from numgrad.ops.logical import _check
from numgrad.tensor import Tensor


_segments = threading.local()  # .run: the compiler's segmented run on this thread (graph_break)


def data_dependent(what, compute, *tensors):
    """The result of ``compute(*tensors)`` (an op whose result's size depends on the values of
    ``tensors``) met while tracing: inside a segmented run (``compiler.graph_break``) the
    traced stand-in of that result, which the run computes eagerly between the compiled
    segments; otherwise ``DataDependentError(what())``, which starts such a run."""
    run = getattr(_segments, "run", None)
    if run is None:
        raise DataDependentError(what())
    return run.at_break(compute, tensors)


def traced(t) -> bool:
    """Whether the tensor ``t`` is a value of a running trace (has no values yet)."""
    lifted = tracing_hook.standin(t)
    return not tracing_hook.concrete((t if lifted is None else lifted)._data)


def _host_values(x):
    """The values of ``x`` on the host (its callers refuse a traced ``x`` first)."""
    lifted = tracing_hook.standin(x)
    d = (x if lifted is None else lifted)._data
    host = getattr(d, "_ng_host", None)
    return np.asarray(d) if host is None else host()


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The entries of ``input`` where the boolean ``mask`` is True, as a 1-D tensor (both
    broadcast first; ``torch.masked_select``). Differentiable in ``input``.

    >>> x = ng.tensor([[1., -2.], [3., -4.]])
    >>> ng.masked_select(x, x > 0)
    tensor([1., 3.])
    """
    _check(input, "masked_select")
    _check(mask, "masked_select", "mask", 2)
    if mask.dtype.np != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    from numgrad.ops.dispatch import broadcast_shapes
    from numgrad.ops.layout import expand
    # The mask first: PyTorch's size-mismatch error calls it tensor a.
    shape = tuple(broadcast_shapes(tuple(mask.shape), tuple(input.shape)))
    if tuple(input.shape) != shape:
        input = expand(input, shape)
    if tuple(mask.shape) != shape:
        mask = expand(mask, shape)
    return input[mask]


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices of the nonzero entries of ``input`` (``torch.nonzero``): an int64 tensor
    with a row per entry and a column per dim, or with ``as_tuple=True`` one 1-D index
    tensor per dim (a 0-d input counts as 1-D).

    >>> ng.nonzero(ng.tensor([0., 2., 0., 3.]))
    tensor([[1],
            [3]])
    """
    _check(input, "nonzero")
    if traced(input):
        return data_dependent(lambda: (
            f"nonzero() of a traced tensor {user_location()}: the number of nonzero entries "
            "decides the result's shape"), lambda t: nonzero(t, as_tuple=as_tuple), input)
    a = _host_values(input)
    if as_tuple:
        idx = np.nonzero(a.reshape(1) if a.ndim == 0 else a)
        return tuple(_like(input, i.astype(np.int64)) for i in idx)
    return _like(input, np.argwhere(a).astype(np.int64))


def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: the indices of the nonzero entries, one row each
    (``torch.argwhere``).

    >>> ng.argwhere(ng.tensor([[True, False], [False, True]]))
    tensor([[0, 0],
            [1, 1]])
    """
    _check(input, "argwhere")
    return nonzero(input)


def _like(x, a):
    """A tensor of the index array ``a`` on ``x``'s device."""
    t = Tensor(np.ascontiguousarray(a))
    return t if x.device.type == "cpu" else t.to(x.device)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim=None) -> Tensor | tuple[Tensor, ...]:
    """The distinct entries of ``input`` in increasing order (``torch.unique``; each NaN is
    distinct, as PyTorch's are), with ``return_inverse`` each entry's index among them and
    ``return_counts`` how often each occurs; with ``dim``, the distinct slices along ``dim``.
    Not differentiable, as in PyTorch.

    >>> ng.unique(ng.tensor([3, 1, 3]), return_counts=True)
    (tensor([1, 3]), tensor([1, 2]))
    """
    _check(input, "unique")
    if traced(input):
        return data_dependent(lambda: (
            f"unique() of a traced tensor {user_location()}: the number of distinct entries "
            "decides the result's shape"), lambda t: unique(
                t, sorted, return_inverse, return_counts, dim), input)
    a = _host_values(input)
    if dim is None:
        vals, inverse, counts = np.unique(a.reshape(-1), return_inverse=True,
                                          return_counts=True, equal_nan=False)
        inverse = inverse.reshape(a.shape)
    else:
        vals, inverse, counts = np.unique(a, return_inverse=True, return_counts=True,
                                          axis=dim)
        inverse = inverse.reshape(-1)
    out = [_like(input, vals.astype(a.dtype))]
    if return_inverse:
        out.append(_like(input, inverse.astype(np.int64)))
    if return_counts:
        out.append(_like(input, counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)

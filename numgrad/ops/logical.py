"""ops.logical: all, any and equal.

Room: ops. Composites (no new primitive): ``any`` counts the nonzero entries with the
``sum`` reduction and compares the count with 0, so under ``@ng.jit`` the test and the
count fuse into one reduction kernel. NaN is nonzero (True), ``-0.0`` is zero, as in
PyTorch. The results are bool tensors, which never require grad.
"""
from __future__ import annotations

import numgrad.ops.elementwise as E
import numgrad.ops.reduction as R
from numgrad.tensor import Tensor


def _check(x, fn, name="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _count(input, hit, dim, keepdim):
    dims = R.normalize_dims(dim, input.ndim)
    return R.sum_p(hit, dim=dims, keepdim=bool(keepdim) and dims is not None)


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every entry is nonzero, over ``dim`` (an int, a tuple, or None for all)
    (``torch.all``); a bool tensor, True for an empty one. Raises IndexError for a dim out
    of range.

    >>> ng.tensor([[1., 0.], [2., 3.]]).all(dim=1)
    tensor([False,  True])
    """
    _check(input, "all")
    return E.eq(_count(input, E.eq(input.detach(), 0), dim, keepdim), 0)


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether some entry is nonzero, over ``dim`` (an int, a tuple, or None for all)
    (``torch.any``); a bool tensor, False for an empty one. Raises IndexError for a dim
    out of range.

    >>> ng.tensor([[1., 0.], [0., 0.]]).any(dim=1)
    tensor([ True, False])
    """
    _check(input, "any")
    return E.ne(_count(input, E.ne(input.detach(), 0), dim, keepdim), 0)


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and equal entries (``torch.equal``); a
    Python bool. Dtypes are promoted as for ``==``; NaN equals nothing.

    Under ``@ng.jit`` a Python bool would need the traced values, so it raises
    ``ng.TracingError``; ``(a == b).all()`` is the traceable spelling (a bool tensor).

    >>> ng.equal(ng.tensor([1., 2.]), ng.tensor([1, 2]))
    True
    """
    _check(input, "equal")
    _check(other, "equal", "other", 2)
    if input.shape != other.shape:
        return False
    from numgrad.errors import TracingError, user_location
    try:
        return not bool(R.sum_p(E.ne(input.detach(), other.detach()), dim=None, keepdim=False))
    except TracingError as e:
        raise TracingError(
            f"ng.equal returns a Python bool, which needs the values of traced tensors "
            f"{user_location()}; inside @ng.jit write (a == b).all() for a bool tensor (and "
            "compare shapes in Python), or call ng.equal outside the jitted function") from e

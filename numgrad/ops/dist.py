"""``dist``: the p-norm of the difference of two tensors (``torch.dist``), built on ``norm``
(so its gradient is zero where the difference is, as PyTorch's)."""
from __future__ import annotations

import numgrad.dtypes as _dt
from numgrad.ops.composites import norm
from numgrad.ops.conv import named
from numgrad.tensor import Tensor


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """``norm(input - other, p)`` with the two broadcast (``torch.dist``).

    >>> ng.dist(ng.tensor([3.0, 0.0]), ng.tensor([0.0, 4.0]))
    tensor(5.)

    Raises RuntimeError for shapes that do not broadcast or a non-floating difference.
    """
    diff = input - other
    if not diff.dtype.is_floating_point:
        name = _dt.SCALAR_NAMES.get(diff.dtype.name, diff.dtype.name)
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {name} instead.")
    return named(norm(diff, p), "DistBackward0")


# The method, bound here: ops.methods sits below ops.conv (whose ``named`` this uses), so it
# cannot import this module; the package imports it.
Tensor.dist = dist

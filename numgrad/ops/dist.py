"""``dist``: the p-norm of the difference of two tensors (``torch.dist``), built on ``norm``
(so its gradient is zero where the difference is, as PyTorch's)."""
from __future__ import annotations

from numgrad.ops.composites import norm
from numgrad.ops.conv import named
from numgrad.tensor import Tensor

# PyTorch's scalar-type names, for its error text.
_TORCH_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "bool": "Bool"}


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """``norm(input - other, p)`` with the two broadcast (``torch.dist``).

    >>> ng.dist(ng.tensor([3.0, 0.0]), ng.tensor([0.0, 4.0]))
    tensor(5.)

    Raises RuntimeError for shapes that do not broadcast or a non-floating difference.
    """
    diff = input - other
    if not diff.dtype.is_floating_point:
        name = _TORCH_NAMES.get(diff.dtype.name, diff.dtype.name)
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {name} instead.")
    return named(norm(diff, p), "DistBackward0")

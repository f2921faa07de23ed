"""ops.contiguity: ``Tensor.contiguous`` and ``Tensor.is_contiguous``.

Room: ops. A tensor is contiguous when its payload is C-ordered: a NumPy array's flags say so,
a device payload always is, and while tracing the value's eager layout stand-in
(``ops.views``) is None exactly when eager mode's array would be C-ordered. So ``contiguous()``
returns the tensor itself where PyTorch does, and a differentiable copy (``clone``) elsewhere.
"""
from __future__ import annotations

import numpy as np

from numgrad.ops.registry import Cost, defop, identity_lowering

# A copy in row-major order whatever the input's layout (``np.copy`` keeps it, as ``clone``
# must): pointwise, so the tracer gives its result a C-ordered layout too.
contiguous_p = defop("contiguous", kind="pointwise", inputs=("x",),
                     impl=lambda x: np.array(x, order="C"),
                     abstract=lambda x: (x.shape, x.dtype), node="CloneBackward0",
                     scalar=identity_lowering, cost=Cost(cheap=True))
contiguous_p.defvjp(lambda g: g)


def is_contiguous(self, memory_format=None) -> bool:
    """Whether the elements are laid out in row-major order (``torch.Tensor.is_contiguous``).

    >>> x = ng.ones(2, 3)
    >>> x.is_contiguous(), x.t().is_contiguous()
    (True, False)
    """
    d = self._data
    if type(d) is np.ndarray:
        return bool(d.flags.c_contiguous)
    return getattr(d, "_ng_standin", None) is None


def contiguous(self, memory_format=None):
    """This tensor if it is contiguous, else a row-major copy that stays in the graph
    (``torch.Tensor.contiguous``).

    >>> x = ng.ones(2, 3)
    >>> x.contiguous() is x, x.t().contiguous().is_contiguous()
    (True, True)
    """
    if is_contiguous(self):
        return self
    return contiguous_p(self)

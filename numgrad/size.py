"""size: ``ng.Size``, the tuple ``Tensor.shape`` and ``Tensor.size()`` return (``torch.Size``).

Room: leaf. Imports nothing. It prints as ``torch.Size([3, 28, 28])``: the text PyTorch
programs print, and which tutorials' expected output shows, so a program whose import was
renamed prints the same lines (numgrad's tensors likewise print ``tensor(...)``).
Also the broadcast rule of shapes (``broadcast_shapes``), which the ops and the CUDA
runtime share.
"""
from __future__ import annotations


class Size(tuple):
    """A tuple of dim sizes with ``numel()`` (``torch.Size``).

    >>> ng.ones(3, 28, 28).shape
    torch.Size([3, 28, 28])
    >>> ng.Size([2, 3]).numel()
    6
    """

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for ``Size([])``)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, other)) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self):
        return f"torch.Size({list(self)!r})"

    __str__ = __repr__

    def __reduce__(self):
        return (Size, (tuple(self),))


def broadcast_shapes(*shapes):
    """NumPy's broadcast rule, failing with PyTorch's message."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if d != 1:
                    if size != 1 and d != size:
                        raise RuntimeError(
                            f"The size of tensor a ({size}) must match the size of tensor b "
                            f"({d}) at non-singleton dimension {ndim + i}")
                    size = d
        out.append(size)
    return tuple(out)

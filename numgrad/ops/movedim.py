"""``movedim`` / ``moveaxis``: dims moved to new places, the rest keeping their order; a view
(one permute, so eager, ``@ng.jit`` and the gradient are permute's)."""
from __future__ import annotations

from numgrad.ops.layout import _dim, permute_p
from numgrad.tensor import Tensor  # for annotations


def movedim(input, source, destination) -> Tensor:
    """``input`` with dims ``source`` moved to positions ``destination`` (``torch.movedim``,
    ``numpy.moveaxis``); ints or sequences of equal length.

    >>> ng.zeros(2, 3, 4).movedim(-1, 0).shape
    torch.Size([4, 2, 3])

    Raises RuntimeError for repeated dims or sequences of different lengths, IndexError for a
    dim out of range.
    """
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} "
                           "dims)")
    n = input.ndim
    given = {"source": src, "destination": dst}  # PyTorch's message shows them as given
    src = [_dim(d, n) for d in src]
    dst = [_dim(d, n) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({given[name]})")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = tuple(next(rest) if o is None else o for o in order)
    return permute_p(input, dims=order, op="permute")


moveaxis = movedim  # torch.moveaxis: NumPy's name for the same function

"""linalg.derived: ``cond``, ``vander``, ``tensorinv`` and ``tensorsolve``
(``torch.linalg``'s), compositions of the other linalg functions.
"""
from __future__ import annotations

import math

from numgrad.creation import ones_like
from numgrad.ops.layout import cat
from numgrad.ops.decompositions import check_matrix, pinv_p
from numgrad.ops.elementwise import where
from numgrad.ops.matrices import inv, solve, svdvals
from numgrad.linalg.norms import matrix_norm
from numgrad.tensor import Tensor


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of ``A`` in the norm ``p`` (``torch.linalg.cond``): the ratio of
    its extreme singular values for ``p`` None / 2 / -2 (any shape), else
    ``norm(A) * norm(A^-1)`` (square ``A``), inf for a singular one.

    >>> ng.linalg.cond(ng.tensor([[2., 0.], [0., 1.]]))
    tensor(2.)
    """
    if p in (None, 2, -2):
        check_matrix(A, "linalg.cond", square=False)
        s = svdvals(A)
        big, small = s.amax(-1), s.amin(-1)
        return small / big if p == -2 else big / small
    check_matrix(A, f"linalg.cond(ord={p})")
    s = svdvals(A.detach())
    # The pseudo-inverse never raises; where the matrix is singular the result is inf.
    inverse = pinv_p(A, atol=0.0, rtol=0.0)
    out = matrix_norm(A, p) * matrix_norm(inverse, p)
    return where(s.amin(-1) == 0, math.inf, out)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of ``x``: columns ``x ** 0 ... x ** (N - 1)`` (default N:
    ``x``'s last size) (``torch.linalg.vander``).

    >>> ng.linalg.vander(ng.tensor([1., 2., 3.]))
    tensor([[1., 1., 1.],
            [1., 2., 4.],
            [1., 3., 9.]])
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg_vander(): argument 'x' must be Tensor, not {type(x).__name__}")
    n = (x.shape[-1] if x.ndim else 1) if N is None else N
    if n <= 1 or x.ndim == 0:
        raise RuntimeError("N must be greater than 1.")
    col = x.unsqueeze(-1)
    powers = [ones_like(col), col]
    while len(powers) < n:  # products, not pow: the gradient at 0 is finite
        powers.append(powers[-1] * col)
    return cat(powers[:n], -1)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` seen as a matrix with ``A.shape[:ind]`` rows and ``A.shape[ind:]``
    columns, shaped ``A.shape[ind:] + A.shape[:ind]`` (``torch.linalg.tensorinv``).

    >>> ng.linalg.tensorinv(ng.eye(4).reshape(4, 2, 2), ind=1).shape
    torch.Size([2, 2, 4])
    """
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X with ``tensordot(A, X, X.ndim) == B``, ``A``'s dims ``dims`` moved to its end first
    (``torch.linalg.tensorsolve``).

    >>> ng.linalg.tensorsolve(ng.eye(6).reshape(2, 3, 6), ng.ones(2, 3)).shape
    torch.Size([6])
    """
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in moved], *moved)
    rows, cols = math.prod(A.shape[:B.ndim]), math.prod(A.shape[B.ndim:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(tuple(A.shape[B.ndim:]))

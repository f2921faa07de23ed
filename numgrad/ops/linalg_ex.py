"""ops.linalg_ex: ``linalg.inv_ex``, ``cholesky_ex`` and ``solve_ex``, the variants that
report a failure per matrix (LAPACK's ``info``) instead of raising.

Room: ops. They read the values to find the failures (as PyTorch synchronises with the
device for ``check_errors``), so they run eagerly only. Where a matrix fails, the identity
stands in for it (PyTorch returns whatever LAPACK left there: no meaningful values either).
"""
from __future__ import annotations

import numpy as np

import numgrad.ops.decompositions as D
from numgrad.ops.decompositions import check_matrix
from numgrad.ops.matrices import _result, cholesky, solve
from numgrad.tensor import Tensor

linalg_inv_ex = _result("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = _result("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex = _result("linalg_solve_ex", ["result", "info"])


def _no_failures(A):
    return Tensor._make(np.zeros(A.shape[:-2], np.int32)).to(A.device)


def _info(A, fails):
    """LAPACK's ``info`` per matrix of ``A`` (int32, 0: fine) and ``A`` with the identity
    in place of each matrix that failed."""
    a = np.asarray(A.detach().cpu().numpy())
    flat = a.reshape((-1,) + a.shape[-2:])
    info = np.array([fails(m) or 0 for m in flat], np.int32).reshape(a.shape[:-2])
    tensor = Tensor._make(info).to(A.device)
    if not info.any():
        return tensor, A
    bad = Tensor._make(info[..., None, None] != 0).to(A.device).to(A.dtype)
    eye = D.eye_like(A)
    return tensor, A * (1 - bad) + eye * bad


def inv_ex(A: Tensor, *, check_errors: bool = False) -> tuple:
    """``(inverse, info)`` (``torch.linalg.inv_ex``): ``info`` (int32, one per matrix) is
    0 for an invertible matrix, else the (1-based) first zero pivot of its LU;
    ``check_errors=True`` raises ``LinAlgError`` there instead.

    >>> ng.linalg.inv_ex(ng.tensor([[2.]])).info.item()
    0
    """
    check_matrix(A, "linalg.inv_ex")
    if check_errors:
        return linalg_inv_ex(D.inv_p(A), _no_failures(A))
    info, A = _info(A, D._zero_pivot)
    return linalg_inv_ex(D.inv_p(A), info)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple:
    """``(L, info)`` (``torch.linalg.cholesky_ex``): ``info`` is 0 for a positive-definite
    matrix, else the order of its first leading minor that is not;
    ``check_errors=True`` raises ``LinAlgError`` there instead.

    >>> ng.linalg.cholesky_ex(ng.tensor([[1., 0.], [0., -1.]])).info.item()
    2
    """
    check_matrix(A, "linalg.cholesky_ex")
    if check_errors:
        return linalg_cholesky_ex(cholesky(A, upper=upper), _no_failures(A))
    info, A = _info(A.mT if upper else A, D._not_pd)
    return linalg_cholesky_ex(cholesky(A.mT if upper else A, upper=upper), info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> tuple:
    """``(result, info)`` (``torch.linalg.solve_ex``): ``info`` is 0 where ``A`` is
    invertible, else the (1-based) first zero pivot of its LU; ``check_errors=True`` raises
    ``LinAlgError`` there instead.

    >>> ng.linalg.solve_ex(ng.tensor([[2.]]), ng.tensor([4.])).result
    tensor([2.])
    """
    check_matrix(A, "linalg.solve_ex")
    if check_errors:
        return linalg_solve_ex(solve(A, B, left=left), _no_failures(A))
    info, A = _info(A, D._zero_pivot)
    return linalg_solve_ex(solve(A, B, left=left), info)

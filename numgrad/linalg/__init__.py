"""numgrad.linalg: ``torch.linalg`` (``import numgrad.linalg`` or ``ng.linalg``).

Decompositions and solves run NumPy's LAPACK (``ops.decompositions``: host rows that
``@ng.jit`` runs between its kernels, on host copies under CUDA); their gradients are
PyTorch's formulas in numgrad ops, so double backward works. Results with several parts are
named tuples (``svd(A).U``, ``eigh(A).eigenvalues``) that also unpack; singular or
indefinite input raises ``LinAlgError``, a RuntimeError.

>>> import numgrad as ng
>>> A = ng.tensor([[4., 2.], [2., 3.]])
>>> ng.linalg.det(A)
tensor(8.)
>>> ng.linalg.eigh(A).eigenvalues.shape
torch.Size([2])
"""
from numgrad.ops.decompositions import LinAlgError
from numgrad.ops.linalg_ex import inv_ex, cholesky_ex, solve_ex
from numgrad.ops.matrices import (inv, det, slogdet, solve, solve_triangular, cholesky,
                                  qr, eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, lstsq,
                                  matrix_power, cross, matrix_exp)
from numgrad.linalg.norms import vector_norm, matrix_norm, norm
from numgrad.linalg.products import matmul, multi_dot, vecdot, diagonal
from numgrad.linalg.derived import cond, vander, tensorinv, tensorsolve

__all__ = ["LinAlgError", "inv", "inv_ex", "det", "slogdet", "solve", "solve_triangular",
           "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank",
           "lstsq", "matrix_power", "cross", "vector_norm", "matrix_norm", "norm", "matmul",
           "multi_dot", "vecdot", "diagonal", "cholesky_ex", "solve_ex", "cond", "vander",
           "tensorinv", "tensorsolve", "matrix_exp"]

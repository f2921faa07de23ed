"""ops.matrices: the public functions over ``ops.decompositions``' rows, with PyTorch's
signatures, checks and named-tuple results: ``torch.linalg``'s (``numgrad.linalg`` exports
them) and the top-level ``torch.det``, ``inverse``, ``svd``, ``cross``... (``numgrad`` and
``Tensor`` methods).

Room: ops (the ``Tensor`` methods bind them, so they live below the ``numgrad.linalg``
namespace).
"""
from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

import numgrad.ops.decompositions as D
from numgrad.dtypes import SCALAR_NAMES
from numgrad.ops.composites import roll
from numgrad.ops.decompositions import check_matrix, mT
from numgrad.ops.dispatch import broadcast_shapes
from numgrad.ops.layout import _dim, reshape_p
from numgrad.ops.linalg import matmul_p
from numgrad.tensor import Tensor


def _result(name, fields):
    t = namedtuple(name, fields)
    t.__module__ = "numgrad.return_types"
    t.__doc__ = f"``torch.return_types.{name}``: ({', '.join(fields)})."
    return t


linalg_slogdet = _result("linalg_slogdet", ["sign", "logabsdet"])
slogdet_result = _result("slogdet", ["sign", "logabsdet"])
linalg_qr = _result("linalg_qr", ["Q", "R"])
linalg_eigh = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = _result("linalg_svd", ["U", "S", "Vh"])
svd_result = _result("svd", ["U", "S", "V"])
linalg_lstsq = _result("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _eps(dtype):
    return float(np.finfo(np.dtype(dtype.name)).eps)


# ------------------------------------------------------------------ inverse and determinant
def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix, or of each in a batch (``torch.linalg.inv``).
    Raises ``LinAlgError`` for a singular one.

    >>> ng.linalg.inv(ng.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    check_matrix(A, "linalg.inv")
    return D.inv_p(A)


def inverse(input: Tensor) -> Tensor:
    """``torch.inverse``: the same as ``linalg.inv``.

    >>> ng.inverse(ng.tensor([[2.]]))
    tensor([[0.5000]])
    """
    return inv(input)


def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix, or of each in a batch (``torch.linalg.det``,
    ``torch.det``).

    >>> ng.linalg.det(ng.tensor([[2., 1.], [0., 3.]]))
    tensor(6.)
    """
    check_matrix(A, "linalg.det")
    return D.det_p(A)


def slogdet(A: Tensor) -> tuple:
    """``(sign, logabsdet)`` of the determinant (``torch.linalg.slogdet``): ``det = sign *
    exp(logabsdet)``, without overflow.

    >>> ng.linalg.slogdet(ng.tensor([[-2.]])).sign
    tensor(-1.)
    """
    check_matrix(A, "linalg.slogdet")
    packed = D.slogdet_p(A)
    return linalg_slogdet(packed[..., 0], packed[..., 1])


def slogdet_top(input: Tensor) -> tuple:
    """``torch.slogdet``: ``linalg.slogdet`` as ``torch.return_types.slogdet``.

    >>> ng.slogdet(ng.tensor([[-2.]])).sign
    tensor(-1.)
    """
    return slogdet_result(*slogdet(input))


def logdet(input: Tensor) -> Tensor:
    """The log of the determinant (``torch.logdet``): NaN for a negative one, -inf for 0.

    >>> ng.logdet(ng.tensor([[1., 0.], [0., 2.]]))
    tensor(0.6931)
    """
    check_matrix(input, "logdet")
    sign, logabs = slogdet(input)
    from numgrad.ops.elementwise import where
    return where(sign.detach() < 0, math.nan, logabs)


# ------------------------------------------------------------------------------- solving
def _check_system(A, B, left, fn):
    """A (batch of) system(s) ``A X = B`` (``X A = B``) PyTorch would solve: sizes that fit,
    batch dims that broadcast."""
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))


def _same_dtype(A, B, fn):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{fn}: Expected A and B to have the same dtype, but found A of type "
                           f"{SCALAR_NAMES.get(A.dtype.name)} and B of type "
                           f"{SCALAR_NAMES.get(B.dtype.name)} instead.")


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) for square ``A``
    (``torch.linalg.solve``); ``B`` may be a vector or a batch of them, batch dims
    broadcast. Raises ``LinAlgError`` for a singular ``A``.

    >>> ng.linalg.solve(ng.tensor([[2., 0.], [0., 4.]]), ng.tensor([2., 2.]))
    tensor([1.0000, 0.5000])
    """
    check_matrix(A, "linalg.solve")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    _same_dtype(A, B, "linalg.solve")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vector else B
    if not vector and B.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    _check_system(A, b, left, "linalg.solve")
    x = D.solve_p(A, b) if left else mT(D.solve_p(mT(A), mT(b)))
    return x.squeeze(-1) if vector else x


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) for triangular
    ``A``, reading only its ``upper`` or lower triangle (``torch.linalg.solve_triangular``);
    a zero on the diagonal gives inf/NaN, as LAPACK's, not an error.

    >>> ng.linalg.solve_triangular(ng.tensor([[2., 1.], [0., 1.]]), ng.tensor([[3.], [1.]]),
    ...                            upper=True)
    tensor([[1.],
            [1.]])
    """
    check_matrix(A, "linalg.solve_triangular")
    check_matrix(B, "linalg.solve_triangular", square=False, name="B")
    _same_dtype(A, B, "linalg.solve_triangular")
    _check_system(A, B, left, "linalg.solve_triangular")
    return D.solve_triangular_p(A, B, upper=bool(upper), left=bool(left),
                                unitriangular=bool(unitriangular))


# ---------------------------------------------------------------------- decompositions
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor L of a symmetric positive-definite ``A = L L^T`` (``U^T U`` with
    ``upper=True``) (``torch.linalg.cholesky``); only that triangle of ``A`` is read.
    Raises ``LinAlgError`` when ``A`` is not positive-definite.

    >>> ng.linalg.cholesky(ng.tensor([[4., 2.], [2., 2.]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    check_matrix(A, "linalg.cholesky")
    return D.cholesky_p(A, upper=bool(upper))


def cholesky_top(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky``: ``linalg.cholesky`` with ``upper`` positional.

    >>> ng.cholesky(ng.tensor([[4.]]))
    tensor([[2.]])
    """
    return cholesky(input, upper=upper)


def qr(A: Tensor, mode: str = "reduced") -> tuple:
    """``(Q, R)`` with ``A = Q R``, Q orthonormal columns, R upper triangular
    (``torch.linalg.qr``): ``mode`` ``'reduced'`` (Q m x k), ``'complete'`` (Q m x m) or
    ``'r'`` (R only, Q empty; not differentiable).

    >>> Q, R = ng.linalg.qr(ng.eye(2))
    >>> R.shape
    torch.Size([2, 2])
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_matrix(A, "linalg.qr", square=False)
    q, r = D.unpack(D.qr_p(A, mode=mode), A.shape[:-2], *D.qr_shapes(A.shape, mode),
                    node="LinalgQrBackward0")
    return linalg_qr(reshape_p(q, shape=(0,), op="LinalgQrBackward0") if mode == "r" else q, r)


def eigh(A: Tensor, UPLO: str = "L") -> tuple:
    """``(eigenvalues, eigenvectors)`` of a symmetric matrix, reading its lower (``'L'``)
    or upper triangle (``torch.linalg.eigh``): eigenvalues ascending, eigenvectors the
    columns.

    >>> ng.linalg.eigh(ng.tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    check_matrix(A, "linalg.eigh", floating=False)
    if not A.dtype.is_floating_point:
        raise NotImplementedError(f'"linalg_eigh_cpu" not implemented for '
                                  f"'{SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'")
    n = A.shape[-1]
    w, v = D.unpack(D.eigh_p(A, UPLO=UPLO), A.shape[:-2], (n,), (n, n),
                    node="LinalgEighBackward0")
    return linalg_eigh(w, v)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of a symmetric matrix, ascending (``torch.linalg.eigvalsh``).

    >>> ng.linalg.eigvalsh(ng.tensor([[2., 0.], [0., 1.]]))
    tensor([1., 2.])
    """
    return eigh(A, UPLO).eigenvalues


def svd(A: Tensor, full_matrices: bool = True, *, driver=None) -> tuple:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, S descending (``torch.linalg.svd``);
    ``full_matrices=False`` keeps the first min(m, n) columns of U and rows of Vh.

    >>> ng.linalg.svd(ng.tensor([[3., 0.], [0., 4.]])).S
    tensor([4., 3.])
    """
    check_matrix(A, "linalg.svd", square=False)
    shapes = D.svd_shapes(A.shape, bool(full_matrices))
    return linalg_svd(*D.unpack(D.svd_p(A, full_matrices=bool(full_matrices)), A.shape[:-2],
                                *shapes, node="LinalgSvdBackward0"))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """The singular values, descending (``torch.linalg.svdvals``).

    >>> ng.linalg.svdvals(ng.tensor([[3., 0.], [0., 4.]]))
    tensor([4., 3.])
    """
    check_matrix(A, "linalg.svdvals", square=False)
    return svd(A, full_matrices=False).S


def svd_top(input: Tensor, some: bool = True, compute_uv: bool = True) -> tuple:
    """``torch.svd``: ``(U, S, V)``, V not transposed; ``some=False`` gives square U and V;
    ``compute_uv=False`` gives zero U and V (square).

    >>> U, S, V = ng.svd(ng.tensor([[3., 0.], [0., 4.]]))
    >>> S
    tensor([4., 3.])
    """
    U, S, Vh = svd(input, full_matrices=not some or not compute_uv)
    if not compute_uv:
        return svd_result(U.detach() * 0, S, mT(Vh).detach() * 0)
    return svd_result(U, S, mT(Vh))


def _tolerances(A, atol, rtol):
    atol = 0.0 if atol is None else float(atol)
    if rtol is None:
        rtol = 0.0 if atol > 0 else _eps(A.dtype) * max(A.shape[-2:])
    return atol, float(rtol)


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse (``torch.linalg.pinv``): singular values at or below
    ``max(atol, rtol * largest)`` count as zero (default ``rtol``: eps * max(m, n)).

    >>> ng.linalg.pinv(ng.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    check_matrix(A, "linalg.pinv", square=False)
    atol, rtol = _tolerances(A, atol, rtol)
    return D.pinv_p(A, atol=atol, rtol=rtol)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``.

    >>> ng.pinverse(ng.tensor([[2.]]))
    tensor([[0.5000]])
    """
    check_matrix(input, "pinverse", square=False)
    return D.pinv_p(input, atol=0.0, rtol=float(rcond))


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (default ``rtol``:
    eps * max(m, n)), int64 (``torch.linalg.matrix_rank``).

    >>> ng.linalg.matrix_rank(ng.tensor([[1., 2.], [2., 4.]]))
    tensor(1)
    """
    check_matrix(A, "linalg.matrix_rank", square=hermitian)
    atol, rtol = _tolerances(A, atol, rtol)
    s = svdvals(A.detach())
    top = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
    cut = (top * rtol).clamp(min=atol)
    return (s > cut).sum(-1)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None) -> tuple:
    """The least-squares solution X of ``A X = B`` (``torch.linalg.lstsq``): the
    minimum-norm one (the pseudo-inverse's, as LAPACK's ``gelsy``), with ``rank`` (not for
    ``'gels'``), ``singular_values`` (``'gelsd'``, ``'gelss'``) and ``residuals`` (the squared
    residual norms, when m > n, every matrix full rank and the driver not ``'gelsy'``), empty
    where PyTorch leaves them empty.

    >>> ng.linalg.lstsq(ng.tensor([[1.], [1.]]), ng.tensor([[1.], [3.]])).solution
    tensor([[2.0...]])
    """
    check_matrix(A, "torch.linalg.lstsq", square=False)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.lstsq(): argument 'B' must be Tensor, not {type(B).__name__}")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    if not (vector or B.ndim == A.ndim):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    _same_dtype(A, B, "torch.linalg.lstsq")
    m, n = A.shape[-2:]
    atol, rtol = 0.0, (_eps(A.dtype) * max(m, n) if rcond is None or rcond < 0 else rcond)
    x = matmul_p(D.pinv_p(A, atol=atol, rtol=float(rtol)), b)
    empty = Tensor._make(np.zeros(0, np.dtype(A.dtype.name)))
    rank = sv = residuals = empty
    if driver != "gels":
        rank = matrix_rank(A, rtol=rtol)
    if driver in ("gelsd", "gelss"):
        sv = svdvals(A.detach())
    if m > n and driver != "gelsy" and (rank is empty or bool((rank == n).all())):
        # (reads the ranks: eager only, as PyTorch syncs with the device for them)
        residuals = ((matmul_p(A, x) - b) ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    if driver == "gels":
        rank = Tensor._make(np.zeros(0, np.int64))
    return linalg_lstsq(x.squeeze(-1) if vector else x, residuals, rank, sv)


# ------------------------------------------------------------------------------- products
def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times; the identity for 0, powers of the inverse
    for negative ``n`` (``torch.linalg.matrix_power``).

    >>> ng.linalg.matrix_power(ng.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    check_matrix(A, "linalg.matrix_power", floating=n < 0)
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        return D.eye_like(A)
    if n < 0:
        A, n = D.inv_p(A), -n
    out, base = None, A
    while n:  # square and multiply
        if n & 1:
            out = base if out is None else matmul_p(out, base)
        n >>= 1
        if n:
            base = matmul_p(base, base)
    return out


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (``torch.linalg.cross``); batch dims
    broadcast.

    >>> ng.linalg.cross(ng.tensor([1., 0., 0.]), ng.tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_cross(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES.get(input.dtype.name)} but "
                           f"found {SCALAR_NAMES.get(other.dtype.name)}")
    d = _dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    broadcast_shapes(tuple(input.shape), tuple(other.shape))
    a1, a2 = roll(input, -1, d), roll(input, -2, d)
    b1, b2 = roll(other, -1, d), roll(other, -2, d)
    return a1 * b2 - a2 * b1


def cross_top(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """``torch.cross``: ``linalg.cross``, where ``dim=None`` (deprecated, with PyTorch's
    warning) means the first dim of size 3.

    >>> ng.cross(ng.tensor([1., 0., 0.]), ng.tensor([0., 1., 0.]), dim=0)
    tensor([0., 0., 1.])
    """
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross."
                      "\nThe default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning, stacklevel=2)
        shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return cross(input, other, dim=dim)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """The solution X of ``A X = B`` given A's Cholesky factor ``L`` (``A = L L^T``, or
    ``U^T U`` with ``upper=True``) (``torch.cholesky_solve``).

    >>> ng.cholesky_solve(ng.tensor([[2.], [3.]]), ng.tensor([[1., 0.], [1., 1.]]))
    tensor([[1.],
            [1.]])
    """
    check_matrix(L, "cholesky_solve", name="A")
    if not isinstance(B, Tensor):
        raise TypeError(f"cholesky_solve(): argument 'input' must be Tensor, not "
                        f"{type(B).__name__}")
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           "instead")
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{SCALAR_NAMES.get(B.dtype.name)} and A of type "
                           f"{SCALAR_NAMES.get(L.dtype.name)} instead.")
    n = L.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {n} "
                           f"by {n} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    # Through A itself: PyTorch's gradient for L is -(gB X^T + X gB^T) L, every entry (not
    # only the triangle the solve reads), which is exactly the gradient through L L^T.
    low = mT(L) if upper else L
    return D.solve_p(matmul_p(low, mT(low)), B)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A`` given its Cholesky factor ``L`` (``A = L L^T``, or ``U^T U`` with
    ``upper=True``) (``torch.cholesky_inverse``).

    >>> ng.cholesky_inverse(ng.tensor([[2., 0.], [1., 1.]]))
    tensor([[ 0.5000, -0.5000],
            [-0.5000,  1.0000]])
    """
    check_matrix(L, "cholesky_inverse")
    return cholesky_solve(D.eye_like(L), L, upper)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum A^k / k!`` of a square matrix, or of each in a batch
    (``torch.linalg.matrix_exp``, ``torch.matrix_exp``).

    >>> ng.linalg.matrix_exp(ng.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    check_matrix(A, "linalg.matrix_exp")
    return D.matrix_exp_p(A)

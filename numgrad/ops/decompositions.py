"""ops.decompositions: the LAPACK primitives of ``numgrad.linalg`` (inverse, determinant,
solves, Cholesky, QR, symmetric eigendecomposition, SVD, pseudo-inverse).

Room: ops. Each is a host row: eager mode runs NumPy's LAPACK (``np.linalg``) on it, a
compiled plan runs it between its kernels (the CUDA backend on host copies, as a host step:
PyTorch would call cuSOLVER). The vjp rules are PyTorch's formulas (``derivatives.yaml``)
written in numgrad ops, these rows included, so every order of derivative is these rows again.

A registry row has one output, and a decomposition has several of different shapes (Q and
R; eigenvalues and eigenvectors; U, S and Vh): such a row returns them *packed*, each
flattened over the batch dims and concatenated along one last dim, and ``unpack`` cuts the
packed tensor back into them (narrow and reshape, both differentiable). Its vjp receives the
packed gradient, zeros where a part was unused, and unpacks it the same way; so one LAPACK
call serves every part and the backward sees all of their gradients at once, as PyTorch's
does.

Every row computes each matrix of its operands' leading (batch) dims, broadcast, on its own
(``leading_batch``): ``ng.func.vmap`` batches them with one call over the examples.

Singular or indefinite input raises ``LinAlgError`` (a RuntimeError, as
``torch.linalg.LinAlgError``) with PyTorch's text, when the row runs.
"""
from __future__ import annotations

import math

import numpy as np

from numgrad.dtypes import SCALAR_NAMES
from numgrad.ops.composites import tril, triu
from numgrad.ops.diagonals import diagonal_embed_p, diagonal_p
from numgrad.ops.dispatch import broadcast_shapes
from numgrad.ops.layout import reshape, transpose
from numgrad.ops.linalg import matmul_p
from numgrad.ops.no_derivative import refuse
from numgrad.ops.registry import defop
from numgrad.tensor import Tensor


class LinAlgError(RuntimeError):
    """A linear algebra routine failed on its input: a singular matrix, a matrix that is not
    positive-definite (``torch.linalg.LinAlgError``, a RuntimeError)."""


LinAlgError.__module__ = "numgrad.linalg"


# ---------------------------------------------------------------------- checks and helpers
def check_matrix(A, fn, square=True, name="A", floating=True):
    """PyTorch's checks of a (batch of) matrix argument: a Tensor, at least 2-D, square,
    floating."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if floating and not A.dtype.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}")


def mT(t):
    return transpose(t, -1, -2)


def _diag(t):
    """The main diagonals of a batch of matrices, as a last dim."""
    return diagonal_p(t, offset=0, dim1=t.ndim - 2, dim2=t.ndim - 1)


def _embed(v):
    """Square matrices with ``v``'s last dim on their diagonals."""
    n = v.shape[-1]
    return diagonal_embed_p(v, shape=tuple(v.shape[:-1]) + (n, n), offset=0,
                            dim1=v.ndim - 1, dim2=v.ndim)


def eye_like(A):
    """Identity matrices of ``A``'s batch, dtype and device (outside the graph): ones on the
    diagonal whatever ``A`` holds (``A * 0 + 1`` would be NaN at an inf or NaN entry)."""
    from numgrad.creation import ones_like
    return _embed(ones_like(_diag(A).detach()))


def _batch_prefix(shape, i):
    return f"(Batch element {i}): " if len(shape) > 2 else ""


def _first_failure(a, fails):
    """``(batch index, what fails(matrix) said)`` of the first matrix of ``a`` it
    refuses (``fails`` returns None for a good one)."""
    flat = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(flat):
        got = fails(m)
        if got is not None:
            return i, got
    return None


def _zero_pivot(m):
    """LAPACK getrf's ``info`` of one matrix: the (1-based) first exactly zero pivot of
    its LU factorization with partial pivoting, or None."""
    m = np.array(m, copy=True)
    n = m.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(m[k:, k])))
        if m[p, k] == 0:
            return k + 1
        m[[k, p]] = m[[p, k]]
        m[k + 1:, k:] -= np.outer(m[k + 1:, k] / m[k, k], m[k, k:])
    return None


def _not_pd(m):
    """The order of the first leading minor of ``m`` that is not positive-definite."""
    for k in range(1, m.shape[0] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return None


def _pack(batch, *parts):
    return np.concatenate([p.reshape(batch + (math.prod(p.shape[len(batch):]),))
                           for p in parts], axis=-1)


def packed_shape(batch, *shapes):
    return tuple(batch) + (sum(math.prod(s) for s in shapes),)


def unpack(t, batch, *shapes, node="view"):
    """The parts of a packed tensor ``t`` (see the module docstring), of ``shapes``; a
    ``node`` name (``"LinalgQrBackward0"``) names their grad_fn, as PyTorch's outputs of
    the decomposition show it."""
    out, at = [], 0
    for s in shapes:
        n = math.prod(s)
        out.append(reshape(t.narrow(-1, at, n), tuple(batch) + tuple(s), _op=node))
        at += n
    return out


def _row(name, **fields):
    """A LAPACK row: its impl maps over the leading dims (``leading_batch``)."""
    return defop(name, leading_batch=True, **fields)


def _same(A, **_):
    return A.shape, A.dtype


# ------------------------------------------------------------------------------- inverse
def _inv(a):
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        i, k = _first_failure(a, _zero_pivot) or (0, 1)
        raise LinAlgError(f"linalg.inv: {_batch_prefix(a.shape, i)}The diagonal element {k} "
                          "is zero, the inversion could not be completed because the input "
                          "matrix is singular.") from None


inv_p = _row("linalg_inv", inputs=("A",), impl=_inv, abstract=_same,
             node="LinalgInvExBackward0")
inv_p.defvjp(lambda g, out: -matmul_p(matmul_p(mT(out), g), mT(out)))


# --------------------------------------------------------------------------- determinants
def _det_abstract(A):
    return A.shape[:-2], A.dtype


det_p = _row("linalg_det", inputs=("A",), impl=lambda a: np.asarray(np.linalg.det(a)),
             abstract=_det_abstract, node="LinalgDetBackward0")


def _det_vjp(g, A, out):
    # The cofactor matrix, g * det(A) A^-T where det(A) != 0, and where it is 0 (PyTorch's
    # singular case) from an SVD: sign * U diag(prod of the other singular values) Vh. Each
    # branch runs on a stand-in where the other is taken (the identity; distinct singular
    # values), so neither raises nor makes NaN in a second order.
    from numgrad.ops.composites import cumsum
    from numgrad.ops.cumulative import prod_p
    from numgrad.ops.elementwise import where
    scale = reshape(g * out, tuple(out.shape) + (1, 1))
    if type(out._data) is np.ndarray and out._data.all():
        return scale * mT(inv_p(A))      # eagerly, no singular matrix: the inverse alone
    singular = reshape(out == 0, tuple(out.shape) + (1, 1))
    from numgrad.creation import ones_like
    ones = ones_like(_diag(A).detach())
    regular = scale * mT(inv_p(where(singular, _embed(ones), A)))
    steps = cumsum(ones, -1)                   # 1, 2, ... n (on A's device)
    u, s, vh = unpack(svd_p(where(singular, A, _embed(ones * steps)), full_matrices=False),
                      tuple(A.shape[:-2]), *svd_shapes(A.shape, False))
    others = s.unsqueeze(-2) * (1 - _embed(ones)) + _embed(ones)
    sign = reshape(det_p(u) * det_p(vh) * g, tuple(out.shape) + (1, 1))
    cof = matmul_p(u * prod_p(others, dim=(others.ndim - 1,), keepdim=False).unsqueeze(-2), vh)
    return where(singular, sign * cof, regular)


det_p.defvjp(_det_vjp)


def _slogdet(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.stack([sign, logabs], axis=-1).astype(a.dtype, copy=False)


slogdet_p = _row("linalg_slogdet", inputs=("A",), impl=_slogdet, node="LinalgSlogdetBackward0",
                 abstract=lambda A: (A.shape[:-2] + (2,), A.dtype))
slogdet_p.defvjp(lambda g, A: reshape(g.narrow(-1, 1, 1), tuple(g.shape[:-1]) + (1, 1))
                 * mT(inv_p(A)))


# ----------------------------------------------------------------------------------- solve
def _solve(a, b):
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:])
        i, _ = _first_failure(a, _zero_pivot) or (0, 1)
        raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(a.shape, i)}The solver failed "
                          "because the input matrix is singular.") from None


def _solve_abstract(A, B):
    return (broadcast_shapes(A.shape[:-2], B.shape[:-2]) + B.shape[-2:],
            np.result_type(A.dtype, B.dtype))


# Both operands are matrices here; ``linalg.solve`` makes a vector B a column first.
solve_p = _row("linalg_solve", inputs=("A", "B"), impl=_solve, abstract=_solve_abstract,
               node="LinalgSolveExBackward0")
solve_p.defvjp(lambda g, A, out: -matmul_p(solve_p(mT(A), g), mT(out)),
               lambda g, A: solve_p(mT(A), g))


def _substitute(a, b, upper, unitriangular):
    """X with a X = b for triangular ``a`` (only its triangle read), row by row: a zero on
    the diagonal gives inf/NaN, as LAPACK's trtrs does, not an error."""
    n = a.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = np.zeros(batch + b.shape[-2:], np.result_type(a, b))
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        known = slice(i + 1, n) if upper else slice(0, i)
        r = b[..., i, :] - np.einsum("...j,...jk->...k", a[..., i, known], x[..., known, :])
        x[..., i, :] = r if unitriangular else r / a[..., i, i, None]
    return x


def _triangular_solve(a, b, upper, unitriangular):
    # LAPACK's LU solve of the triangle (one call, where substitution is a loop over rows);
    # substitution where it is singular, for trtrs' inf/NaN instead of an error.
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        n = a.shape[-1]
        t = t * (1 - np.eye(n, dtype=t.dtype)) + np.eye(n, dtype=t.dtype)
    try:
        return np.linalg.solve(t, np.broadcast_to(b, np.broadcast_shapes(
            t.shape[:-2], b.shape[:-2]) + b.shape[-2:]))
    except np.linalg.LinAlgError:
        return _substitute(a, b, upper, unitriangular)


def _solve_triangular(a, b, upper, left, unitriangular):
    if left:
        return _triangular_solve(a, b, upper, unitriangular)
    return np.swapaxes(_triangular_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2),
                                         not upper, unitriangular), -1, -2)


def _triangle(t, upper, unitriangular):
    return triu(t, int(unitriangular)) if upper else tril(t, -int(unitriangular))


def _solve_triangular_A(g, A, out, upper, left, unitriangular):
    gB = solve_triangular_p(mT(A), g, upper=not upper, left=left, unitriangular=unitriangular)
    gA = matmul_p(gB, mT(out)) if left else matmul_p(mT(out), gB)
    return -_triangle(gA, upper, unitriangular)


solve_triangular_p = _row(
    "linalg_solve_triangular", inputs=("A", "B"), params=("upper", "left", "unitriangular"),
    impl=_solve_triangular, node="LinalgSolveTriangularBackward0",
    abstract=lambda A, B, **_: _solve_abstract(A, B))
solve_triangular_p.defvjp(
    _solve_triangular_A,
    lambda g, A, upper, left, unitriangular: solve_triangular_p(
        mT(A), g, upper=not upper, left=left, unitriangular=unitriangular))


# -------------------------------------------------------------------------------- Cholesky
def _cholesky(a, upper):
    a = np.swapaxes(a, -1, -2) if upper else a   # U^T U = A reads A's upper triangle
    try:
        low = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        i, k = _first_failure(a, _not_pd) or (0, 1)
        raise LinAlgError(f"linalg.cholesky: {_batch_prefix(a.shape, i)}The factorization "
                          "could not be completed because the input is not positive-definite "
                          f"(the leading minor of order {k} is not positive-definite).") from None
    return np.swapaxes(low, -1, -2).copy() if upper else low


def _cholesky_vjp(g, out, upper):
    # Murray (2016), PyTorch's cholesky_backward: gA = sym(L^-T Phi(L^T gL) L^-1), Phi the
    # lower triangle with its diagonal halved.
    low, gl = (mT(out), mT(g)) if upper else (out, g)
    phi = tril(matmul_p(mT(low), gl))
    phi = phi - 0.5 * _embed(_diag(phi))
    y = solve_triangular_p(low, phi, upper=False, left=False, unitriangular=False)
    s = solve_triangular_p(mT(low), y, upper=True, left=True, unitriangular=False)
    return 0.5 * (s + mT(s))


cholesky_p = _row("linalg_cholesky", inputs=("A",), params=("upper",), impl=_cholesky,
                  abstract=_same, node="LinalgCholeskyExBackward0")
cholesky_p.defvjp(_cholesky_vjp)


# -------------------------------------------------------------------------------------- QR
def qr_shapes(shape, mode):
    """The shapes of Q and R of a QR in ``mode`` of matrices of ``shape`` (Q of 'r': (0,))."""
    m, n = shape[-2:]
    k = m if mode == "complete" else min(m, n)
    return ((0,) if mode == "r" else (m, k)), (k, n)


def _qr(a, mode):
    batch = a.shape[:-2]
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return _pack(batch, np.zeros(batch + (0,), a.dtype), r)
    q, r = np.linalg.qr(a, mode=mode)
    return _pack(batch, q, r)


def _qr_abstract(A, mode):
    return packed_shape(A.shape[:-2], *qr_shapes(A.shape, mode)), A.dtype


def _qr_square_vjp(gq, gr, q, r):
    # m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q.
    mm = matmul_p(r, mT(gr)) - matmul_p(mT(gq), q)
    sym = tril(mm) + mT(tril(mm, -1))
    b = gq + matmul_p(q, sym)
    return solve_triangular_p(mT(r), b, upper=False, left=False, unitriangular=False)


def _qr_vjp(g, A_shape, out, mode):
    # No derivative: PyTorch's error when the backward runs (under @ng.jit too; the value
    # stands for a gradient of A's shape that is never computed).
    if mode == "r":
        return refuse(g, RuntimeError, "The derivative of linalg.qr depends on Q, which is not "
                      "computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                      "are going to differentiate through linalg.qr.").sum().expand(A_shape)
    m, n = A_shape[-2:]
    if mode == "complete" and m > n:
        return refuse(g, RuntimeError, "The QR decomposition is not differentiable when "
                      "mode='complete' and nrows > ncols.").sum().expand(A_shape)
    batch = tuple(A_shape[:-2])
    shapes = qr_shapes(A_shape, mode)
    q, r = unpack(out, batch, *shapes)
    gq, gr = unpack(g, batch, *shapes)
    if m >= n:
        return _qr_square_vjp(gq, gr, q, r)
    # m < n: A = [X | Y], R = [U | V] with X = QU square and Y = QV.
    from numgrad.ops.layout import cat
    u, v = r.narrow(-1, 0, m), r.narrow(-1, m, n - m)
    gu, gv = gr.narrow(-1, 0, m), gr.narrow(-1, m, n - m)
    y = matmul_p(q, v)
    gx = _qr_square_vjp(gq + matmul_p(y, mT(gv)), gu, q, u)
    return cat([gx, matmul_p(q, gv)], -1)


qr_p = _row("linalg_qr", inputs=("A",), params=("mode",), impl=_qr, abstract=_qr_abstract,
            node="LinalgQrBackward0")
qr_p.defvjp(_qr_vjp)


def _nonzero(t):
    from numgrad.ops.elementwise import where
    return where(t == 0, 1.0, t)


def _gaps(w):
    """``E_ij = w_j - w_i``, 1 where it is 0 (the diagonal, repeated values): what it divides
    is 0 there when the eigen/singular vectors are unused (``eigvalsh``, ``svdvals``), so the
    gradient is PyTorch's, not NaN, at repeated values. (Where the vectors are used, PyTorch's
    is inf/NaN there: the gradient does not exist.)"""
    return _nonzero(w.unsqueeze(-2) - w.unsqueeze(-1))


# ------------------------------------------------------------------- symmetric eigenproblem
def _eigh(a, UPLO):
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return _pack(a.shape[:-2], w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False))


def _eigh_vjp(g, A_shape, out):
    # gA = V (diag(gL) + (V^T gV - V^T gV^T) / 2E) V^T, E_ij = L_j - L_i (PyTorch's
    # linalg_eig_backward for a Hermitian A: the gradient is symmetric).
    batch, n = tuple(A_shape[:-2]), A_shape[-1]
    w, v = unpack(out, batch, (n,), (n, n))
    gw, gv = unpack(g, batch, (n,), (n, n))
    vg = matmul_p(mT(v), gv)
    off = 0.5 * (vg - mT(vg)) / _gaps(w)
    inner = off - _embed(_diag(off)) + _embed(gw)
    return matmul_p(matmul_p(v, inner), mT(v))


eigh_p = _row("linalg_eigh", inputs=("A",), params=("UPLO",), impl=_eigh,
              node="LinalgEighBackward0",
              abstract=lambda A, UPLO: (packed_shape(A.shape[:-2], A.shape[-1:], A.shape[-2:]),
                                        A.dtype))
eigh_p.defvjp(_eigh_vjp)


# ------------------------------------------------------------------------------------- SVD
def svd_shapes(shape, full_matrices):
    """The shapes of U, S and Vh of an SVD of matrices of ``shape``."""
    m, n = shape[-2:]
    k = min(m, n)
    if full_matrices:
        return (m, m), (k,), (n, n)
    return (m, k), (k,), (k, n)


def _svd(a, full_matrices):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _pack(a.shape[:-2], u, s.astype(a.dtype, copy=False), vh)


def _svd_vjp(g, A_shape, out, full_matrices):
    # PyTorch's svd_backward (real case), on the first k = min(m, n) columns of U and V:
    # gA = U [sym terms / E + diag(gS)] V^T + the parts of gU, gV outside span(U), span(V).
    batch = tuple(A_shape[:-2])
    m, n = A_shape[-2:]
    k = min(m, n)
    shapes = svd_shapes(A_shape, full_matrices)
    u, s, vh = unpack(out, batch, *shapes)
    gu, gs, gvh = unpack(g, batch, *shapes)
    if full_matrices:
        u, gu = u.narrow(-1, 0, k), gu.narrow(-1, 0, k)
        vh, gvh = vh.narrow(-2, 0, k), gvh.narrow(-2, 0, k)
    v, gv = mT(vh), mT(gvh)
    utgu = matmul_p(mT(u), gu)
    vtgv = matmul_p(mT(v), gv)
    inner = ((utgu - mT(utgu)) * s.unsqueeze(-2) + s.unsqueeze(-1) * (vtgv - mT(vtgv))
             ) / _gaps(s * s)
    inner = inner - _embed(_diag(inner)) + _embed(gs)
    if m > n:
        gus = gu / _nonzero(s).unsqueeze(-2)
        left = matmul_p(u, inner) + gus - matmul_p(u, matmul_p(mT(u), gus))
        return matmul_p(left, vh)
    if n > m:
        gvs = gv / _nonzero(s).unsqueeze(-2)
        right = matmul_p(inner, vh) + mT(gvs) - matmul_p(matmul_p(mT(gvs), v), vh)
        return matmul_p(u, right)
    return matmul_p(matmul_p(u, inner), vh)


svd_p = _row("linalg_svd", inputs=("A",), params=("full_matrices",), impl=_svd,
             node="LinalgSvdBackward0",
             abstract=lambda A, full_matrices: (
                 packed_shape(A.shape[:-2], *svd_shapes(A.shape, full_matrices)), A.dtype))
svd_p.defvjp(_svd_vjp)


# -------------------------------------------------------------------------- pseudo-inverse
def _pinv(a, atol, rtol):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    top = s.max(axis=-1, initial=0.0, keepdims=True)
    cut = np.maximum(atol, rtol * top)
    with np.errstate(divide="ignore"):
        sinv = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0).astype(a.dtype)
    return np.matmul(np.swapaxes(vh, -1, -2) * sinv[..., None, :], np.swapaxes(u, -1, -2))


def _pinv_vjp(g, A, out):
    # PyTorch's pinv_backward (exact where the rank is locally constant).
    m, n = A.shape[-2:]
    ph, gh = mT(out), mT(g)
    if m <= n:
        k = matmul_p(gh, out)
        kph = matmul_p(k, ph)
        return (-mT(matmul_p(out, k)) + kph - matmul_p(matmul_p(A, out), kph)
                + matmul_p(matmul_p(ph, out), gh - matmul_p(k, A)))
    k = matmul_p(out, gh)
    phk = matmul_p(ph, k)
    return (-mT(matmul_p(k, out)) + phk - matmul_p(matmul_p(phk, out), A)
            + matmul_p(matmul_p(gh - matmul_p(A, k), out), ph))


pinv_p = _row("linalg_pinv", inputs=("A",), params=("atol", "rtol"), impl=_pinv,
              node="LinalgPinvBackward0",
              abstract=lambda A, atol, rtol: (A.shape[:-2] + A.shape[-1:] + A.shape[-2:-1],
                                              A.dtype))
pinv_p.defvjp(_pinv_vjp)


# ------------------------------------------------------------------------ matrix exponential
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def _matrix_exp(a):
    # Higham (2005): the [13/13] Pade approximant of exp(A / 2^s), squared s times; in
    # float64 (a float32 result is rounded from it).
    x = a.astype(np.float64)
    n = x.shape[-1]
    norm = np.abs(x).sum(-2).max(-1, initial=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.ceil(np.log2(norm / _THETA13))
    s = np.where(np.isfinite(s) & (s > 0), s, 0).astype(np.int64)
    x = x / np.ldexp(1.0, s)[..., None, None]
    b, eye = _PADE13, np.eye(n)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2)
             + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 \
        + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max(initial=0))):
        r = np.where((k < s)[..., None, None], r @ r, r)
    return r.astype(a.dtype, copy=False)


def _matrix_exp_vjp(g, A):
    # PyTorch's: the top right block of exp([[A^T, g], [0, A^T]]) (a function of a matrix,
    # differentiated through the same function, so every order works).
    from numgrad.ops.layout import cat
    at = mT(A)
    zero = at * 0
    block = cat([cat([at, g], -1), cat([zero, at], -1)], -2)
    n = A.shape[-1]
    return matrix_exp_p(block).narrow(-2, 0, n).narrow(-1, n, n)


matrix_exp_p = _row("linalg_matrix_exp", inputs=("A",), impl=_matrix_exp, abstract=_same,
                    node="LinalgMatrixExpBackward0")
matrix_exp_p.defvjp(_matrix_exp_vjp)


# ------------------------------------------------------------------- the count of nonzeros
def _count_nonzero_abstract(x, dim, keepdim):
    shape = tuple(1 if dim is None or i in dim else n for i, n in enumerate(x.shape)) \
        if keepdim else tuple(n for i, n in enumerate(x.shape) if dim is not None
                              and i not in dim)
    return shape, x.dtype


# ``vector_norm(x, ord=0)``: PyTorch's node has no gradient for ``x`` (an undefined one: the
# backward leaves ``x.grad`` None), but it is a node, so the result requires grad.
norm0_p = defop("linalg_vector_norm0", inputs=("x",), params=("dim", "keepdim"),
                impl=lambda x, dim, keepdim: np.count_nonzero(
                    x, axis=dim, keepdims=keepdim).astype(x.dtype),
                abstract=_count_nonzero_abstract, node="LinalgVectorNormBackward0")
norm0_p.defvjp(lambda g: None)

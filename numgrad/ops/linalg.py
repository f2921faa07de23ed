"""ops.linalg: matmul with NumPy's batch broadcasting and 1-D promotion.

Room: ops. One primitive covers dot, mv, mm and batched matmul; its vjp is
two more matmuls (batch dims are summed back by the node's unbroadcast).
"""
from __future__ import annotations

import numpy as np

import numgrad.dtypes as _dt
from numgrad.ops.registry import Cost, defop
from numgrad.tensor import Tensor  # for annotations
from numgrad.ops.dispatch import broadcast_shapes
import numgrad.ops.late as _late


def _name(p, shapes):
    a, b = len(shapes[0]), len(shapes[1])
    if a == 1 and b == 1:
        return "DotBackward0"
    if a == 2 and b == 1:
        return "MvBackward0"
    if a == 2 and b == 2:
        return "MmBackward0"
    return "BmmBackward0" if a == b == 3 else "MatmulBackward0"


def matmul_shape(sa, sb):
    if len(sa) == 0 or len(sb) == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{len(sa)}D and {len(sb)}D")
    a = (1,) + tuple(sa) if len(sa) == 1 else tuple(sa)
    b = tuple(sb) + (1,) if len(sb) == 1 else tuple(sb)
    if a[-1] != b[-2]:
        if len(sa) == 1 and len(sb) == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src "
                               f"[{sb[0]}] to have the same number of elements, but got {sa[0]} "
                               f"and {sb[0]} elements respectively")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[-2]}x{a[-1]} and "
                           f"{b[-2]}x{b[-1]})")
    batch = broadcast_shapes(a[:-2], b[:-2])
    out = batch + (a[-2], b[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return out


# PyTorch's dtype names in its "expected scalar type" errors.
SCALAR_NAMES = _dt.SCALAR_NAMES
# ... and the C type names its matmul dtype error uses.
C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
           "bool": "bool"}

def _matmul(x, y):
    # ndarray.dot is NumPy's 2-D BLAS call without the matmul ufunc's machinery: ~0.5 us less
    # per call on 32x64 float32, the same bits. Anything else (batches, 1-D, device payloads)
    # goes through np.matmul.
    if type(x) is _ndarray and type(y) is _ndarray and x.ndim == 2 and y.ndim == 2:
        return x.dot(y)
    return np.matmul(x, y)


_ndarray = np.ndarray
matmul_p = defop("matmul", inputs=("x", "y"), impl=_matmul, node=_name, cost=Cost(blas=True),
                 abstract=lambda x, y: (matmul_shape(x.shape, y.shape),
                                        np.result_type(x.dtype, y.dtype)))


def _mT(t):
    from numgrad.ops.layout import transpose
    return transpose(t, -1, -2)


def _matmul_x_vjp(g, y, x_shape):
    from numgrad.ops.layout import unsqueeze, reshape
    if len(x_shape) == 1 and y.ndim == 1:
        return g * y
    if y.ndim == 1:                      # (..., m, k) @ (k,) -> (..., m)
        return matmul_p(unsqueeze(g, -1), unsqueeze(y, 0))
    if len(x_shape) == 1:                # (k,) @ (..., k, n) -> (..., n)
        r = matmul_p(unsqueeze(g, -2), _mT(y))
        return reshape(r, r.shape[:-2] + r.shape[-1:])
    if y.ndim == 2 and len(x_shape) == 2:  # eagerly one BLAS call on a view, no transpose node
        return _late.mm_nt(g, y)   # (ops.linear, above this module)
    return matmul_p(g, _mT(y))


def _matmul_y_vjp(g, x, y_shape):
    from numgrad.ops.layout import unsqueeze, reshape
    if x.ndim == 1 and len(y_shape) == 1:
        return g * x
    if len(y_shape) == 1:                # (..., m, k) @ (k,): dy = x^T g
        r = matmul_p(_mT(x), unsqueeze(g, -1))
        return reshape(r, r.shape[:-1])
    if x.ndim == 1:                      # (k,) @ (..., k, n): dy = x outer g
        return matmul_p(unsqueeze(x, -1), unsqueeze(g, -2))
    if x.ndim == 2 and len(y_shape) == 2:
        return _late.mm_tn(x, g)
    return matmul_p(_mT(x), g)


matmul_p.defvjp(_matmul_x_vjp, _matmul_y_vjp)


def matmul(x, y) -> Tensor:
    """Matrix product with batch broadcasting (``x @ y``).

    >>> (ng.ones(2, 3) @ ng.ones(3, 4)).shape
    torch.Size([2, 4])
    """
    # The common call first: two 2-D tensors that fit, checked on the payloads alone (the
    # general checks below cost ~1.7 us, a third of a small eager matmul).
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        dx, dy = x._data, y._data
        sa, sb = dx.shape, dy.shape
        if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0] and dx.dtype == dy.dtype:
            return matmul_p(x, y)
    for name, t in (("input", x), ("other", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"matmul(): argument '{name}' must be Tensor, not {type(t).__name__}")
    matmul_shape(x.shape, y.shape)
    if x.dtype is not y.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{C_NAMES[x.dtype.name]} != {C_NAMES[y.dtype.name]}")
    return matmul_p(x, y)


def bmm(input, mat2) -> Tensor:
    """Batched matrix product of two 3-D tensors, ``(b, n, m) @ (b, m, p) -> (b, n, p)``,
    without broadcasting (``torch.bmm``). Raises RuntimeError with PyTorch's messages for
    other ranks, mismatched batch or inner sizes, or different dtypes.

    >>> ng.bmm(ng.ones(2, 3, 4), ng.ones(2, 4, 5)).shape
    torch.Size([2, 3, 5])
    """
    from numgrad.tensor import Tensor
    for pos, (name, t) in enumerate((("input", input), ("mat2", mat2)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"bmm(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    want = [input.shape[0], input.shape[2]]
    if list(mat2.shape[:2]) != want:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"{want} but got: {list(mat2.shape[:2])}.")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype.name]} but found "
                           f"{SCALAR_NAMES[mat2.dtype.name]}")
    return matmul_p(input, mat2)

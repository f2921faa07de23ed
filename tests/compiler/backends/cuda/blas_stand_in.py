"""A stand-in for ``nvmath.bindings.cublas`` and a NumPy column-major gemm, for testing the
cuBLAS path (``backends.cuda.blas``) without a GPU: under Numba's simulator a device
pointer is a host address, so the stand-in's gemm reads and writes numgrad's buffers
directly, with cuBLAS's definition written here from its documentation."""
from __future__ import annotations

import ctypes
import sys
import types

import numpy as np

from numgrad.compiler.backends.cuda import blas


def _matrix(buf, off, rows, cols, ld):
    """The column-major ``rows x cols`` matrix at ``buf[off]``, leading dim ``ld``."""
    idx = off + np.arange(rows)[:, None] + np.arange(cols)[None, :] * ld
    assert idx.min() >= 0 and idx.max() < buf.size, "a read outside the operand's buffer"
    return buf[idx]


def colmajor_gemm(g, a, b, c, alpha=1.0, beta=0.0):
    """cuBLAS's (strided batched) gemm on flat host buffers: for each batch z,
    C_z = alpha op(A_z) op(B_z) + beta C_z, column-major."""
    assert 0 < g.m and 0 < g.n and 0 < g.k and g.batch >= 1
    for z in range(g.batch):
        rows_a, cols_a = (g.m, g.k) if g.transa == blas.OP_N else (g.k, g.m)
        rows_b, cols_b = (g.k, g.n) if g.transb == blas.OP_N else (g.n, g.k)
        assert g.lda >= rows_a and g.ldb >= rows_b and g.ldc >= g.m
        A = _matrix(a, z * g.stride_a, rows_a, cols_a, g.lda)
        B = _matrix(b, z * g.stride_b, rows_b, cols_b, g.ldb)
        opA = A if g.transa == blas.OP_N else A.T
        opB = B if g.transb == blas.OP_N else B.T
        idx = z * g.stride_c + np.arange(g.m)[:, None] + np.arange(g.n)[None, :] * g.ldc
        assert idx.max() < c.size
        c[idx] = alpha * (opA @ opB) + (beta * c[idx] if beta else 0)


def _host(ptr, n, dtype):
    """``n`` elements of ``dtype`` at a simulated device pointer (a host address)."""
    ct = {np.dtype("float32"): ctypes.c_float, np.dtype("float64"): ctypes.c_double}
    return np.ctypeslib.as_array((ct[np.dtype(dtype)] * n).from_address(ptr))


def _extent(op, rows, cols, ld, stride, batch):
    r, c = (rows, cols) if op == blas.OP_N else (cols, rows)
    return (r - 1) + (c - 1) * ld + (batch - 1) * stride + 1


def stand_in_nvmath(monkeypatch):
    """``nvmath.bindings.cublas`` as a recording stand-in that computes on host memory."""
    cublas = types.ModuleType("nvmath.bindings.cublas")
    cublas.calls = []
    cublas.get_property = lambda prop: (12, 9, 1)[prop]

    def record(name, result=None):
        def fn(*args):
            cublas.calls.append((name, args))
            return result
        return fn
    for name in ("destroy", "set_stream", "set_pointer_mode", "set_math_mode",
                 "set_workspace"):
        setattr(cublas, name, record(name))
    cublas.create = record("create", 0xC0B1A5)

    def gemm(name, dtype, batched):
        def fn(handle, transa, transb, m, n, k, alpha, a, lda, *rest):
            cublas.calls.append((name, (handle, transa, transb, m, n, k, alpha, a, lda) + rest))
            if batched:
                sa, b, ldb, sb, beta, c, ldc, sc, count = rest
            else:
                (b, ldb, beta, c, ldc), sa, sb, sc, count = rest, 0, 0, 0, 1
            g = blas.Gemm(transa, transb, m, n, k, lda, ldb, ldc, sa, sb, sc, count)
            av = _host(a, _extent(transa, m, k, lda, sa, count), dtype)
            bv = _host(b, _extent(transb, k, n, ldb, sb, count), dtype)
            cv = _host(c, _extent(blas.OP_N, m, n, ldc, sc, count), dtype)
            colmajor_gemm(g, av, bv, cv, _host(alpha, 1, dtype)[0], _host(beta, 1, dtype)[0])
        return fn
    for (dt, batched), name in blas._ROUTINES.items():
        setattr(cublas, name, gemm(name, dt, batched))
    bindings = types.ModuleType("nvmath.bindings")
    bindings.cublas = cublas
    nvmath = types.ModuleType("nvmath")
    nvmath.bindings = bindings
    for mod in (nvmath, bindings, cublas):
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return cublas

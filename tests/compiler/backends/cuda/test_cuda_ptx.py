"""Every kernel the CUDA test matrix renders compiles for a real GPU: ``compile_ptx`` for
compute capability 9.0 and the wheel's ``ptxas -arch=sm_90`` (no GPU needed), with
registers and spills reported per kernel (kernels that differ only in integer literals,
extents and strides, type and compile alike: one of each is compiled). W2's and W4's
kernels (also rendered at the benchmark's sizes, W4 with its 100 steps) must not spill,
nor any matmul kernel: W3's at its size (float32), the matrix's (float64), and a
1024x1024 product of transposes (the large blocking), both dtypes, nor the
shape-generic kernels (extents and constants as arguments) of W2, of
``cuda_cases.generic_case`` (matmul, broadcast, partial and full reductions, means,
gathers) and W3's matmuls: every blocking of the generic matmul kernel, float32 and
float64.

The simulator, which runs the matrix, replaces ``numba.cuda`` in this process, so the
compilation runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=0``.
``NUMGRAD_PTX_ALL=1 python -m pytest tests/compiler/backends/cuda`` compiles every kernel
the session rendered instead (the op table's too: a few minutes).
"""
from __future__ import annotations


import pytest

import numgrad as ng
from numgrad import config
from cuda_cases import GENERIC_SHAPES, KERNELS, big_product, generic_args, generic_case
from cuda_cases import render_generic, render_only, rendered_log, require_simulator, run_all
from cuda_cases import compile_for_sm90
from cuda_cases import w3_full, w4_full
from cuda_cases import _mlp as mlp
from cuda_cases import _w2 as w2
from numgrad.compiler.backends.cuda.matmul_kernel import TILINGS


def test_every_matrix_kernel_compiles_for_sm90(tmp_path, record_property):
    require_simulator()
    pytest.importorskip("nvidia.cuda_nvcc", reason="numba-cuda[cu12] brings ptxas")
    run_all()  # (each case runs once per process: free after test_cuda_matrix)
    kernels = list(KERNELS.values())
    if config.get("NUMGRAD_PTX_ALL"):  # every kernel this session rendered
        kernels = list(rendered_log().values())
    # W2 and W4 as benchmarked (1e7 and 1e3 float64, W4's 100 steps): rendered, not run.
    big = ng.empty(10_000_000, dtype=ng.float64, device="cuda", requires_grad=True)
    kernels += render_only(w2, big, big)
    kernels += render_only(w4_full, ng.empty(1000, dtype=ng.float64, device="cuda",
                                             requires_grad=True))
    # The matmul kernels of W3 as benchmarked (the matrix's float64 cases have the same
    # blockings) and of a product big enough for the large blocking, both dtypes.
    matmuls = render_only(mlp, *w3_full(ng.float32))
    for dt in (ng.float32, ng.float64):
        matmuls += render_only(big_product, *[
            ng.empty((1024, 1024), dtype=dt, device="cuda", requires_grad=True)
            for _ in range(2)])
    kernels += [k for k in matmuls if "_matmul" in k[0]]
    # Shape-generic kernels: W2's (a second size) and generic_case's (a second shape).
    other = ng.empty(5_000_000, dtype=ng.float64, device="cuda", requires_grad=True)
    generic = render_generic(w2, [big, big], [other, other])
    generic += render_generic(generic_case, *(generic_args(s, "cuda") for s in GENERIC_SHAPES[:2]))
    # W3's matmuls in a shape-generic plan (another batch and width): every blocking,
    # float32, plain and transposed operands (generic_case's are float64).
    w3_other = [ng.empty(s, dtype=ng.float32, device="cuda", requires_grad=i < 4) for i, s in
                enumerate([(256, 784), (256,), (10, 256), (10,), (128, 784)])]
    generic += [k for k in render_generic(mlp, w3_full(ng.float32),
                                          w3_other + [ng.zeros(128, dtype=ng.int64, device="cuda")])
                if "_matmul" in k[0]]
    kernels += generic
    from numgrad.compiler.backends.cuda.ptx import distinct
    n_all = len(kernels)
    kernels = distinct(kernels)  # kernels differing only in integer literals: one of each
    names = {k[0] for k in kernels}
    assert any(n.startswith("_w2_fwd") for n in names)
    assert any(n.startswith("_w4_bwd") for n in names)
    report = compile_for_sm90(kernels, tmp_path)
    lines = [f"{r['name']:<44} regs {r.get('registers')!s:>4}  spills "
             f"{r.get('spill_stores', '?')}/{r.get('spill_loads', '?')}  smem {r.get('shared')}"
             for r in report]
    print(f"\n{n_all} kernels, {len(report)} distinct up to integer literals, sm_90:\n"
          + "\n".join(lines))
    record_property("ptx_report", "\n".join(lines))
    failed = [(r["name"], r.get("error")) for r in report if not r["ok"]]
    assert not failed, failed
    assert sum("_matmul" in r["name"] for r in report) >= 8   # 3 blockings, 2 dtypes
    spilled = [r["name"] for r in report
               if (r["name"].startswith(("_w2_", "_w4_", "w4_full_", "generic_case_"))
                   or "_matmul" in r["name"])
               and (r["spill_stores"] or r["spill_loads"])]
    assert not spilled, spilled
    compiled = {r["name"] for r in report}
    for prefix in ("_w2_", "generic_case_"):  # generic kernels of each took part
        assert any(k[0] in compiled and "def " in k[1] and " n0" in k[1] for k in generic
                   if k[0].startswith(prefix))
    # Every blocking of the generic matmul kernel (extents m, k, n as arguments) took part
    # in both dtypes: compiled above, none spilling.
    for dt in ("float32", "float64"):
        for til in TILINGS:
            assert any(k[0] in compiled and k[0].endswith(f"_matmul{til.bm}x{til.bn}")
                       and f"def {k[0]}(a, b, c, m, k, n" in k[1] and dt in k[2]
                       for k in generic), (dt, til)

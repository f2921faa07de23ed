"""The CUDA kernels of the layers' ops compile for a real GPU (``compile_ptx`` for compute
capability 9.0 and the wheel's ``ptxas -arch=sm_90``), forward and backward: convolution
(im2col/col2im and the matmul), transposed and 1-d convolution, max/average/adaptive
pooling, batch/layer/group normalisation, dropout's mask, and an LSTM and a GRU over a short
sequence. The simulator type-checks nothing, so without this a kernel that Numba's CUDA
target refuses would pass every simulator test. Rendered only (not launched), at tiny
shapes; one kernel of each kind up to integer literals is compiled, in a subprocess with the
simulator off, as test_cuda_ptx.py does."""
from __future__ import annotations

import pytest

import numgrad as ng
import numgrad.nn.functional as F
from cuda_cases import compile_for_sm90, render_only, require_simulator


def _dev(*shape):
    return ng.empty(*shape, dtype=ng.float32, device="cuda", requires_grad=True)


def conv(x, w, b, wt, w1):
    y = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1, stride=1)), 2)
    z = F.conv_transpose2d(y, wt, stride=2)
    return z.sum() + F.conv1d(x.flatten(2), w1, padding=2, dilation=2).sum()


def pools(x):
    return (F.avg_pool2d(x, 2, ceil_mode=True).sum() + F.adaptive_avg_pool2d(x, (2, 1)).sum()
            + F.adaptive_max_pool2d(x, 2).sum() + F.max_pool1d(x.flatten(2), 3).sum())


def norms(x, g, b, rm, rv):
    y = F.batch_norm(x, rm, rv, g, b, training=True, momentum=0.1)
    return ((F.layer_norm(x, (4, 4)) * 2).sum() + y.sum()
            + F.group_norm(x, 3, g, b).sum() + F.dropout(x, 0.25).sum())


LSTM = GRU = None


def recurrent(x):
    return LSTM(x)[0].sum() + GRU(x)[1].sum()


def test_layer_kernels_compile_for_sm90(tmp_path):
    global LSTM, GRU
    require_simulator()
    pytest.importorskip("nvidia.cuda_nvcc", reason="numba-cuda[cu12] brings ptxas")
    ng.manual_seed(0)
    LSTM = ng.nn.LSTM(3, 4, batch_first=True).cuda()
    GRU = ng.nn.GRU(3, 4).cuda()
    kernels = []
    for fn, args in [
            (conv, (_dev(2, 1, 4, 4), _dev(3, 1, 3, 3), _dev(3), _dev(3, 2, 2, 2),
                    _dev(2, 1, 3))),
            (pools, (_dev(2, 3, 5, 4),)),
            (norms, (_dev(2, 3, 4, 4), _dev(3), _dev(3),
                     ng.zeros(3, device="cuda"), ng.ones(3, device="cuda"))),
            (recurrent, (_dev(2, 3, 3),))]:
        got = render_only(fn, *args)
        assert any("_bwd_" in k[0] for k in got), fn.__name__  # the backward too
        kernels += got
    from numgrad.compiler.backends.cuda.ptx import distinct
    kernels = distinct(kernels)
    report = compile_for_sm90(kernels, tmp_path)
    assert len(report) == len(kernels) > 40
    failed = [(r["name"], r.get("error")) for r in report if not r["ok"]]
    assert not failed, failed
    for prefix in ("conv_", "pools_", "norms_", "recurrent_"):
        assert any(r["name"].startswith(prefix) for r in report), prefix

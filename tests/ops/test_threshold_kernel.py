"""relu's fused backward (ops.threshold) against PyTorch's threshold_backward, bit for bit, on
both of its kernels: np.where below ~2,000 elements, a bitwise mask above."""
import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.ops import threshold


def _operands(n, dtype):
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    # relu's output holds +-0, NaN of either sign and inf; any y (negatives too) is allowed.
    y[:6] = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf]
    g[6:12] = [np.inf, -np.inf, np.nan, -0.0, 0.0, -np.nan]
    y[6:12] = [1.0, -1.0, 2.0, 3.0, -0.0, 0.5]
    return g, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [16, threshold._BITWISE_FROM, 3 * threshold._BITWISE_FROM + 5])
def test_kernel_bits_match_torch(n, dtype):
    g, y = _operands(n, dtype)
    got = threshold.threshold_backward(ng.tensor(g), ng.tensor(y)).numpy()
    want = torch.ops.aten.threshold_backward(torch.tensor(g), torch.tensor(y), 0).numpy()
    assert got.dtype == want.dtype
    bits = np.int32 if dtype == np.float32 else np.int64
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def test_strided_grad_and_relu_end_to_end():
    # A transposed (non-contiguous) upstream gradient through relu's backward, large enough
    # for the bitwise kernel, against torch.
    g, y = _operands(64 * 80, np.float32)
    a = y.reshape(64, 80)
    gt = np.ascontiguousarray(g.reshape(80, 64)).T
    x, tx = ng.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    x.relu().backward(ng.tensor(gt))
    tx.relu().backward(torch.tensor(gt))
    np.testing.assert_array_equal(x.grad.numpy().view(np.int32),
                                  tx.grad.numpy().view(np.int32))

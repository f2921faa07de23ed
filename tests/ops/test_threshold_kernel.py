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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 37, 3000])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed"])
def test_relu_forward_bits_match_torch(n, dtype, layout):
    # PyTorch's relu keeps -0 and passes NaN of either sign with its payload, on every loop
    # NumPy may pick (SIMD body and tail, strided).
    _, y = _operands(2 * n + 12, dtype)
    x = {"contiguous": y, "strided": y[::2],
         "transposed": y[:2 * (len(y) // 2)].reshape(2, -1).T}[layout]
    got = ng.relu(ng.tensor(x)).numpy()
    want = torch.relu(torch.from_numpy(np.ascontiguousarray(x))).numpy()
    bits = np.int32 if dtype == np.float32 else np.int64
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def test_relu_kernels_agree_where_max_is_not_trusted():
    # The portable kernel (taken where the probe finds np.maximum differs) gives the same bits.
    _, y = _operands(100, np.float64)
    np.testing.assert_array_equal(threshold._relu_by_where(y).view(np.int64),
                                  torch.relu(torch.from_numpy(y)).numpy().view(np.int64))
    assert not threshold._max_is_relu(np.dtype(np.float16)) or np.signbit(
        np.maximum(np.float16(0), np.float16(-0.0)))


def test_relu_of_integers_matches_torch():
    x = np.array([-3, 0, 5, np.iinfo(np.int64).min], np.int64)
    got = ng.relu(ng.tensor(x))
    assert got.dtype == ng.int64
    np.testing.assert_array_equal(got.numpy(), torch.relu(torch.from_numpy(x)).numpy())

"""make_dual uses a tangent laid out as the primal as is (unpack_dual returns that very tensor)
and copies one laid out otherwise, as PyTorch's does."""
import numpy as np
import pytest

import numgrad as ng
import numgrad.autograd.forward_ad as fwAD

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("lib", [ng, torch], ids=["numgrad", "torch"])
def test_tangent_identity_follows_layout(lib):
    fw = lib.autograd.forward_ad
    primal, tangent = lib.randn(4, 4), lib.randn(4, 4)
    with fw.dual_level():
        same = fw.make_dual(primal, tangent)
        assert fw.unpack_dual(same).tangent is tangent
        other = fw.make_dual(primal, tangent.T)
        t = fw.unpack_dual(other).tangent
        assert t is not tangent
        np.testing.assert_array_equal(t.numpy(), tangent.T.numpy())
        out = fw.unpack_dual(same * 3).tangent
        np.testing.assert_allclose(out.numpy(), 3 * tangent.numpy())
    assert fw.unpack_dual(same).tangent is None


def test_other_dtype_tangent_is_converted_not_kept():
    with fwAD.dual_level():
        d = fwAD.make_dual(ng.randn(3, dtype=ng.float64), ng.ones(3))
        t = fwAD.unpack_dual(d).tangent
        assert t.dtype == ng.float64

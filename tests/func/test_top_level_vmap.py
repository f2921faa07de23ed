"""``from torch import vmap`` works with numgrad in torch's place: it is numgrad.func.vmap."""
import numpy as np

import numgrad as ng


def test_vmap_is_importable_from_the_package():
    from numgrad import vmap
    from numgrad.func import vmap as func_vmap
    assert vmap is func_vmap is ng.vmap
    x = ng.randn(3, 4)
    np.testing.assert_allclose(vmap(lambda r: r.sum())(x).numpy(), x.sum(1).numpy(), rtol=1e-6)

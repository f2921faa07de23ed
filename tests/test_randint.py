"""torch.randint's call forms: (high, size), (low, high, size), keywords, and its errors."""
import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

FORMS = [((10, (8,)), {}), ((3, 10, (2, 2)), {}), ((3, 10), {"size": (5,)}),
         ((), {"high": 5, "size": (3,)}), ((4, (2,)), {"dtype": "int32"})]


@pytest.mark.parametrize("args,kwargs", FORMS)
def test_randint_forms_give_torchs_shapes_dtypes_and_ranges(args, kwargs):
    tk = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    nk = {k: getattr(ng, v) if k == "dtype" else v for k, v in kwargs.items()}
    want, got = torch.randint(*args, **tk), ng.randint(*args, **nk)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    low, high = (0, args[0]) if len(args) == 2 and isinstance(args[1], tuple) else \
        (args[0], args[1]) if len(args) >= 2 else (0, kwargs.get("high", args[:1]))
    v = got.numpy()
    assert v.min() >= low and v.max() < high


def test_randint_draws_from_numgrads_seed_and_a_given_generator():
    ng.manual_seed(3)
    a = ng.randint(100, (6,))
    ng.manual_seed(3)
    np.testing.assert_array_equal(ng.randint(100, (6,)).numpy(), a.numpy())
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(ng.randint(0, 9, (4,), generator=g1).numpy(),
                                  ng.randint(0, 9, (4,), generator=g2).numpy())


@pytest.mark.parametrize("args", [(5, 3, (2,)), (4, 4, (1,))])
def test_randint_empty_range_raises_torchs_error(args):
    with pytest.raises(RuntimeError) as want:
        torch.randint(*args)
    with pytest.raises(RuntimeError) as got:
        ng.randint(*args)
    assert str(got.value) == str(want.value)


def test_randint_without_size_is_a_type_error():
    with pytest.raises(TypeError):
        torch.randint(10)
    with pytest.raises(TypeError):
        ng.randint(10)

"""Tensors print as PyTorch prints them: str() and repr() compared with torch's for ints,
floats, bools, big and small magnitudes (scientific notation), nan/inf, 0-d, empty,
summarised (over 1000 elements), wide rows wrapped at 80 columns, float64 suffixes,
requires_grad and grad_fn suffixes (wrapped too), and under set_printoptions. The only
difference allowed is the dtype's module name (numgrad.float64 for torch.float64)."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
ARRAYS = {
    "ints": np.arange(10), "ints_neg": np.array([-5, 3, 100]),
    "long_ints": np.arange(100) * 1000, "big_int": np.arange(1200),
    "float": np.array([1.5, -2.25, 3.0], np.float32), "float_int": np.array([1., 2., -3.]),
    "small": np.array([1e-5, 2e-5]), "big": np.array([1e9, 2.]),
    "span": np.array([1e-3, 1e3, 5.0]), "tiny": np.array([1e-10, -1e-12]),
    "nan_inf": np.array([np.nan, 1.5, np.inf, -np.inf]), "only_nan": np.array([np.nan, np.inf]),
    "sci_nan": np.array([1e-8, np.nan, 1.0]), "neg_zero": np.array([-0.0, 1.0]),
    "int_nan": np.array([np.nan, 2.0, -np.inf]), "zeros": np.zeros(3),
    "scalar": np.array(3.25), "scalar_int": np.array(7), "scalar_bool": np.array(True),
    "empty": np.zeros((0,)), "empty_2d": np.zeros((2, 0)), "empty_int": np.zeros(0, np.int64),
    "empty_bool": np.zeros((0, 3), bool), "bool": np.array([True, False]),
    "all_true": np.array([True, True]),
    "randn": rng.standard_normal((4, 5)), "summarised_2d": rng.standard_normal((40, 40)),
    "wide_row": rng.standard_normal(30), "summarised_1d": np.arange(2000.),
    "3d": rng.standard_normal((2, 3, 4)), "summarised_3d": rng.standard_normal((12, 10, 10)),
    "magnitudes": rng.standard_normal(12) * 1e4, "big_ints_as_floats": np.array([123456789., 1.]),
    "float64": rng.standard_normal(3).astype(np.float64),
    "float64_wide": rng.standard_normal((3, 9)).astype(np.float64),
}
FLOAT64 = {"float64", "float64_wide"}


def _pair(name):
    a = ARRAYS[name]
    if a.dtype.kind == "f" and name not in FLOAT64:
        a = a.astype(np.float32)
    return ng.tensor(a), torch.tensor(a)


def _same(ours, theirs):
    assert ours == theirs.replace("torch.", "numgrad."), f"\n{ours}\n---\n{theirs}"


@pytest.mark.parametrize("name", list(ARRAYS))
def test_str_and_repr_match_torch(name):
    t, tt = _pair(name)
    _same(str(t), str(tt))
    _same(repr(t), repr(tt))


@pytest.mark.parametrize("name", ["float", "randn", "scalar", "float64_wide", "wide_row"])
def test_requires_grad_and_grad_fn_suffixes_match_torch(name):
    t, tt = _pair(name)
    t.requires_grad_()
    tt.requires_grad_()
    _same(repr(t), repr(tt))
    _same(repr(t * 2), repr(tt * 2))
    _same(repr(t.sum()), repr(tt.sum()))


@pytest.mark.parametrize("options", [dict(precision=2), dict(threshold=5, edgeitems=1),
                                     dict(linewidth=40), dict(sci_mode=True),
                                     dict(sci_mode=False), dict(profile="short"),
                                     dict(profile="full"), dict(edgeitems=0, threshold=5)])
def test_print_options_match_torch(options):
    try:
        ng.set_printoptions(**options)
        torch.set_printoptions(**options)
        for name in ("randn", "summarised_2d", "span", "ints", "wide_row"):
            t, tt = _pair(name)
            _same(str(t), str(tt))
    finally:
        ng.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


def test_default_dtype_float64_drops_its_suffix_and_names_float32():
    try:
        ng.set_default_dtype(ng.float64)
        torch.set_default_dtype(torch.float64)
        for a in (np.array([1.5, 2.0]), np.array([1.5, 2.0], np.float32)):
            _same(repr(ng.tensor(a)), repr(torch.tensor(a)))
    finally:
        ng.set_default_dtype(ng.float32)
        torch.set_default_dtype(torch.float32)

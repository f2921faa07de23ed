"""vmap over the LAPACK rows: one batched call (no per-example loop), against torch.func.vmap."""
import numpy as np
import pytest
import torch

import numgrad as ng
import numgrad.func.batching as batching


@pytest.fixture
def no_loop(monkeypatch):
    def refuse(ctx, prim, datas, params):
        raise AssertionError(f"{prim.name} fell back to the per-example loop")
    monkeypatch.setattr(batching, "loop", refuse)


def _spd(b, n, seed):
    a = np.random.default_rng(seed).standard_normal((b, n, n))
    return a @ a.transpose(0, 2, 1) + n * np.eye(n)


def _both(fn_ng, fn_t, *arrays, in_dims=0):
    got = ng.func.vmap(fn_ng, in_dims=in_dims)(*[ng.tensor(a) for a in arrays])
    want = torch.func.vmap(fn_t, in_dims=in_dims)(*[torch.tensor(a) for a in arrays])
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-9)


# Sign-free functions of each decomposition (its factors are unique up to signs).
ONE_OPERAND = {
    "inv": (lambda m: m.linalg.inv, None),
    "det": (lambda m: m.linalg.det, None),
    "slogdet": (lambda m: lambda a: m.linalg.slogdet(a).logabsdet, None),
    "cholesky": (lambda m: m.linalg.cholesky, None),
    "qr": (lambda m: lambda a: m.linalg.qr(a).R.abs(), None),
    "eigh": (lambda m: lambda a: m.linalg.eigh(a).eigenvalues, None),
    "svd": (lambda m: lambda a: m.linalg.svd(a, full_matrices=False).S, None),
    "pinv": (lambda m: m.linalg.pinv, None),
    "matrix_exp": (lambda m: m.linalg.matrix_exp, None),
}


@pytest.mark.parametrize("name", ONE_OPERAND)
def test_one_operand_rows_batch_in_one_call(name, no_loop):
    make, _ = ONE_OPERAND[name]
    a = _spd(3, 3, 0) / 10
    _both(make(ng), make(torch), a)
    _both(make(ng), make(torch), a.transpose(1, 0, 2).copy(), in_dims=1)   # dim moved first


def test_rows_batch_inside_an_example_batch(no_loop):
    a = _spd(6, 2, 1).reshape(2, 3, 2, 2)   # examples of (3, 2, 2): the row's own batch too
    _both(ng.linalg.inv, torch.linalg.inv, a)


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_solve_with_shared_or_batched_operands(in_dims, no_loop):
    a, b = _spd(3, 3, 2), np.random.default_rng(3).standard_normal((3, 3, 2))
    args = [x[0] if d is None else x for x, d in zip((a, b), in_dims)]
    _both(ng.linalg.solve, torch.linalg.solve, *args, in_dims=in_dims)
    tri = lambda m: lambda x, y: m.linalg.solve_triangular(x, y, upper=True)   # noqa: E731
    _both(tri(ng), tri(torch), *args, in_dims=in_dims)


def test_solve_batched_matrix_against_examples_of_a_stack(no_loop):
    # Per example: A (3, 3) and B (2, 3, 1): A's example is padded to broadcast against B's.
    a, b = _spd(2, 3, 4), np.random.default_rng(5).standard_normal((2, 2, 3, 1))
    _both(ng.linalg.solve, torch.linalg.solve, a, b)


def test_gradient_of_a_decomposition_under_vmap():
    # vmap(grad): the backward's rows (solves, products) batch too; values against torch.
    a = _spd(3, 3, 6)
    f = lambda m: m.func.grad(lambda x: m.linalg.eigh(x).eigenvalues.square().sum())  # noqa
    _both(f(ng), f(torch), a)

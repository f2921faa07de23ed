"""ng.func.vmap: every batching rule (by kind and by name) and the per-example fallback
agree with a Python loop over the examples and with torch.func.vmap; in_dims/out_dims,
nesting, chunk_size, randomness and the error texts; under @ng.jit."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from numgrad.func import batching  # noqa: E402
from conftest import to_numpy  # noqa: E402
from helpers import assert_same_error, assert_same_tree  # noqa: E402

vmap = ng.func.vmap
RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 2, 4))   # 3 examples of (2, 4)
W = RNG.standard_normal((4, 3))
V = RNG.standard_normal(4)

# Per-example functions, each exercising one rule (or the fallback), on an example (2, 4).
CASES = {
    "elementwise": lambda x: (x.sin() * 2 + x.exp()) / (1 + x * x),
    "compare": lambda x: (x > 0.1) & (x < 1.0),
    "where_cast": lambda x: ng.where(x > 0, x, x.to(ng.float32).to(ng.float64) * 0.5),
    "broadcast_rank": lambda x: x + ng.tensor(V) * x[0],
    "expand": lambda x: x[0].expand(3, 4) * 1.0,
    "sum_dims": lambda x: x.sum(dim=1) + x.mean() + x.amax(dim=0).sum(),
    "keepdim": lambda x: x - x.amin(dim=-1, keepdim=True),
    "softmax": lambda x: ng.nn.functional.softmax(x, dim=1),
    "permute": lambda x: x.T.reshape(2, 2, 2).permute(2, 0, 1),
    "matmul_mat": lambda x: x @ ng.tensor(W),
    "matmul_vec": lambda x: x @ ng.tensor(V),
    "matmul_left": lambda x: ng.tensor(W).T @ x[1],
    "matmul_both": lambda x: x @ x.T,
    "vec_vec": lambda x: x[0] @ x[1],
    "cat_stack": lambda x: ng.stack([ng.cat([x, ng.ones(1, 4, dtype=ng.float64)]),
                                     x[:1].expand(3, 4)]),
    "basic_index": lambda x: x[1, 1:3] * x[:, None, 0],
    "arg_reductions": lambda x: x.argmax(dim=1) + x.argmin(dim=0).sum(),
    "cumsum_argsort": lambda x: x.cumsum(1) + x.argsort(dim=1),
    "sort_values": lambda x: x.sort(dim=1).values,  # a gather by a per-example tensor index
    "advanced_index": lambda x: x[:, [0, 2, 2]] + x[[1, 0], 1:4],
    "advanced_first": lambda x: x[[1, 0, 1], [0, 2, 3]] * 2,
    "fallback_index": lambda x: x.reshape(2, 2, 2)[[1, 0], :, [0, 1]],  # split runs: the loop
    "flat_argmax": lambda x: x.argmax(),
    "prod": lambda x: x.prod(dim=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_loop(name, monkeypatch):
    fn = CASES[name]
    looped = []
    loop = batching.loop
    monkeypatch.setattr(batching, "loop", lambda *a: looped.append(a[1].name) or loop(*a))
    got = vmap(fn)(ng.tensor(A))
    assert bool(looped) == name.startswith("fallback"), looped  # a rule, or the loop
    want = np.stack([to_numpy(fn(ng.tensor(a))) for a in A])
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-12, atol=1e-12)


def test_advanced_index_gradients():
    """The vjp of an advanced index (index_add) batches by the same rule."""
    fn = lambda x: (x[:, [0, 2, 2]] ** 2).sum() + x[[1, 0], [3, 3]].sum()  # noqa: E731
    got = vmap(ng.func.grad(fn))(ng.tensor(A))
    want = torch.func.vmap(torch.func.grad(fn))(torch.tensor(A))
    assert_same_tree(got, want)


def test_grad_inside_matches_torch():
    def loss(w, x):
        lib = torch if isinstance(w, torch.Tensor) else ng
        return lib.nn.functional.softmax((x @ w).tanh(), dim=-1)[..., 0].sum() + (w ** 2).sum()
    got = vmap(ng.func.grad(loss), in_dims=(None, 0))(ng.tensor(W), ng.tensor(A))
    want = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(torch.tensor(W),
                                                                       torch.tensor(A))
    assert_same_tree(got, want)


def test_in_dims_out_dims_pytrees():
    def f(d, s):
        return {"y": d["a"] * s, "z": (d["b"].sum(),)}
    d = {"a": ng.tensor(A), "b": ng.tensor(A.transpose(1, 0, 2))}
    got = vmap(f, in_dims=({"a": 0, "b": 1}, None), out_dims={"y": 1, "z": (0,)})(d, 2.0)
    td = {"a": torch.tensor(A), "b": torch.tensor(A.transpose(1, 0, 2))}
    want = torch.func.vmap(f, in_dims=({"a": 0, "b": 1}, None),
                           out_dims={"y": 1, "z": (0,)})(td, 2.0)
    assert_same_tree(got, want)


def test_negative_dims_and_unbatched_output():
    got = vmap(lambda x, c: (x.sum(0), c), in_dims=(-1, None), out_dims=(-1, 0))(
        ng.tensor(A), ng.tensor(V))
    want = torch.func.vmap(lambda x, c: (x.sum(0), c), in_dims=(-1, None), out_dims=(-1, 0))(
        torch.tensor(A), torch.tensor(V))
    assert_same_tree(got, want)


def test_nested_and_chunked():
    fn = lambda x, y: (x * y).sum()  # noqa: E731
    got = vmap(vmap(fn, in_dims=(0, None)), in_dims=(None, 0))(ng.tensor(A[0]),
                                                                ng.tensor(A[1]))
    want = torch.func.vmap(torch.func.vmap(fn, in_dims=(0, None)), in_dims=(None, 0))(
        torch.tensor(A[0]), torch.tensor(A[1]))
    assert_same_tree(got, want)
    whole = vmap(CASES["softmax"])(ng.tensor(A))
    for chunk in (1, 2):
        np.testing.assert_array_equal(
            to_numpy(vmap(CASES["softmax"], chunk_size=chunk)(ng.tensor(A))), to_numpy(whole))


def test_randomness():
    x = ng.ones(4, 50, dtype=ng.float64)
    drop = lambda r: ng.nn.functional.dropout(r, 0.5)  # noqa: E731
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(drop)(x)
    same = to_numpy(vmap(drop, randomness="same")(x))
    assert (same == same[0]).all() and (same == 0).any()
    diff = to_numpy(vmap(drop, randomness="different")(x))
    assert not (diff == diff[0]).all()
    assert set(np.unique(diff)) <= {0.0, 2.0}


def test_error_texts():
    def cases(lib, x, y):
        def f(a, b=None):
            return a
        return [lambda: lib.func.vmap(lambda a, b: a + b)(x, y),
                lambda: lib.func.vmap(f)(1.0),
                lambda: lib.func.vmap(f, in_dims=None)(x),
                lambda: lib.func.vmap(f, in_dims=2)(x),
                lambda: lib.func.vmap(f, randomness="foo")(x),
                lambda: lib.func.vmap(lambda a: 3)(x),
                lambda: lib.func.vmap(f, out_dims=3)(x),
                lambda: lib.func.vmap(f, chunk_size=0)(x)]
    ours = cases(ng, ng.ones(2, 3), ng.ones(3, 3))
    theirs = cases(torch, torch.ones(2, 3), torch.ones(3, 3))
    for a, b in zip(ours, theirs):
        assert_same_error(a, b)


def test_data_dependent_control_flow_is_refused():
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda r: r if r.sum() > 0 else -r)(ng.tensor(A))


@ng.jit
def per_example_grads(w, x):
    return vmap(ng.func.grad(lambda w, r: ((r @ w).tanh() ** 2).sum()), in_dims=(None, 0))(w, x)


def test_jit_vmap_grad_is_one_plan():
    got = per_example_grads(ng.tensor(W), ng.tensor(A))
    want = torch.func.vmap(torch.func.grad(lambda w, r: ((r @ w).tanh() ** 2).sum()),
                           in_dims=(None, 0))(torch.tensor(W), torch.tensor(A))
    assert_same_tree(got, want)
    ir = str(per_example_grads.trace(ng.tensor(W), ng.tensor(A)))
    assert "matmul" in ir and ir.count("tanh") == 1  # batched: one op per primitive, no loop
    assert per_example_grads.stats.traces == 1


W_PARAM = ng.nn.Parameter(ng.tensor(W))


@ng.jit
def vmapped_loss(x):
    return vmap(lambda r: (r @ W_PARAM).tanh())(x).sum()


def test_jit_backward_through_vmap_reaches_a_captured_parameter():
    wt = torch.tensor(W, requires_grad=True)
    xt = torch.tensor(A[:, 0], requires_grad=True)
    torch.func.vmap(lambda r: (r @ wt).tanh())(xt).sum().backward()
    x = ng.tensor(A[:, 0], requires_grad=True)
    W_PARAM.grad = None
    vmapped_loss(x).backward()
    assert_same_tree((W_PARAM.grad, x.grad), (wt.grad, xt.grad))

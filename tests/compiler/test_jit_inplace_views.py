"""In-place ops on views and non-leaves under @ng.jit agree with eager mode and PyTorch.

An in-place op on a view (``v[0].mul_(3)``, ``v.T.mul_(3)``,
``v.reshape(-1)[1:].zero_()``) must reach the base, also when the base is an input of
the jitted function (then the caller's tensor changes); and an in-place op on a
non-leaf must not raise a false "modified by an inplace operation" error at backward,
while real ones still raise. Each program runs three ways: numgrad eager, numgrad
``@ng.jit`` (forward then ``backward``), and torch; values and gradients must agree.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import numgrad as ng
from numgrad.devices import cuda_is_available

SHAPE = (3, 4)


def _v0_mul(x):
    v = x * 1.0
    v[0].mul_(3)
    return v


def _col_add(x):
    v = x * 1.0
    v[:, 0].add_(1)
    return v


def _t_mul(x):
    v = x * 1.0
    v.T.mul_(3)
    return v * 1


def _reshape_zero(x):
    v = x * 2.0
    v.reshape(-1)[1:].zero_()
    return v


def _view_of_view(x):
    v = x * 1.0
    v[1:][:, 1:3].T.mul_(v[0, :2].detach() + 2)
    return v.sin()


def _view_used_after(x):
    v = x * 2.0
    row = v[1]           # a view taken before the write ...
    v[1].mul_(2)         # ... sees it (storage is shared eagerly)
    return row * v[0]


def _write_root_then_view(x):
    v = x * 1.0
    a = v[:, 1]
    v.mul_(2)            # an in-place op on the root shows through its views (and their
    #                      gradient goes through it, as PyTorch regenerates their grad_fn)
    return a * 3 + v.sum()


def _setitem_chain(x):
    v = x * 1.0
    v[0][1:3] = x[1, :2] * 5
    return v * v


def _augmented_assign(x):
    v = x * 1.0
    v[0] *= 3                # getitem, imul on the view, then setitem: all reach v
    v[:, 1] += v[:, 2]
    return v


def _clamp(x):
    v = x * 1.0
    v.clamp_(-0.5, 0.5)
    return v


def _pow(x):
    v = x * 1.0
    v.pow_(2)
    return v


def _mul_tensor(x):
    v = x * 1.0
    v.mul_(x)
    return v


def _sin_clamp(x):
    return x.sin().clamp_(-0.5, 0.5)


def _relu_then_add(x):
    v = x * 1.0
    v.relu_()
    return v + 2


def _fresh_tensor_updated(x):
    lib = torch if isinstance(x, torch.Tensor) else ng
    v = lib.zeros(x.shape, dtype=x.dtype)   # concrete, made inside the jitted function
    a = v[1:]
    v.add_(x)                               # ... and updated with a traced value
    v[0].mul_(2)
    return a * v[:2]


PROGRAMS = [_v0_mul, _col_add, _t_mul, _reshape_zero, _view_of_view, _view_used_after,
            _write_root_then_view, _setitem_chain, _augmented_assign, _clamp, _pow, _mul_tensor,
            _sin_clamp, _relu_then_add, _fresh_tensor_updated]
JITTED = {f.__name__: ng.jit(f) for f in PROGRAMS}


def _data():
    return np.random.default_rng(0).standard_normal(SHAPE)


def _run(fn, data, lib):
    x = lib.tensor(data.copy(), requires_grad=True)
    out = fn(x)
    w = lib.tensor(np.linspace(-1, 2, out.numel()).reshape(out.shape))
    (out * w).sum().backward()
    return out.detach().numpy().copy(), x.grad.numpy().copy()


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_inplace_program_matches_eager_and_torch(fn):
    data = _data()
    ref_out, ref_grad = _run(fn, data, torch)
    eager = _run(fn, data, ng)
    for _ in range(2):  # a second call reuses the plan
        jit = _run(JITTED[fn.__name__], data, ng)
        np.testing.assert_allclose(jit[0], eager[0], rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(jit[1], eager[1], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(eager[0], ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eager[1], ref_grad, rtol=1e-12, atol=1e-12)


def _mutate_input_view(x):
    x[0].mul_(3)
    x.T[1:, 2].add_(1)
    return x.sum(0)


def test_view_of_input_writes_back_into_callers_tensor():
    data = _data()
    ref = torch.tensor(data.copy())
    ref_out = _mutate_input_view(ref)
    for f in (_mutate_input_view, ng.jit(_mutate_input_view)):
        for _ in range(2):
            x = ng.tensor(data.copy())
            out = f(x)
            np.testing.assert_allclose(x.numpy(), ref.numpy(), rtol=1e-15)
            np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-15)
            assert x._version == 2


def test_view_of_nonleaf_input_takes_the_gradient_through_the_write():
    data = _data()
    f = ng.jit(_mutate_input_view)
    results = []
    for lib, fn in ((torch, _mutate_input_view), (ng, _mutate_input_view), (ng, f)):
        a = lib.tensor(data.copy(), requires_grad=True)
        x = a * 2
        out = fn(x)
        (out.sum() + (x * x).sum()).backward()
        results.append((x.detach().numpy().copy(), out.detach().numpy().copy(),
                        a.grad.numpy().copy()))
    for got in results[1:]:
        for g, r in zip(got, results[0]):
            np.testing.assert_allclose(g, r, rtol=1e-12)


def _real_version_error(x):
    v = x * 1.0
    y = v * v          # saves v
    v[0].mul_(2)       # ... which is then modified through a view
    return y


def _real_version_error_out(x):
    v = x.exp()        # saves its output
    v.mul_(2)
    return v


def _real_version_error_relu(x):
    v = x * 1.0
    v.relu_()          # saves its output: v itself
    v.mul_(2)
    return v


@pytest.mark.parametrize("fn", [_real_version_error, _real_version_error_out,
                                _real_version_error_relu],
                         ids=lambda f: f.__name__)
def test_real_version_errors_still_raise(fn):
    for lib, f in ((torch, fn), (ng, fn), (ng, ng.jit(fn))):
        x = lib.tensor(_data(), requires_grad=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            f(x).sum().backward()


def test_inplace_on_expanded_view_raises_like_eager():
    def f(x):
        v = x[:1] * 1.0
        v.expand(3, 4).mul_(2)
        return v
    x = ng.tensor(_data(), requires_grad=True)
    for fn in (f, ng.jit(f)):
        with pytest.raises(RuntimeError, match="more than one element"):
            fn(x)


def test_view_that_numpy_would_copy_is_not_a_view_under_jit():
    def f(x):
        v = x * 1.0
        v.T.reshape(-1)[0].mul_(100)   # reshape of a transpose copies: v is unchanged
        return v

    def f_result_order(x):
        y = x.T * 2              # NumPy (and torch) keep the transposed order here ...
        y.reshape(-1)[0].mul_(100)   # ... so this reshape copies: y is unchanged
        z = x * 2
        z.reshape(-1)[0].mul_(100)   # a view: z[0, 0] changes
        return y, z

    x = ng.tensor(_data())
    np.testing.assert_array_equal(ng.jit(f)(x).numpy(), f(x).numpy())
    np.testing.assert_array_equal(f(x).numpy(), x.numpy())
    for got, want in zip(ng.jit(f_result_order)(x), f_result_order(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())

    def g(x):
        return x.T.view(-1)

    def h(x):
        return x.T.exp().view(-1)
    for fn in (g, ng.jit(g), h, ng.jit(h)):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            fn(x)


def _write_through_detach(x):
    v = x * 2.0
    v.detach().mul_(3)         # values change, history does not (as eagerly)
    return v * x


def _detached_sees_later_write(x):
    v = x * 2.0
    d = v.detach()
    v[1:].add_(1)
    return d * x


def _detach_of_view(x):
    v = x.sin()
    v[0].detach().zero_()
    return v + d_sum(v)


def d_sum(v):
    return v.detach().sum()


@pytest.mark.parametrize("fn", [_write_through_detach, _detached_sees_later_write,
                                _detach_of_view], ids=lambda f: f.__name__)
def test_detached_alias_shares_values_under_jit(fn):
    data = _data()
    ref = _run(fn, data, torch)
    eager = _run(fn, data, ng)
    jit = _run(ng.jit(fn), data, ng)
    for a, b, c in zip(jit, eager, ref):  # (kernels may reassociate x * 2 * 3, and use vmath)
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(b, c, rtol=1e-12, atol=1e-12)


# A caller's layout decides whether a reshape of the input is a view (writes reach the
# caller's tensor) or a copy (they do not): the same jitted function called with a
# C-contiguous, a transposed and a sliced input must do what eager mode does with each.
def _reshape_input_inplace(x):
    y = x.reshape(-1)
    y.mul_(2.0)
    return y * 1.0


def _view_of_input_inplace(x):
    x[0].add_(1.0)
    return x * 1.0


_LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "sliced": lambda a: np.concatenate([a, a], axis=1)[:, ::2],
}
_layout_jits = {f: ng.jit(f) for f in (_reshape_input_inplace, _view_of_input_inplace)}


@pytest.mark.parametrize("fn", list(_layout_jits), ids=lambda f: f.__name__)
def test_callers_layout_decides_view_or_copy_as_eagerly(fn):
    base = np.arange(12.0).reshape(SHAPE)
    for layout, make in _LAYOUTS.items():  # one jitted function, the layouts in turn
        got = {}
        for name, run, lib in (("eager", fn, ng), ("jit", _layout_jits[fn], ng),
                               ("torch", fn, torch)):
            x = lib.from_numpy(make(base.copy()))  # shares the strided array
            got[name] = (run(x).numpy().copy(), x.numpy().copy())
        for name in ("jit", "eager"):
            np.testing.assert_array_equal(got[name][0], got["torch"][0],
                                          err_msg=f"{layout}: {name} result")
            np.testing.assert_array_equal(got[name][1], got["torch"][1],
                                          err_msg=f"{layout}: the caller's tensor ({name})")


def _scale_view(v):
    v.mul_(3.0)
    return v * 2.0


@pytest.mark.skipif(not cuda_is_available(), reason="no CUDA device or simulator")
def test_a_cuda_view_argument_written_in_place_reaches_its_base_and_siblings():
    # A CUDA view other than a reshape is a copy of its own: a compiled call's write into
    # it must reach its base and the base's other views, as an eager in-place op's does
    # (and as shared memory does on the CPU).
    data = _data()
    jf = ng.jit(_scale_view)

    def run(fn, dev):
        base = ng.tensor(data.copy(), device=dev)
        v, col, flat = base[1:], base[:, 2], base.reshape(-1)
        out = fn(v)
        assert base._version == 1
        return [t.cpu().numpy().copy() for t in (out, base, v, col, flat)]

    want = run(_scale_view, "cpu")
    for got in (run(_scale_view, "cuda"), run(jf, "cuda"), run(jf, "cuda")):  # 2nd: fast path
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)

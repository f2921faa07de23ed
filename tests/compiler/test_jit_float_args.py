"""Python float arguments: constants until they vary, then traced 0-d values.

The first value of a float argument is a constant of its plan (keyed by its bits); a
second value makes it a traced 0-d float64 input that promotes as a Python number, so
later values trace and compile nothing. Eager mode is the reference, bit for bit
(sums, which kernels may add in another order, to the last places).
Floats the function needs as Python numbers stay constants; ``static_argnums`` /
``static_argnames`` keep arguments constants always; captured floats stay guarded.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import numgrad as ng

LRS = [0.5 * (1 + math.cos(math.pi * k / 20)) for k in range(20)]   # a cosine schedule


def _bits(t):
    a = t.detach().cpu().numpy() if isinstance(t, ng.Tensor) else np.asarray(t)
    return a.dtype.str, a.shape, a.tobytes()


def _sum_close(got, want):
    # A sum: kernels may add in another order than NumPy (only sums reassociate).
    g, w = got.detach().numpy(), want.detach().numpy()
    assert g.dtype == w.dtype
    np.testing.assert_allclose(g, w, rtol=1e-6 if g.dtype == np.float32 else 1e-14)


def _same(got, want):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert _bits(g) == _bits(w), (g, w)


def _loss(w, x):
    d = x * w - 1.0
    return (d * d).sum()


def _sgd_step(w, x, lr):
    value, g = ng.value_and_grad(_loss)(w, x)
    return value, w - lr * g


# ------------------------------------------------------------------ the training loop
@pytest.mark.parametrize("dtype", [ng.float32, ng.float64])
def test_a_varying_learning_rate_traces_twice_and_gives_eagers_bits(dtype):
    step = ng.jit(_sgd_step)
    w = ng.linspace(-1.0, 1.0, 6, dtype=dtype)
    x = ng.tensor([0.5, -1.5, 2.0, 0.25, -0.75, 3.0], dtype=dtype)
    we = w
    for lr in LRS:
        value, w = step(w, x, lr)
        want_value, we = _sgd_step(we, x, lr)
        _same(w, we)
        _sum_close(value, want_value)
    assert step.stats.traces == 2 and step.stats.compiles == 2
    assert step.stats.retraces == 1
    assert step.stats.cache_hits == len(LRS) - 2
    # The second plan is the one every later value uses: lr is an input of it, in the
    # dtype every use casts it to (rounded by the caller as eager mode rounds it).
    short = "f32" if dtype is ng.float32 else "f64"
    assert f"lr:{short}[]{{weak}}" in str(step.trace(w, x, 0.125))
    assert "lr" in step.source(w, x, 0.125)
    assert step.stats.traces == 2


def test_the_first_values_plan_is_dropped_once_the_float_is_traced():
    # Every later value, the first included, runs the traced plan, so the plan that held
    # the first value as a constant is unreachable: kept, it would only hold memory.
    step = ng.jit(_sgd_step)
    w, x = ng.ones(4), ng.full((4,), 0.5)
    step(w, x, LRS[0])
    assert len(step._plans) == 1
    for lr in LRS[1:4]:
        step(w, x, lr)
    assert len(step._plans) == 1 and step.stats.traces == 2
    (plan,) = step._plans.values()
    assert plan.weak == {2}
    step(w, x, LRS[0])   # the first value again: the traced plan, no new trace
    assert step.stats.traces == 2 and len(step._plans) == 1


def test_the_fast_path_keeps_a_traced_float_positional():
    step = ng.jit(_sgd_step)
    w, x = ng.ones(4), ng.full((4,), 0.5)
    for lr in LRS[:5]:
        step(w, x, lr)
    assert step._plans.fast_dynamic == {3: frozenset({2})}
    assert any(k[3] == ("float", "traced") for k in step._fast)
    hits = step.stats.cache_hits
    step(w, x, 0.01)
    assert step.stats.cache_hits == hits + 1 and step.stats.traces == 2


def test_python_arithmetic_on_the_float_stays_traced():
    def f(x, lr):
        scale = lr * 2 + 1 - lr / 4 - abs(-lr)
        return ng.where(x > lr, x * scale, -x * lr)

    jf = ng.jit(f)
    x = ng.tensor([0.1, 0.4, 0.9, -2.0], dtype=ng.float32)
    for lr in (0.3, 0.35, 0.7, 1.0 / 3.0, 2.5):
        _same(jf(x, lr), f(x, lr))
    assert jf.stats.traces == 2


# ------------------------------------------------------------------ promotion
def _promotion_cases():
    xs = {
        "f32": ng.tensor([1.5, -0.1, 3.0e-3, 7.0], dtype=ng.float32),
        "f64": ng.tensor([1.5, -0.1, 3.0e-3, 7.0], dtype=ng.float64),
        "f32_0d": ng.tensor(0.1, dtype=ng.float32),
        "f64_0d": ng.tensor(0.1, dtype=ng.float64),
        "i64": ng.tensor([1, -2, 3, 40], dtype=ng.int64),
        "bool": ng.tensor([True, False, True, True]),
    }
    fns = {
        "x * lr": lambda x, lr: x * lr,
        "lr - x": lambda x, lr: lr - x,
        "x / lr": lambda x, lr: x / lr,
        "lr * 3 * x": lambda x, lr: (lr * 3) * x,
        "x + lr / 7": lambda x, lr: x + lr / 7,
        "x > lr": lambda x, lr: x > lr,
    }
    out = []
    for xn, x in xs.items():
        for fnn, fn in fns.items():
            if xn == "bool" and fnn in ("lr - x", "x / lr", "x + lr / 7", "x > lr"):
                continue
            out.append(pytest.param(x, fn, id=f"{fnn}[{xn}]"))
    return out


@pytest.mark.parametrize("x,fn", _promotion_cases())
def test_a_traced_float_promotes_as_a_python_number(x, fn):
    torch = pytest.importorskip("torch")
    jf = ng.jit(fn, backend="numpy")   # promotion is decided while tracing
    tx = torch.from_numpy(x.numpy().copy())
    for lr in (0.1, 0.3, 1.0 / 3.0):
        got, want = jf(x, lr), fn(x, lr)
        _same(got, want)
        t = fn(tx, lr)
        assert got.dtype.name == str(t.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), t.numpy())
    assert jf.stats.traces == 2 and jf._plans.dynamic


def test_ops_on_numbers_and_tensors_promote_as_eager_does():
    def f(x, m, lr):
        a = ng.where(x > 0, x, lr)
        b = ng.maximum(x, lr) + x.masked_fill(m, lr)
        c = x.clone()
        c[1:3] = lr
        return a, b, c

    jf = ng.jit(f)
    x = ng.tensor([0.5, -1.0, 2.0, -0.25], dtype=ng.float32)
    m = ng.tensor([True, False, False, True])
    for lr in (0.1, 0.7, -0.0, 1e-40):
        _same(jf(x, m, lr), f(x, m, lr))
    assert jf.stats.traces == 2


@pytest.mark.parametrize("dtype", [ng.float32, ng.float64])
def test_special_values_of_the_float(dtype):
    def f(x, s):
        return x * s + s, x / s, x + s * 2, x > s

    jf = ng.jit(f)
    x = ng.tensor([1.5, -2.0, 0.0, 3.0e-3, 7.0], dtype=dtype)
    for s in (0.25, -0.0, 0.0, math.inf, -math.inf, math.nan, 1e300, -1e-300, 5e-324):
        with np.errstate(all="ignore"):
            _same(jf(x, s), f(x, s))
    assert jf.stats.traces == 2


# ------------------------------------------------------------------ what stays constant
def _branchy(x, delta):
    if delta > 1:
        return x * delta
    return x - delta


def _needs_exp(x, lr):
    return x * math.exp(lr)


def _formats(x, lr):
    return x * len(f"{lr:.3f}")


def _needs_int(x, lr):
    return x * int(lr * 10)


def _pow(x, lr):
    return x ** lr + lr ** 2


def _clamped(x, lo):
    return x.clamp(min=lo)


@pytest.mark.parametrize("fn", [_branchy, _needs_exp, _formats, _needs_int, _pow, _clamped])
def test_a_float_the_function_needs_as_a_number_stays_constant(fn, recwarn, capsys):
    jf = ng.jit(fn, verbose=True)
    x = ng.tensor([0.5, -1.0, 2.0, 0.125], dtype=ng.float32)
    values = (0.5, 1.5, 2.5, 0.25, 1.5)
    for v in values:
        _same(jf(x, v), fn(x, v))
    assert not jf._plans.dynamic
    # One trace per value, and the one as a value that failed.
    assert jf.stats.traces == len(set(values)) + 1
    assert "keeping the float argument(s)" in capsys.readouterr().out
    assert not [w for w in recwarn if "traced" in str(w.message)]


def test_a_call_that_fails_for_another_reason_leaves_the_float_traced():
    def f(x, y, lr):
        return x * lr + y

    jf = ng.jit(f, backend="numpy")
    x, y = ng.ones(3), ng.full((3,), 0.5)
    for lr in (0.1, 0.2):
        _same(jf(x, y, lr), f(x, y, lr))
    assert jf.stats.traces == 2 and jf._plans.dynamic
    for lr in (0.2, 0.3):   # a shape mistake: raised as eagerly, whatever lr is
        with pytest.raises(RuntimeError, match="must match the size"):
            jf(x, ng.ones(4), lr)
    assert jf._plans.dynamic
    traces = jf.stats.traces
    for lr in (0.4, 0.5, 0.6):   # the plan that traces lr still serves every value
        _same(jf(x, y, lr), f(x, y, lr))
    assert jf.stats.traces == traces


def test_huber_delta_is_traced():
    def huber(x, y, delta):
        a = (x - y).abs()
        return ng.where(a < delta, 0.5 * a * a, delta * (a - 0.5 * delta)).sum()

    jf = ng.jit(ng.value_and_grad(huber))
    x = ng.tensor([0.5, -1.0, 2.0, 0.125, 4.0], dtype=ng.float64)
    y = ng.zeros(5, dtype=ng.float64)
    for delta in (1.0, 0.75, 1.5, 3.0):
        (v, g), (ve, ge) = jf(x, y, delta), ng.value_and_grad(huber)(x, y, delta)
        _same(g, ge)
        _sum_close(v, ve)
    assert jf.stats.traces == 2


def test_ints_bools_strings_and_none_stay_constants():
    def f(x, n, flag, how, extra):
        y = x * n if flag else x - n
        return (y.sum() if how == "sum" else y.mean()) if extra is None else y

    jf = ng.jit(f, backend="numpy")
    x = ng.tensor([1.0, 2.0, 3.0])
    calls = [(1, True, "sum", None), (2, True, "sum", None), (3, True, "sum", None),
             (3, False, "sum", None), (3, False, "mean", None), (3, False, "mean", 1)]
    for c in calls:
        _same(jf(x, *c), f(x, *c))
    assert jf.stats.traces == len(calls) and not jf._plans.dynamic


def test_value_and_grad_wrt_a_float_keeps_it_a_constant():
    def g(x, s):
        return (x * s * s).sum()

    vg = ng.jit(ng.value_and_grad(g, argnums=1))
    x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float32)
    for s in (0.5, 1.5, 2.5):
        got, want = vg(x, s), ng.value_and_grad(g, argnums=1)(x, s)
        _sum_close(got[0], want[0])
        _sum_close(got[1], want[1])
        assert got[1].dtype is ng.float32      # as today: a float32 leaf per value
    assert not vg._plans.dynamic


# ------------------------------------------------------------------ static arguments
def _scaled(x, lr, bias=0.0):
    return x * lr + bias


@pytest.mark.parametrize("opts", [{"static_argnames": "lr"}, {"static_argnames": ("lr",)},
                                  {"static_argnums": 1}, {"static_argnums": (-2,)}])
def test_static_arguments_compile_per_value(opts):
    jf = ng.jit(_scaled, backend="numpy", **opts)
    x = ng.tensor([1.0, 2.0])
    for lr in (0.1, 0.2, 0.3, 0.2):
        _same(jf(x, lr), _scaled(x, lr))
    assert jf.stats.traces == 3 and not jf._plans.dynamic
    # By keyword too: the signature maps the name and the position to each other.
    _same(jf(x, lr=0.4), _scaled(x, 0.4))
    _same(jf(x, lr=0.5), _scaled(x, 0.5))
    assert jf.stats.traces == 5 and not jf._plans.dynamic


def test_static_argnames_as_a_decorator_factory():
    @ng.jit(static_argnames=("bias",), backend="numpy")
    def f(x, lr, bias=0.0):
        return x * lr + bias

    x = ng.tensor([1.0, 2.0])
    for k in range(4):
        _same(f(x, 0.1 * (k + 1), bias=float(k)), _scaled(x, 0.1 * (k + 1), float(k)))
    assert f.stats.traces == 4          # bias: a plan per value; lr traced from the 2nd
    assert f._plans.dynamic and all(len(p) == 1 for p in f._plans.dynamic.values())


def test_static_argument_errors():
    with pytest.raises(TypeError, match="static_argnums must be an int"):
        ng.jit(_scaled, static_argnums="lr")
    with pytest.raises(TypeError, match="static_argnames must be a str"):
        ng.jit(_scaled, static_argnames=[1])
    with pytest.raises(ValueError, match="'rate', which is not a parameter"):
        ng.jit(_scaled, static_argnames="rate")
    jf = ng.jit(_scaled, static_argnames="lr", backend="numpy")
    with pytest.raises(TypeError, match="'lr' is a static argument.*got a Tensor"):
        jf(ng.ones(2), ng.tensor(0.5))


# ------------------------------------------------------------------ structure
def test_floats_inside_containers_and_keywords():
    def f(x, hp, *, scale):
        return x * hp["lr"] + hp["pair"][0] - hp["pair"][1] * x + scale

    jf = ng.jit(f)
    x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float32)
    for k in range(6):
        hp = {"lr": 0.1 * k + 0.05, "pair": [0.5, (k + 1) / 3]}
        _same(jf(x, hp, scale=-0.25 * k), f(x, hp, scale=-0.25 * k))
    assert jf.stats.traces == 2
    assert sorted(next(iter(jf._plans.dynamic.values()))) == [1, 3, 4]  # "pair"[0] fixed


def test_numpy_float64_varies_like_a_python_float():
    jf = ng.jit(lambda x, s: x * s)
    x = ng.tensor([0.5, -1.0], dtype=ng.float32)
    for s in np.linspace(0.1, 0.9, 5):
        _same(jf(x, s), x * s)
    assert jf.stats.traces == 2


# ------------------------------------------------------------------ guards, autograd
_SCALE = 0.5


def _reads_global(x):
    return x * _SCALE


def test_a_captured_float_stays_a_guarded_constant():
    global _SCALE
    jf = ng.jit(_reads_global)
    x = ng.tensor([1.0, 2.0], dtype=ng.float32)
    try:
        for s in (0.5, 0.25, -0.0, 3.0):
            _SCALE = s
            _same(jf(x), _reads_global(x))
    finally:
        _SCALE = 0.5
    assert jf.stats.traces == 4 and not jf._plans.dynamic   # a plan per value


def test_gradients_and_double_backward_through_a_traced_float():
    def f(x, lr):
        return (ng.tanh(x) * lr * x).sum()

    jf = ng.jit(f)
    for lr in (0.3, 0.7, 1.1):
        x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float64, requires_grad=True)
        (gx,) = ng.autograd.grad(jf(x, lr), x, create_graph=True)
        gx.sum().backward()
        xe = x.detach().requires_grad_(True)
        (gxe,) = ng.autograd.grad(f(xe, lr), xe, create_graph=True)
        gxe.sum().backward()
        np.testing.assert_allclose(gx.detach().numpy(), gxe.detach().numpy(), rtol=1e-14)
        np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-14)
    assert jf.stats.traces == 2


@pytest.mark.skipif(not ng.cuda.is_available(),
                    reason="neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")
def test_cuda_plans_take_the_float_by_value():
    def f(x, lr):
        return x * lr + lr * 2

    jf = ng.jit(f)
    x = ng.tensor([0.5, -1.0, 2.0, 0.125], dtype=ng.float32).cuda()
    for lr in (0.3, 0.7, -0.0):
        got = jf(x, lr)
        assert got.device == ng.device("cuda", 0)
        _same(got, f(x, lr))
        _same(got, f(x.cpu(), lr))
    plan = list(jf._plans.values())[-1]
    # The float stays a host number: the kernel takes it as a scalar argument.
    assert plan.weak == {1} and plan._scalar_device is None
    (lr,) = [v for v in plan.fwd_graph.inputs if v._ng_weak]
    assert [st[1] for st in plan.fwd.cuda_steps if st[0] == "by_value"] == [{lr}]
    assert jf.stats.traces == 2


_DISK_SCRIPT = r"""
import json
import numgrad as ng

def float_arg_probe(x, lr):
    return x * lr + lr * 2

f = ng.jit(float_arg_probe)
x = ng.tensor([0.5, -1.0, 2.0], dtype=ng.float32)
outs = [f(x, lr).numpy().tolist() for lr in (0.1, 0.2, 0.3, -0.0)]
s = f.stats
print("STATS " + json.dumps({"traces": s.traces, "compiles": s.compiles,
                             "disk_hits": s.disk_hits, "outs": outs}))
"""


def test_the_traced_float_plan_loads_from_the_disk_cache(tmp_path):
    import json
    import os
    import subprocess
    import sys
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _DISK_SCRIPT], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("STATS "))
        runs.append(json.loads(line.split(" ", 1)[1]))
    first, second = runs
    assert first["traces"] == second["traces"] == 2
    assert first["disk_hits"] == 0 and second["disk_hits"] == 2   # both plans' kernels
    x = np.array([0.5, -1.0, 2.0], np.float32)
    for lr, got in zip((0.1, 0.2, 0.3, -0.0), second["outs"]):
        want = x * np.float32(lr) + np.float32(lr * 2)
        assert np.array(got, np.float32).tobytes() == want.tobytes()


def test_numbers_alone_promote_as_python_or_as_eager_functions_do():
    def f(x, m, lr):
        a = ng.where(m, lr, 0.0)           # a function of numbers: the default float dtype
        b = (lr > 0.5) * 0.1               # Python: True * 0.1 is a float64 number
        c = (lr > 0.5) * 3                 # Python: an int
        return x * a, x * b, x * c, a

    jf = ng.jit(f)
    m = ng.tensor([True, False, True])
    for dtype in (ng.float32, ng.float64):
        x = ng.tensor([0.5, -1.0, 3.0], dtype=dtype)
        for lr in (0.1, 0.7, 1.0 / 3.0):
            _same(jf(x, m, lr), f(x, m, lr))
    assert jf.stats.traces == 3   # float64 x: lr is a value from its first call already


def test_arithmetic_on_comparisons_of_the_float_counts_as_python_does():
    def f(x, m, lr):
        n = (lr > 0.5) + (lr > 0.2)       # Python: bool + bool is an int (2, not True)
        p = (lr > 0.5) * (lr > 0.2)       # an int too: a bool tensor times it is int64
        return x * n, m * p, m * (lr > 0.5)

    jf = ng.jit(f, backend="numpy")       # promotion is decided while tracing
    x = ng.tensor([0.5, -1.0, 3.0], dtype=ng.float32)
    m = ng.tensor([True, False, True])
    for lr in (0.7, 0.8, 0.3, 0.1):
        _same(jf(x, m, lr), f(x, m, lr))
    assert jf.stats.traces == 2 and jf._plans.dynamic


@pytest.mark.parametrize("dtype", [ng.float32, ng.float64])
def test_the_traced_plan_gives_the_constant_plans_bits(dtype):
    # Transcendentals (vector math) differ from NumPy's in the last places: here the
    # reference is the plan with lr a constant, through the habit path's joint program.
    # The gradients are elementwise: the same bits; the value is a sum: close.
    def loss(x, lr):
        return (ng.tanh(x * lr) * ng.exp(-lr * x) + x * lr).sum()

    traced, constant = ng.jit(loss), ng.jit(loss, static_argnames="lr")
    for lr in (0.1, 0.7, -1.5, 2.0, 1e-3):
        x = ng.linspace(-2.0, 3.0, 7, dtype=dtype).requires_grad_(True)
        xc = x.detach().requires_grad_(True)
        v, vc = traced(x, lr), constant(xc, lr)
        v.backward()
        vc.backward()
        _same(x.grad, xc.grad)
        _sum_close(v, vc)
    assert traced.stats.traces == 2 and constant.stats.traces == 5

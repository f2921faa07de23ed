"""The Numba CPU emitter against eager numgrad, on one "kitchen sink" function.

Each distinct kernel costs Numba seconds to compile, so one function exercises every
scalar template, broadcasting on either side, partial reductions over leading, inner
and several dims (with and without keepdim), full reductions fused into loops, matmul
with fused prologue/epilogue, and layout ops between stages. Its forward values and
its gradients (through the compiled backward) must match eager mode, which is itself
checked against PyTorch by the op-table tests.
"""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng
import numgrad.nn.functional as F


def sink(a, b, c, w):
    # a: (3, 4), b: (4,), c: (3, 1), w: (4, 5)
    e1 = ng.exp(a * 0.3) + ng.log(ng.abs(b) + 1.0) - ng.sqrt(c * c + 0.5)
    e2 = ng.sin(a) * ng.cos(b) + ng.tanh(a - c) * ng.sigmoid(b)
    e3 = ng.where(a > c, ng.relu(a), ng.maximum(a, b) - ng.minimum(c, b))
    e4 = (a ** 2 + a ** 3 * 0.1 + (ng.abs(a) + 0.1) ** 0.5 + ng.clamp(a, -0.5, 0.5)) / (1.5 + c)
    e5 = ng.abs(a) ** b.abs()
    s0 = e1.sum(0)                      # leading dim
    s1 = e2.sum(1, keepdim=True)        # inner dim, keepdim
    s2 = e3.mean((0, 1))                # all dims via a tuple
    m1 = e4.amax(1)                     # partial max
    m0 = e5.amin(0, keepdim=True)       # partial min
    mm = F.relu(e1 @ w + 0.1)           # matmul with fused epilogue
    sm = F.log_softmax(mm, 1)           # reductions feeding elementwise feeding reductions
    t = (e2.t() * 2.0).reshape(2, 6)    # layout between stages
    total = (s0.sum() + s1.sum() + s2 + m1.sum() + m0.sum() + sm.sum() + t.sum()
             + e5.sum())
    return total, (s0, s1, s2, m1, m0, sm, t)


_rng = np.random.default_rng(7)
_INPUTS = {"a": _rng.standard_normal((3, 4)), "b": _rng.standard_normal(4),
           "c": _rng.standard_normal((3, 1)), "w": _rng.standard_normal((4, 5))}
SINK = {dt: ng.jit(sink) for dt in ("float64", "float32")}


def _inputs(dtype):
    return [ng.tensor(_INPUTS[k].astype(dtype), requires_grad=True) for k in "abcw"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kitchen_sink_matches_eager(dtype):
    tol = 1e-10 if dtype == "float64" else 2e-4
    ins_c, ins_e = _inputs(dtype), _inputs(dtype)
    total_c, parts_c = SINK[dtype](*ins_c)
    total_e, parts_e = sink(*ins_e)
    assert total_c.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(total_c.item(), total_e.item(), rtol=tol, atol=tol)
    for pc, pe in zip(parts_c, parts_e):
        assert pc.shape == pe.shape and pc.dtype is pe.dtype
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=tol, atol=tol)
    total_c.backward()
    total_e.backward()
    for xc, xe in zip(ins_c, ins_e):
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    assert SINK[dtype].stats.kernels >= 2  # really compiled, not interpreted


def test_kitchen_sink_source_is_fused():
    src = SINK["float64"].source(*_inputs("float64"))
    # matmul is NumPy's BLAS between fused stages: code before and after it is compiled.
    assert "np.dot(" not in src and src.count("@njit(") >= 2
    # Far fewer loops than equations: elementwise chains share loops.
    graph = SINK["float64"].trace(*_inputs("float64"))
    assert src.count("for i") < len(graph.eqns) / 2


def long_chain(x):
    for _ in range(40):  # ~120 fused statements: over PARALLEL_INLINE_MAX_BODY
        x = ng.tanh(x) * 1.01 + 0.01
    return x.sum()


@pytest.mark.parametrize("n", [4096, 4099, 4033])  # chunks of 64; of 65 (odd); last of 1
def test_long_parallel_loop_runs_in_chunks_and_matches_eager(n, monkeypatch):
    """A long body runs as a chunk function with two interleaved element streams; odd
    chunks compute one element twice and must still count it once in the sum. (The
    Numba chunk function: llvm_body, which renders such bodies by default, is off here;
    tests/compiler/backends/cpu/llvm/test_body.py covers it.)"""
    from numgrad.compiler import schedule
    monkeypatch.setenv("NUMGRAD_LLVM_BODY", "0")
    rng = np.random.default_rng(3)
    data = rng.standard_normal(n)
    f = ng.jit(long_chain)
    xc = ng.tensor(data, requires_grad=True)
    xe = ng.tensor(data, requires_grad=True)
    rc, re_ = f(xc), long_chain(xe)
    src = f.source(xc)
    assert schedule.PARALLEL_INLINE_MAX_BODY < 120
    assert "prange(" in src and "_g0(lo, m" in src  # the body went into a chunk function
    assert "b1_" in src and "if j >= d1" in src  # ... as interleaved streams
    np.testing.assert_allclose(rc.item(), re_.item(), rtol=1e-10)
    rc.backward()
    re_.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-10, atol=1e-12)


def w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()


def _programs(compiled):
    (plan,) = compiled._plans.values()
    return plan.programs


def _run_w2(f, x, y):
    value, (dx, dy) = f(x, y)
    return value.numpy().copy(), dx.numpy().copy(), dy.numpy().copy()


def test_tiered_compile_runs_serial_first_then_prange_with_identical_bits(tmp_path, monkeypatch):
    """parallel="auto" on a cold cache: call 1 runs the kernels compiled with
    parallel=False, call 2 compiles the prange tier. Chunked reductions make every tier
    and every thread count give the same bits. (Numba's tiers: llvm.kernel off; its
    own are tested in test_llvm_kernel.py.)"""
    import numba

    torch = pytest.importorskip("torch")
    monkeypatch.setenv("NUMGRAD_LLVM_KERNEL", "0")
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(7)
    xs, ys = rng.standard_normal(6000), rng.standard_normal(6000)
    f = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)))
    x, y = ng.tensor(xs), ng.tensor(ys)
    first = _run_w2(f, x, y)
    (prog,) = _programs(f)
    assert prog.tier == "serial"
    assert "parallel=False" in open(prog.module.__file__).read()
    second = _run_w2(f, x, y)
    assert prog.tier == "final" and "prange(" in f.source(x, y)
    assert "parallel=True" in open(prog.module.__file__).read()
    saved = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one_thread = _run_w2(f, x, y)
    finally:
        numba.set_num_threads(saved)
    for a, b, c in zip(first, second, one_thread):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    tx = torch.tensor(xs, requires_grad=True)
    ty = torch.tensor(ys, requires_grad=True)
    out = (torch.tanh(tx * ty + torch.sin(tx)) * torch.exp(-ty * ty)).sum()
    out.backward()
    np.testing.assert_allclose(first[0], out.item(), rtol=1e-12)
    np.testing.assert_allclose(first[1], tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(first[2], ty.grad.numpy(), rtol=1e-12, atol=1e-14)
    # A loop without a full reduction and few transcendentals runs flat under prange:
    # the same code per element.
    xl, yl = ng.tensor(rng.standard_normal(20000)), ng.tensor(rng.standard_normal(20000))
    ew = ng.jit(lambda a, b: ng.tanh(a * b) + a * b - b)
    ew_first = ew(xl, yl).numpy().copy()
    assert _programs(ew)[0].tier == "serial"
    assert np.array_equal(ew(xl, yl).numpy(), ew_first) and _programs(ew)[0].tier == "final"
    assert "prange(20000)" in ew.source(xl, yl)
    # With INTERLEAVE_MIN_HEAVY_WEIGHT set, a short loop with several transcendentals runs
    # in chunks as two interleaved streams: the same bits in both tiers and on one thread.
    from numgrad.compiler import schedule
    monkeypatch.setattr(schedule, "INTERLEAVE_MIN_HEAVY_WEIGHT", 16)
    ew = ng.jit(lambda a, b: ng.tanh(a * b) + ng.sin(a) * ng.exp(-b))
    ew_first = ew(x, y).numpy().copy()
    assert _programs(ew)[0].tier == "serial"
    assert np.array_equal(ew(x, y).numpy(), ew_first) and _programs(ew)[0].tier == "final"
    src = ew.source(x, y)  # the streams: Numba's interleaved chunk, or an llvm_body one
    assert "prange(6000)" not in src and ("_s1[j]" in src or "chunk_kernel(" in src)
    try:
        numba.set_num_threads(1)
        assert np.array_equal(ew(x, y).numpy(), ew_first)
    finally:
        numba.set_num_threads(saved)
    ref = torch.tanh(torch.tensor(xs) * torch.tensor(ys)) + torch.sin(
        torch.tensor(xs)) * torch.exp(-torch.tensor(ys))
    np.testing.assert_allclose(ew_first, ref.numpy(), rtol=1e-13, atol=1e-15)
    # A new plan for the same source (another process, or after a retrace) finds the
    # prange tier built and loads it at once.
    g = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)))
    assert np.array_equal(_run_w2(g, x, y)[1], first[1])
    assert _programs(g)[0].tier == "final"


def test_parallel_option_true_and_false_skip_the_tiers(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(tmp_path))
    x = ng.tensor(np.linspace(-2, 2, 6000))
    y = ng.tensor(np.linspace(1, -1, 6000))
    eager = w2(x, y).item()
    for parallel, has_prange in ((True, True), (False, False)):
        f = ng.jit(w2, parallel=parallel)
        assert f(x, y).item() == pytest.approx(eager, rel=1e-12)
        (prog,) = _programs(f)
        assert prog.tier == "final"
        assert ("prange(" in f.source(x, y)) == has_prange


def test_detached_inputs_are_not_copied_by_kernels():
    """value_and_grad detaches its inputs; the IR says so, but the kernels read the input
    arrays themselves instead of copying them for the matmul (detach is the identity)."""
    f = ng.jit(ng.value_and_grad(lambda w, x: ng.tanh(x @ w).sum(), argnums=0))
    w = ng.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    x = ng.tensor(np.linspace(0, 2, 8).reshape(2, 4))
    value, grad = f(w, x)
    we = ng.tensor(w.numpy(), requires_grad=True)
    out = ng.tanh(x @ we).sum()
    out.backward()
    np.testing.assert_allclose(value.item(), out.item(), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), we.grad.numpy(), rtol=1e-12)
    graph = f.trace(w, x)
    src = f.source(w, x)
    detached = [v for v in graph.inputs if f"= detach {v.name}  {{detach}}" in str(graph)]
    assert detached
    for v in detached:
        assert f"= detach {v.name} " not in src


def test_sin_and_cos_of_one_argument_use_the_paired_inlined_bodies():
    """A forward sin and its backward cos in one loop call the always-inlined bodies
    (LLVM then shares their work); they compute exactly what sin and cos compute."""
    from numba import njit
    from numgrad.compiler.backends.cpu.scalar_vec import cos, cos_paired, sin, sin_paired

    f = ng.jit(ng.value_and_grad(lambda x: (ng.sin(x) * x).sum()))
    data = np.linspace(-7.0, 7.0, 101)
    value, grad = f(ng.tensor(data))
    src = f.source(ng.tensor(data))
    assert "sin_paired(" in src and "cos_paired(" in src
    np.testing.assert_allclose(value.item(), (np.sin(data) * data).sum(), rtol=1e-13)
    np.testing.assert_allclose(grad.numpy(), np.cos(data) * data + np.sin(data),
                               rtol=1e-13, atol=1e-14)

    @njit(cache=False)
    def both(a, out):
        for i in range(a.size):
            out[0, i] = sin(a[i])
            out[1, i] = cos(a[i])
            out[2, i] = sin_paired(a[i])
            out[3, i] = cos_paired(a[i])

    a = np.concatenate([np.linspace(-1e4, 1e4, 4001), [0.0, -0.0, 1e300, np.inf, np.nan]])
    out = np.empty((4, a.size))
    both(a, out)
    assert np.array_equal(out[0], out[2], equal_nan=True)
    assert np.array_equal(out[1], out[3], equal_nan=True)


def test_a_failing_prange_tier_keeps_the_serial_kernels(tmp_path, monkeypatch):
    from numgrad.compiler.backends.cpu import cache
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(tmp_path))
    real = cache.load_module

    def refuse_prange(source, verbose=False, use_disk=True):
        if "parallel=True" in source:
            raise RuntimeError("simulated parfors failure")
        return real(source, verbose=verbose, use_disk=use_disk)

    monkeypatch.setattr(cache, "load_module", refuse_prange)
    x = ng.tensor(np.linspace(-2, 2, 20000))
    y = ng.tensor(np.linspace(1, -1, 20000))
    # One transcendental: a loop with two would be an llvm_body one, with no prange tier.
    f = ng.jit(lambda a, b: (ng.tanh(a * b) + b * b).sum())
    first = f(x, y).item()
    with pytest.warns(RuntimeWarning, match="simulated parfors failure"):
        second = f(x, y).item()
    assert first == second
    assert first == pytest.approx((np.tanh(x.numpy() * y.numpy()) + y.numpy() ** 2).sum(),
                                  rel=1e-12)
    (prog,) = _programs(f)
    assert prog.tier == "final" and "parallel=False" in open(prog.module.__file__).read()


def test_kernels_beside_blas_need_more_work_before_they_go_parallel():
    """OpenBLAS's spinning workers and Numba's prange workers fight for the cores, so a
    plan that calls matmul keeps its mid-size elementwise kernels serial."""
    from numgrad.compiler import schedule as cpu  # the parallel thresholds live there
    h = ng.tensor(np.linspace(-1, 1, 64 * 2048).reshape(64, 2048))
    b = ng.tensor(np.linspace(0, 1, 2048))
    x = ng.tensor(np.linspace(-1, 1, 64 * 32).reshape(64, 32))
    w = ng.tensor(np.linspace(-1, 1, 32 * 2048).reshape(32, 2048))
    alone = ng.jit(lambda h, b: ng.relu(h + b) * 2.0)
    beside = ng.jit(lambda x, w, b: ng.relu(x @ w + b) * 2.0)
    work = 64 * 2048 * 3
    assert cpu.PARALLEL_MIN_WORK <= work < cpu.PARALLEL_MIN_WORK_BESIDE_BLAS
    np.testing.assert_allclose(alone(h, b).numpy(), np.maximum(h.numpy() + b.numpy(), 0) * 2)
    out = beside(x, w, b).numpy()
    np.testing.assert_allclose(out, np.maximum(x.numpy() @ w.numpy() + b.numpy(), 0) * 2,
                               rtol=1e-12)
    assert "prange(" in alone.source(h, b)
    assert "prange(" not in beside.source(x, w, b)


def test_a_value_computed_from_a_sum_does_not_split_the_loop():
    """In a Hessian-vector product the forward sums and the backward elementwise work
    share one loop: the value made from the sums is emitted after it, so no
    intermediate array is written and read back."""
    torch = pytest.importorskip("torch")
    n = 64

    def gv(x, y, vx, vy):
        gx, gy = ng.autograd.grad(w2(x, y), (x, y), create_graph=True)
        return (gx * vx).sum() + (gy * vy).sum()

    f = ng.jit(ng.value_and_grad(gv, argnums=(0, 1)))
    rng = np.random.default_rng(11)
    data = [rng.standard_normal(n) for _ in range(4)]
    value, (hx, hy) = f(*[ng.tensor(a) for a in data])
    src = f.source(*[ng.tensor(a) for a in data])
    assert src.count(f"alloc(({n},)") == 2  # the two outputs, no temporaries

    tx, ty = (torch.tensor(a, requires_grad=True) for a in data[:2])
    tvx, tvy = (torch.tensor(a) for a in data[2:])
    out = (torch.tanh(tx * ty + torch.sin(tx)) * torch.exp(-ty * ty)).sum()
    gx, gy = torch.autograd.grad(out, (tx, ty), create_graph=True)
    s = (gx * tvx).sum() + (gy * tvy).sum()
    ex, ey = torch.autograd.grad(s, (tx, ty))
    np.testing.assert_allclose(value.item(), s.item(), rtol=1e-12)
    np.testing.assert_allclose(hx.numpy(), ex.numpy(), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(hy.numpy(), ey.numpy(), rtol=1e-11, atol=1e-13)


def _tanh_chain_rows(lib, x, w):
    h = x
    for _ in range(10):
        h = lib.tanh(h * w + 0.1)
    return (h * h).sum(dim=1)


def test_long_two_dimensional_parallel_body_with_a_row_sum_matches_torch():
    """A body over 24 statements on a 2-D iteration space, reducing along dim 1: a
    chunk function with nested loops (noalias arguments, not interleaved)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    xs, ws = rng.standard_normal((2048, 64)), rng.standard_normal(64)
    f = ng.jit(lambda x, w: _tanh_chain_rows(ng, x, w))
    x, w = ng.tensor(xs, requires_grad=True), ng.tensor(ws, requires_grad=True)
    out = f(x, w)
    assert "noalias_args()" in f.source(x, w) and "prange(" in f.source(x, w)
    seed = rng.standard_normal(2048)
    out.backward(ng.tensor(seed))
    tx, tw = torch.tensor(xs, requires_grad=True), torch.tensor(ws, requires_grad=True)
    tout = _tanh_chain_rows(torch, tx, tw)
    tout.backward(torch.tensor(seed))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("out_dtype,grad_dtype", [("float64", "float32"),
                                                  ("float32", "float64")])
def test_backward_with_a_gradient_of_another_float_dtype(out_dtype, grad_dtype):
    """torch casts backward(gradient) to the output's dtype; the compiled backward too
    (its kernels take exactly the dtypes they were compiled for)."""
    torch = pytest.importorskip("torch")
    data = np.linspace(-1, 1, 6).astype(out_dtype)
    seed = np.linspace(2, 3, 6).astype(grad_dtype)
    f = ng.jit(lambda x: ng.tanh(x) * 3.0)
    x = ng.tensor(data, requires_grad=True)
    f(x).backward(ng.tensor(seed))
    tx = torch.tensor(data, requires_grad=True)
    (torch.tanh(tx) * 3.0).backward(torch.tensor(seed))
    assert x.grad.dtype == ng.float64 if out_dtype == "float64" else x.grad.dtype == ng.float32
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_first_calls_from_several_threads_build_one_plan(tmp_path, monkeypatch):
    """Threads calling a new jitted function together get one trace and one compile,
    never a half-imported kernel module, and (tiers included) the same bits."""
    from concurrent.futures import ThreadPoolExecutor
    monkeypatch.setenv("NUMGRAD_CACHE_DIR", str(tmp_path))
    f = ng.jit(ng.value_and_grad(w2, argnums=(0, 1)))
    x = ng.tensor(np.linspace(-1, 1, 20000))
    y = ng.tensor(np.linspace(1, -1, 20000))

    def call(_):
        return _run_w2(f, x, y)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(call, range(12)))
    assert f.stats.traces == 1 and f.stats.compiles == 1
    for r in results[1:]:
        for a, b in zip(r, results[0]):
            assert np.array_equal(a, b)
    np.testing.assert_allclose(results[0][0], w2(x, y).item(), rtol=1e-12)


def test_a_read_only_array_captured_as_a_constant():
    """Kernels take writeable C arrays; a read-only constant (a closed-over tensor on a
    read-only NumPy array, or the engine's cached ones) is copied once, not refused."""
    arr = np.linspace(0, 1, 12).reshape(3, 4)
    arr.flags.writeable = False
    c = ng.from_numpy(arr)
    f = ng.jit(lambda x: (ng.tanh(x) * c).sum())
    data = np.linspace(-1, 1, 12).reshape(3, 4)
    x = ng.tensor(data, requires_grad=True)
    out = f(x)
    out.backward()
    np.testing.assert_allclose(out.item(), (np.tanh(data) * arr).sum(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), (1 - np.tanh(data) ** 2) * arr, rtol=1e-12)
    assert not arr.flags.writeable  # the user's array is untouched

"""The CUDA test matrix: functions run through ``@ng.jit`` on CUDA tensors (Numba's
simulator here) and on the CPU, whose values and gradients must agree.

Shapes are small: the simulator runs every GPU thread as a Python thread. Each case is
run once per process (``result``) and its outcome kept, so the PTX test can compile every
kernel the matrix rendered without running the simulator again.
"""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

F = ng.nn.functional


def _w2(x, y):
    return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()


def _w4(x, steps=8):
    for i in range(steps):
        x = ng.sin(x) * 1.01 + 0.1 * x if i % 2 == 0 else ng.tanh(x)
    return x.sum()


def w4_full(x):
    """W4 as benchmarked: 100 steps (rendered for the PTX test, too long for the simulator)."""
    return _w4(x, 100)


def _mlp(w1, b1, w2, b2, x, t):
    h = F.relu(F.linear(x, w1, b1))
    return F.nll_loss(F.log_softmax(F.linear(h, w2, b2), dim=1), t)


def w3_full(dtype):
    """W3's inputs as benchmarked (MLP 784-512-10, batch 256), uninitialised, on the device:
    for rendering its kernels, not running them."""
    shapes = [(512, 784), (512,), (10, 512), (10,), (256, 784)]
    return [ng.empty(s, dtype=dtype, device="cuda", requires_grad=i < 4)
            for i, s in enumerate(shapes)] + [ng.zeros(256, dtype=ng.int64, device="cuda")]


def big_product(a, b):
    """A product big enough for the matmul kernel's large blocking, both sides transposed."""
    return (a.T @ b.T).sum()


def _broadcast(x, b):
    return ((x - b) ** 2).mean(dim=0) * x.amax()


def _partial(x):
    return x.sum(dim=1).sigmoid().sum() + x.amin(dim=0, keepdim=True).mean() + x.var(dim=1).sum()


def _softmax(x):
    return (F.softmax(x, dim=-1) * ng.arange(4, dtype=x.dtype)).sum()


def _where_clamp(x, y):
    m = x > y
    z = ng.where(m, x.clamp(-0.5, 0.7), y.relu()) + x.abs() ** 1.5 + (x * y).pow(3)
    return z.sum() + m.sum().to(x.dtype)


def _layout(x, y):
    z = (x.t() @ y).reshape(-1)   # (4,3)@(3,5) -> 20
    return (z[3:15:2] * 2.0).sum() + ng.cat([x.flatten(), y.flatten()]).std()


def _batched(a, b):
    return (a @ b).tanh().sum() + (a[0] @ b[1][:, 0]).sum()


def _ints(x, k):
    j = (k * 3 - 2) % 5 + k.pow(2)
    return (x * j.to(x.dtype)).sum() + (j > 3).sum().to(x.dtype) + j.max().to(x.dtype)


def _special(x):
    return (ng.erf(x) + ng.log1p(x.abs()) + ng.expm1(x * 0.5) + ng.fmod(x, 0.3)
            + ng.remainder(x, 0.7) + x.sign() + ng.hypot(x, x * 0.5 - 1)).sum()


def _multi_out(x, y):
    s = x * y
    return s.sigmoid(), (s - x).sum()


def generic_case(x, w, b):
    """A matmul, a broadcast, partial and full reductions, a mean, a transpose and a slice:
    what a shape-generic plan must read its extents for (tests/compiler/backends/cuda/
    test_cuda_shape_generic.py runs it at several shapes)."""
    h = ng.tanh(x @ w + b)
    rows = h.sum(dim=1)
    t = x.t()[1:, :]
    return (rows * rows).mean() + (t * t).sum() + h.amax() + h.mean(dim=0).sum()


# (x, w, b) shapes of generic_case: one set of ranks, no two extents alike within a shape.
GENERIC_SHAPES = [((3, 4), (4, 5), (5,)), ((5, 6), (6, 2), (2,)), ((2, 7), (7, 3), (3,))]


def generic_args(shapes, device, seed=0):
    rng = np.random.default_rng(seed)
    return [ng.tensor(rng.uniform(-1.5, 1.5, s), device=device, requires_grad=True)
            for s in shapes]


def render_generic(fn, first, second):
    """The kernels of ``ng.jit(fn)``'s shape-generic plan: rendered for ``second`` after a
    first plan for ``first`` (tensors of the same ranks), not launched."""
    log = rendered_log()
    f = ng.jit(fn)
    f._plan(tuple(first), {})
    before = set(log)
    f._plan(tuple(second), {})
    return [k for key, k in log.items() if key not in before]


def _data(shape, seed, lo=-1.5, hi=1.5, dtype=np.float64):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


# name -> (function, [arrays], indices of arguments that require grad)
CASES = {
    "w2": (_w2, [_data(37, 1), _data(37, 2)], (0, 1)),
    "w2_f32": (_w2, [_data(37, 1, dtype=np.float32), _data(37, 2, dtype=np.float32)], (0, 1)),
    "w4": (_w4, [_data(29, 3)], (0,)),
    "mlp": (_mlp, [_data((6, 5), 4) / 3, _data(6, 5) / 10, _data((3, 6), 6) / 3,
                   _data(3, 7) / 10, _data((4, 5), 8),
                   np.array([0, 2, 1, 2], np.int64)], (0, 1, 2, 3)),
    "broadcast": (_broadcast, [_data((3, 4), 9), _data(4, 10)], (0, 1)),
    "partial_reductions": (_partial, [_data((3, 5), 11)], (0,)),
    "softmax": (_softmax, [_data((3, 4), 12)], (0,)),
    "where_clamp": (_where_clamp, [_data(11, 13), _data(11, 14)], (0, 1)),
    "layout": (_layout, [_data((3, 4), 15), _data((3, 5), 16)], (0, 1)),
    "batched_matmul": (_batched, [_data((2, 3, 4), 17), _data((2, 4, 3), 18)], (0, 1)),
    "ints": (_ints, [_data(7, 19), np.array([3, -1, 0, 4, 2, 7, 1], np.int64)], (0,)),
    "special": (_special, [_data(9, 20)], (0,)),
    "multi_out": (_multi_out, [_data(6, 21), _data(6, 22)], (0, 1)),
}

JITTED = {name: ng.jit(fn) for name, (fn, _, _) in CASES.items()}
_RESULTS = {}
KERNELS = {}  # (name, source) -> (name, source, signature): what the matrix rendered


def tensors(name, device):
    _, arrays, grads = CASES[name]
    out = []
    for i, a in enumerate(arrays):
        t = ng.tensor(a, device=device)
        if i in grads:
            t.requires_grad_()
        out.append(t)
    return out


def run(fn, args):
    """Outputs and input gradients (of the sum of the float outputs) as NumPy arrays."""
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    total = None
    for o in outs:
        s = o.sum()
        total = s if total is None else total + s
    total.backward()
    host = [o.detach().cpu().numpy() for o in outs]
    grads = [a.grad.cpu().numpy() if a.grad is not None else None for a in args]
    devices = [str(o.device) for o in outs] + [str(a.grad.device) for a in args
                                               if a.grad is not None]
    return host, grads, devices


def result(name):
    """The jitted CUDA run of case ``name`` (once per process)."""
    if name not in _RESULTS:
        log = rendered_log()
        before = set(log)
        _RESULTS[name] = run(JITTED[name], tensors(name, "cuda"))
        for key, kernel in log.items():
            if key not in before:
                KERNELS[key] = kernel
    return _RESULTS[name]


def render_only(fn, *args):
    """The kernels ``ng.jit(fn)`` renders for ``args`` (forward and backward), without
    launching any: kernels compile at their first launch."""
    log = rendered_log()
    before = set(log)
    ng.jit(fn)._plan(args, {})
    return [k for key, k in log.items() if key not in before]


def compile_for_sm90(kernels, tmp_path):
    """The ptx module's report (one dict per kernel) of compiling ``kernels`` for sm_90, in a
    subprocess with the simulator off (it replaces numba.cuda in this one)."""
    import json
    import os
    import subprocess
    import sys
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps(kernels))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-m", "numgrad.compiler.backends.cuda.ptx",
                           str(path)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rendered_log():
    """Every CUDA kernel rendered since the first call (the renderer's log, turned on)."""
    from numgrad.compiler.backends.cuda import renderer
    return renderer.LOG.start()


def run_all():
    for name in CASES:
        result(name)


def require_simulator():
    import numgrad.cuda.device as cuda_device
    if not (cuda_device.simulated() or cuda_device.available()):
        pytest.skip("neither a CUDA device nor Numba's simulator (NUMBA_ENABLE_CUDASIM=1)")


# On from the start: NUMGRAD_PTX_ALL=1 compiles every kernel the session renders.
rendered_log()

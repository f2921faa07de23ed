"""One system's timings for ``bench/gpu_check.py --peers``, in its own process.

    python bench/gpu_peers.py --system numgrad|torch|jax --workload W1|W2|W3|W4|copy \\
        --json OUT.json [--dry-run] [--warm-cache]

Runs the workload's cases on the device for that system (numgrad: ``jit(value_and_grad)``,
jit call + ``.backward()``, eager; torch: eager, ``torch.compile``; JAX: ``jit(value_and_grad)``)
with inputs already on the device, and writes one JSON object: the device's name, the
versions, and per case and variant the first call (cold, compile included) and the median
of synchronised steady calls, with the value computed (the parent checks the systems
agree). ``copy`` measures the device-to-device copy bandwidth instead (numgrad: through
numba-cuda; torch: ``Tensor.copy_``). numgrad's ``jit + .backward()`` runs one fused pass
from its second call (compiler.speculate), so its steady calls should come close to
``jit v&g``. numgrad's results say which matmul path its plans took (``matmul``: cuBLAS
through nvmath-python, or numgrad's kernel, and why); where it was cuBLAS, W3 is also
timed with ``NUMGRAD_CUDA_MATMUL=kernel`` (the fallback).

``--warm-cache`` (numgrad only) times just the first call of each jit variant, in a
process started after another filled numgrad's disk cache (``NUMGRAD_CACHE_DIR``, which
the parent points at a fresh folder): its trace and the load of the verified kernels,
no compile; the rows record ``stats.disk_hits``.

``--dry-run`` proves the plumbing without a GPU: tiny shapes, a couple of calls, numgrad
under Numba's simulator and torch/JAX on the CPU (the parent sets the environment), and
no ``torch.compile`` (half a minute of CPU compiling per case, timing nothing).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from bench.gpu_report import KERNEL_VARIANT, WARM  # noqa: E402

# Case lists: (label, params). W2 sizes as the table: 1e6-1e8 float64, 1e7 float32.
FULL = {
    "W1": [("10 float64", {"n": 10, "dtype": "float64"})],
    "W2": [(f"{lbl} {dt}", {"n": n, "dtype": dt}) for lbl, n, dt in
           (("1e6", 10 ** 6, "float64"), ("1e7", 10 ** 7, "float64"),
            ("1e8", 10 ** 8, "float64"), ("1e7", 10 ** 7, "float32"))],
    "W3": [("B=256 784-512-10 float32", dict(batch=256, d_in=784, hidden=512, classes=10))],
    "W4": [("100 steps, 1000 float64", {"n": 1000, "steps": 100})],
}
DRY = {
    "W1": [("10 float64", {"n": 10, "dtype": "float64"})],
    "W2": [("1e3 float64", {"n": 1000, "dtype": "float64"}),
           ("1e3 float32", {"n": 1000, "dtype": "float32"})],
    "W3": [("B=4 12-8-3 float32", dict(batch=4, d_in=12, hidden=8, classes=3))],
    "W4": [("4 steps, 16 float64", {"n": 16, "steps": 4})],
}
# Variants skipped where they cost more than they tell (eager numgrad makes ~6 passes
# over 800 MB at 1e8).
EAGER_MAX_N = 10 ** 7


def _case_data(workload, params):
    from bench import w3_mlp
    from bench.common import Case
    rng = np.random.default_rng(5)
    if workload == "W1":
        return {"x": np.linspace(-1.0, 1.5, params["n"]).astype(params["dtype"])}
    if workload == "W2":
        n, dt = params["n"], params["dtype"]
        return {"x": rng.standard_normal(n).astype(dt), "y": rng.standard_normal(n).astype(dt)}
    if workload == "W3":
        return w3_mlp.make_data(Case("W3", "", 0, "float32", dict(params)))
    return {"x": rng.standard_normal(params["n"])}


def _w1(lib, x):
    return (x ** 2 + x ** 3).sum()


def _fn(workload, lib, F=None):
    """(f(*args), argnums, names of the inputs in order) for ``lib`` (numgrad/torch/jnp)."""
    from bench import w2_elementwise
    if workload == "W1":
        return (lambda x: _w1(lib, x)), (0,), ("x",)
    if workload == "W2":
        return (lambda x, y: w2_elementwise.f(lib, x, y)), (0, 1), ("x", "y")
    if workload == "W4":
        return None, (0,), ("x",)  # the step count is bound per case
    def loss(W1, b1, W2, b2, X, T):
        h = F.relu(F.linear(X, W1, b1))
        return F.nll_loss(F.log_softmax(F.linear(h, W2, b2), dim=1), T)
    return loss, (0, 1, 2, 3), ("W1", "b1", "W2", "b2", "X", "T")


def _chain(lib, steps):
    from bench import w4_chain
    return lambda x: w4_chain.chain(lib, x, steps)


def timed(step, sync, budget_s, min_n=5, max_n=200):
    """(first call s, median steady call s, calls timed, first call's output)."""
    t0 = time.perf_counter()
    out = step()
    sync()
    first = time.perf_counter() - t0
    step()
    sync()
    ts, start = [], time.perf_counter()
    while len(ts) < max_n and (len(ts) < min_n or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        step()
        sync()
        ts.append(time.perf_counter() - t)
    return first, statistics.median(ts), len(ts), out


# ------------------------------------------------------------------ systems
def numgrad_variants(workload, params, data, warm=False):
    """``(variants, sync, value, jitted)``: ``jitted`` maps a variant to its ``ng.jit``
    function (whose ``stats`` the row records); ``warm``: the jit variants only, named
    with ``WARM``."""
    import numgrad as ng
    F = ng.nn.functional
    fn, argnums, names = _fn(workload, ng, F)
    if workload == "W4":
        fn = _chain(ng, params["steps"])
    dev = [ng.tensor(data[k], device="cuda") for k in names]
    leaves = [ng.tensor(data[k], device="cuda", requires_grad=i in argnums)
              for i, k in enumerate(names)]
    vg = ng.jit(ng.value_and_grad(fn, argnums=argnums if len(argnums) > 1 else argnums[0]))
    jf = ng.jit(fn)

    def backward_with(f):
        def step():
            for i in argnums:
                leaves[i].grad = None
            out = f(*leaves)
            out.backward()
            return out
        return step
    out = {"numgrad jit v&g": lambda: vg(*dev)[0]}
    jitted = {"numgrad jit v&g": vg}
    if workload == "W3" and _cublas_in_use():
        vk = ng.jit(ng.value_and_grad(fn, argnums=argnums))
        out[KERNEL_VARIANT] = _with_kernel_matmul(vk, dev)
        jitted[KERNEL_VARIANT] = vk
    out["numgrad jit + .backward()"] = backward_with(jf)
    jitted["numgrad jit + .backward()"] = jf
    if warm:
        out = {k + WARM: v for k, v in out.items()}
        jitted = {k + WARM: v for k, v in jitted.items()}
    elif params.get("n", 0) <= EAGER_MAX_N:
        out["numgrad eager"] = backward_with(fn)
    return out, ng.cuda.synchronize, lambda v: float(v.item()), jitted


def _cublas_in_use():
    from numgrad import config
    from numgrad.compiler.backends.cuda import blas
    return blas.unavailable() is None and config.get(blas.FLAG) != "kernel"


def _with_kernel_matmul(vg, dev):
    """A step whose plan is rendered (at its first call) with numgrad's matmul kernel: the
    flag is read when a plan is rendered, so it is set around that call only."""
    from numgrad.compiler.backends.cuda import blas
    first = [True]

    def step():
        if not first[0]:
            return vg(*dev)[0]
        first[0] = False
        old = os.environ.get(blas.FLAG)
        os.environ[blas.FLAG] = "kernel"
        try:
            return vg(*dev)[0]
        finally:
            if old is None:
                del os.environ[blas.FLAG]
            else:
                os.environ[blas.FLAG] = old
    return step


def matmul_status():
    """numgrad's matmul path in this process (``backends.cuda.blas.status``)."""
    from numgrad.compiler.backends.cuda import blas
    return blas.status()


def torch_variants(workload, params, data, device):
    import torch
    from bench.common import torch_compile_fresh
    F = torch.nn.functional
    fn, argnums, names = _fn(workload, torch, F)
    if workload == "W4":
        fn = _chain(torch, params["steps"])
    dev = [torch.from_numpy(np.ascontiguousarray(data[k])).to(device) for k in names]
    leaves = [t.clone().requires_grad_(i in argnums) for i, t in enumerate(dev)]

    def eager():
        for i in argnums:
            leaves[i].grad = None
        out = fn(*leaves)
        out.backward()
        return out

    def vg(*xs):
        xs = [x.detach().requires_grad_(True) if i in argnums else x for i, x in enumerate(xs)]
        out = fn(*xs)
        grads = torch.autograd.grad(out, [xs[i] for i in argnums])
        return out.detach(), grads
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    out = {"torch eager": eager}
    # torch.compile: 10-30 s of compiling per case; on the device only, and for W2 at
    # the 1e7 sizes only, so the whole run keeps its deadline.
    if device == "cuda" and (workload != "W2" or params["n"] == 10 ** 7):
        compiled = torch_compile_fresh(vg)
        out["torch.compile"] = lambda: compiled(*dev)[0]
    return out, sync, lambda v: float(v.detach().cpu().item())


def jax_variants(workload, params, data):
    import jax
    import jax.numpy as jnp
    if workload == "W3":
        def F_loss(W1, b1, W2, b2, X, T):
            h = jax.nn.relu(X @ W1.T + b1)
            logp = jax.nn.log_softmax(h @ W2.T + b2, axis=1)
            return -jnp.mean(jnp.take_along_axis(logp, T[:, None], axis=1))
        fn, argnums, names = F_loss, (0, 1, 2, 3), ("W1", "b1", "W2", "b2", "X", "T")
    else:
        fn, argnums, names = _fn(workload, jnp)
        if workload == "W4":
            fn = _chain(jnp, params["steps"])
    g = jax.jit(jax.value_and_grad(fn, argnums=argnums))
    dev = [jax.device_put(data[k]) for k in names]

    def step():
        return jax.block_until_ready(g(*dev))[0]
    return {"jax jit v&g": step}, (lambda: None), lambda v: float(v)


# ------------------------------------------------------------------ copy floor
def copy_bandwidth(system, dry):
    nbytes = (1 << 16) if dry else (1 << 30)
    if system == "numgrad":
        from numba import cuda
        a = cuda.device_array(nbytes // 8, np.float64)
        b = cuda.device_array(nbytes // 8, np.float64)
        _, t, _, _ = timed(lambda: b.copy_to_device(a), cuda.synchronize, 0.3, max_n=20)
    else:
        import torch
        device = "cpu" if dry else "cuda"
        a = torch.empty(nbytes // 8, dtype=torch.float64, device=device)
        b = torch.empty_like(a)
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        _, t, _, _ = timed(lambda: b.copy_(a), sync, 0.3, max_n=20)
    return 2 * nbytes / t  # read + write


def device_name(system, dry):
    if system == "numgrad":
        import numgrad as ng
        import numgrad.cuda.device as cuda_device
        ng.cuda.is_available()
        return cuda_device.launch(0).name
    if system == "torch" and not dry:
        import torch
        return torch.cuda.get_device_name(0)
    return "cpu" if dry else None


def versions(system):
    out = {"numpy": np.__version__, "python": sys.version.split()[0],
           "numpy.row_stack shimmed": bool(os.environ.get("NUMGRAD_GPU_CHECK_SHIM"))}
    mods = {"numgrad": ("numba", "numba_cuda"), "torch": ("torch",), "jax": ("jax", "jaxlib")}
    for m in mods[system]:
        try:
            mod = __import__(m)
            out[m] = getattr(mod, "__version__", "?")
        except Exception:  # noqa: BLE001
            out[m] = None
    return out


def run(system, workload, dry, budget_s, path, warm=False):
    """Every case of ``workload`` for ``system``; the JSON at ``path`` is rewritten after
    each row, so a run stopped by its timeout still reports what it finished. ``warm``:
    numgrad's first calls only, its disk cache filled by an earlier process."""
    result = {"system": system, "workload": workload, "device": device_name(system, dry),
              "versions": versions(system), "rows": [], "errors": []}
    if workload == "copy":
        result["copy_bytes_per_s"] = copy_bandwidth(system, dry)
        return result
    for label, params in (DRY if dry else FULL)[workload]:
        data = _case_data(workload, params)
        jitted = {}
        try:
            if system == "numgrad":
                variants, sync, value, jitted = numgrad_variants(workload, params, data, warm)
            elif system == "torch":
                variants, sync, value = torch_variants(workload, params, data,
                                                       "cpu" if dry else "cuda")
            else:
                variants, sync, value = jax_variants(workload, params, data)
        except Exception as exc:  # noqa: BLE001  (reported in the results, not fatal)
            result["errors"].append(f"{workload} {label}: {type(exc).__name__}: {exc}"[:300])
            continue
        for name, step in variants.items():
            try:
                first, med, n, out = timed(step, sync, 0.0 if warm else budget_s,
                                           min_n=1 if warm else 2 if dry else 5,
                                           max_n=1 if warm else 200)
                row = {"case": label, "variant": name, "first_s": first,
                       "median_us": med * 1e6, "calls": n, "value": value(out)}
                if name in jitted:
                    row["disk_hits"] = jitted[name].stats.disk_hits
                result["rows"].append(row)
            except Exception as exc:  # noqa: BLE001
                result["errors"].append(f"{workload} {label} {name}: "
                                        f"{type(exc).__name__}: {exc}"[:300])
            if system == "numgrad":
                result["matmul"] = matmul_status()
            _write(result, path)
            print(f"{system} {workload} {label} {name} done", flush=True)
    if system == "numgrad":
        result["matmul"] = matmul_status()
    return result


def _write(result, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", choices=("numgrad", "torch", "jax"), required=True)
    ap.add_argument("--workload", choices=("W1", "W2", "W3", "W4", "copy"), required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--budget", type=float, default=0.4, help="seconds of steady calls per row")
    ap.add_argument("--warm-cache", action="store_true",
                    help="numgrad: first calls only, from a disk cache an earlier run filled")
    args = ap.parse_args(argv)
    try:
        result = run(args.system, args.workload, args.dry_run,
                     0.02 if args.dry_run else args.budget, args.json, args.warm_cache)
    except Exception as exc:  # noqa: BLE001  (the parent reports it beside the rest)
        result = {"system": args.system, "workload": args.workload,
                  "errors": [f"{type(exc).__name__}: {exc}"[:300]]}
    _write(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

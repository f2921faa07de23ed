"""The GPU check: on a machine with an NVIDIA GPU, in under 3 minutes,

1. the CUDA correctness matrix (tests/compiler/backends/cuda/cuda_cases.py) once on the real
   device,
   each case against numgrad's CPU eager result;
2. W2 (sum(tanh(x*y + sin x) * exp(-y*y)), jit(value_and_grad)) at 1e7 float64 and
   W3 (MLP 784-512-10, batch 256, float32, jit(value_and_grad)) on the GPU, against
   numgrad's CPU and against the device's memory-bandwidth floor (bytes the step must
   move / the bandwidth of a device-to-device copy measured here), printed as ratios.

``python bench/gpu_check.py`` from the repository root. Without a GPU (or under Numba's
simulator) it says so and exits 0 without running anything. It prints which matmul path
W3 took (cuBLAS through nvmath-python, or numgrad's kernel).

``--peers`` times W1, W2 (1e6-1e8 float64, 1e7 float32), W3 and W4 on the device for
numgrad (``jit(value_and_grad)``, jit call + ``.backward()`` (one fused pass from its
second call), eager) beside torch eager, ``torch.compile`` and JAX
``jit(value_and_grad)`` where they are installed, each system and workload in its own
process (``bench/gpu_peers.py``) under its own timeout, the whole run kept under
``--deadline`` seconds (default 290), plus the device-to-device copy bandwidth (the
floor). numgrad's children share a disk cache made fresh for the run: each workload's
first child compiles (the cold first call), and a second child (``--warm-cache``) times
the first call of a new process that finds the kernels on disk. It writes
``bench/results/gpu/<device>.md`` and ``.json`` (``bench/gpu_report.py``) with the git
revision. Where NumPy has no ``row_stack`` (NumPy 2.5) but numba-cuda 0.30 needs it,
the children get a ``sitecustomize`` shim made for them alone (labelled in the
results). ``--peers --dry-run`` runs the same
plumbing without a GPU: numgrad under Numba's simulator, torch and JAX on the CPU, tiny
shapes, results under ``--out`` (default: a temporary folder).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def gpu_or_reason():
    """None when a real CUDA GPU is usable, else why not (one line)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return "NUMBA_ENABLE_CUDASIM is set: the simulator is no GPU to time"
    try:
        from numba import cuda
    except ImportError as exc:
        return f"numba-cuda is not installed ({exc}); pip install -e '.[cuda]'"
    try:
        if not cuda.is_available():
            return "no CUDA GPU or driver is visible to numba.cuda"
    except Exception as exc:  # noqa: BLE001  (the driver's own reason)
        return f"the CUDA driver failed: {exc}"
    return None


def _time(fn, repeats):
    from numba import cuda
    fn()
    cuda.synchronize()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def copy_bandwidth(nbytes=1 << 30):
    """Bytes per second of a device-to-device copy (read + write counted)."""
    import numpy as np
    from numba import cuda
    a = cuda.device_array(nbytes // 8, np.float64)
    b = cuda.device_array(nbytes // 8, np.float64)
    t = _time(lambda: b.copy_to_device(a), 5)
    return 2 * nbytes / t


def correctness():
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "compiler", "backends", "cuda"))
    import cuda_cases as C
    bad = 0
    for name, (fn, _, _) in C.CASES.items():
        t0 = time.perf_counter()
        try:
            got = C.result(name)
            want = C.run(fn, C.tensors(name, "cpu"))
            tol = dict(rtol=2e-5, atol=1e-6) if "f32" in name else dict(rtol=1e-9, atol=1e-12)
            for a, b in zip(got[0] + got[1], want[0] + want[1]):
                if a is not None:
                    np.testing.assert_allclose(a, b, **tol)
            status = "ok"
        except Exception as exc:  # noqa: BLE001  (reported, counted)
            status = f"FAIL {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            bad += 1
        print(f"  {name:<20} {status}  ({time.perf_counter() - t0:.2f} s)")
    return bad


def w2(n=10_000_000):
    import numpy as np
    import numgrad as ng

    def f(x, y):
        return (ng.tanh(x * y + ng.sin(x)) * ng.exp(-y * y)).sum()
    rng = np.random.default_rng(2)
    xs, ys = rng.standard_normal(n), rng.standard_normal(n)
    out = {}
    for dev in ("cuda", "cpu"):
        vg = ng.jit(ng.value_and_grad(f, argnums=(0, 1)))
        x, y = ng.tensor(xs, device=dev), ng.tensor(ys, device=dev)
        out[dev] = _time(lambda: vg(x, y), 10 if dev == "cuda" else 3)
    # Reads x and y, writes both gradients: 4 float64 arrays at the least.
    return out, 4 * 8 * n


def w3():
    import numpy as np
    import numgrad as ng
    F = ng.nn.functional

    def loss(W1, b1, W2, b2, X, T):
        h = F.relu(F.linear(X, W1, b1))
        return F.nll_loss(F.log_softmax(F.linear(h, W2, b2), dim=1), T)
    rng = np.random.default_rng(3)
    f32 = np.float32
    data = [rng.standard_normal((512, 784)).astype(f32) / 28, np.zeros(512, f32),
            rng.standard_normal((10, 512)).astype(f32) / 22, np.zeros(10, f32),
            rng.standard_normal((256, 784)).astype(f32), rng.integers(0, 10, 256)]
    out = {}
    for dev in ("cuda", "cpu"):
        vg = ng.jit(ng.value_and_grad(loss, argnums=(0, 1, 2, 3)))
        args = [ng.tensor(a, device=dev) for a in data]
        out[dev] = _time(lambda: vg(*args), 20 if dev == "cuda" else 5)
    # Weights and input read, weight gradients written, float32.
    nbytes = 4 * (2 * (512 * 784 + 512 + 10 * 512 + 10) + 256 * 784)
    return out, nbytes


# A sitecustomize for the children only: labelled, and only made when NumPy lacks the name.
SHIM = """\
# Made by numgrad's bench/gpu_check.py for its own child processes, not installed anywhere:
# NumPy 2.5 removed numpy.row_stack, and numba-cuda 0.30 registers an overload for it, so
# its first kernel compile fails. Aliasing the name to numpy.vstack lets the benchmark run.
import os
import numpy
if not hasattr(numpy, "row_stack"):
    numpy.row_stack = numpy.vstack
os.environ["NUMGRAD_GPU_CHECK_SHIM"] = "1"
"""
# (system, workload, timeout s[, extra arguments]): the copy floors first, numgrad first (it
# names the device), torch last per workload: its compiles are the slowest part. After
# numgrad's run of a workload, a second numgrad child whose first calls find that run's
# kernels in the disk cache. On paper the 18 children take about 250 s: ~3 s to start
# each, numgrad's cold compiles ~1 s (W1, W2), ~20 s (W3, with the kernel-matmul variant
# beside cuBLAS) and ~20 s (W4) as NVVM + ptxas took for them on a 2-vCPU box, its
# warm children ~5 s, JAX ~6 s a workload, torch.compile 10-30 s a case (5 cases);
# torch's compiles are the uncertain part, and the deadline stops what would not fit.
COMPILING = {"W2": 90, "W3": 60, "W4": 60}   # timeouts of the children that compile most
PLAN = [("numgrad", "copy", 30), ("torch", "copy", 30)] + [
    entry for w in ("W1", "W2", "W3", "W4")
    for entry in [("numgrad", w, COMPILING.get(w, 45)), ("numgrad", w, 45, "--warm-cache"),
                  ("jax", w, 45), ("torch", w, COMPILING.get(w, 45))]]


def _installed(system):
    import importlib.util
    return importlib.util.find_spec({"numgrad": "numba", "torch": "torch",
                                     "jax": "jax"}[system]) is not None


def child_env(dry_run, shim_dir, cache_dir=None):
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONUNBUFFERED="1")
    if cache_dir:  # numgrad's kernels: cold for the run's first children, then warm
        env["NUMGRAD_CACHE_DIR"] = cache_dir
    # The shim's folder first (its sitecustomize is the one imported), then the checkout.
    path = ([shim_dir] if shim_dir else []) + [ROOT]
    env["PYTHONPATH"] = os.pathsep.join(path + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if dry_run:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        env["JAX_PLATFORMS"] = "cpu"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    return env


def peers(dry_run=False, out_dir=None, deadline=290.0, plan=None, log=print):
    """Run every (system, workload) child, write the report; returns (md, json) paths."""
    import numpy as np

    sys.path.insert(0, ROOT)
    from bench import gpu_report
    t0 = time.perf_counter()
    work = tempfile.mkdtemp(prefix="numgrad-gpu-check-")
    shim = not hasattr(np, "row_stack")
    shim_dir = None
    if shim:
        shim_dir = os.path.join(work, "shim")
        os.makedirs(shim_dir)
        with open(os.path.join(shim_dir, "sitecustomize.py"), "w") as f:
            f.write(SHIM)
        log("NumPy has no row_stack: the children run with a sitecustomize shim (see results)")
    env = child_env(dry_run, shim_dir, os.path.join(work, "numgrad-cache"))
    children = []
    for system, workload, limit, *extra in plan or PLAN:
        if not _installed(system):
            log(f"  {system} {workload}: not installed, skipped")
            continue
        left = deadline - (time.perf_counter() - t0)
        if left < 5:
            children.append({"system": system, "workload": workload,
                             "errors": ["not run: the whole run's deadline was reached"]})
            continue
        path = os.path.join(work, f"{system}-{workload}{''.join(extra)}.json")
        cmd = [sys.executable, os.path.join(HERE, "gpu_peers.py"), "--system", system,
               "--workload", workload, "--json", path] + (["--dry-run"] if dry_run else [])
        cmd += list(extra)
        ts = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=min(limit, left))
            status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
            tail = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
        except subprocess.TimeoutExpired:
            status, tail = f"timed out after {min(limit, left):.0f} s", []
        res = {"system": system, "workload": workload, "errors": []}
        if os.path.exists(path):
            with open(path) as f:
                res = json.load(f)
        if status != "ok":
            res.setdefault("errors", []).append(f"{status} {' '.join(tail)[:300]}".strip())
        children.append(res)
        log(f"  {system} {workload}{' ' + ' '.join(extra) if extra else ''}: {status} "
            f"({time.perf_counter() - ts:.1f} s)")
    device = next((c["device"] for c in children if c.get("system") == "numgrad"
                   and c.get("device")), None) or next(
        (c["device"] for c in children if c.get("device")), "unknown device")
    meta = gpu_report.meta(ROOT, device, dry_run, shim, time.perf_counter() - t0)
    report = gpu_report.build(children, meta)
    out_dir = out_dir or (work if dry_run else os.path.join(HERE, "results", "gpu"))
    return gpu_report.write(report, out_dir)


def main(argv=None):
    ap = argparse.ArgumentParser(description="numgrad on a real GPU: correctness and timings")
    ap.add_argument("--peers", action="store_true", help="time numgrad beside torch and JAX")
    ap.add_argument("--dry-run", action="store_true",
                    help="with --peers: simulator/CPU and tiny shapes, to test the script")
    ap.add_argument("--out", help="with --peers: the results folder")
    ap.add_argument("--deadline", type=float, default=290.0,
                    help="with --peers: seconds for the whole run")
    args = ap.parse_args(argv)
    if args.peers:
        if not args.dry_run:
            why = gpu_or_reason()
            if why is not None:
                print(f"gpu_check --peers: no GPU to time ({why}); --dry-run tests the script")
                return 0
        md, js = peers(args.dry_run, args.out, args.deadline)
        print(open(md).read())
        print(f"wrote {md} and {js}")
        return 0
    why = gpu_or_reason()
    if why is not None:
        print(f"gpu_check: no GPU to check ({why}). Nothing was run. The CUDA backend is "
              "tested without a GPU by `python -m pytest tests/compiler/backends/cuda` "
              "(simulator + sm_90 PTX).")
        return 0
    sys.path.insert(0, ROOT)
    import numpy as np
    if not hasattr(np, "row_stack"):
        exec(compile(SHIM, "gpu_check's numpy.row_stack shim", "exec"), {})  # noqa: S102
        print("NumPy has no row_stack: aliased to numpy.vstack in this process (the shim "
              "numba-cuda 0.30 needs to compile kernels)")
    from numba import cuda
    t_start = time.perf_counter()
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    print(f"gpu_check on {name} (cc {dev.compute_capability[0]}.{dev.compute_capability[1]}, "
          f"{dev.MULTIPROCESSOR_COUNT} SMs)")
    bw = copy_bandwidth()
    print(f"device-to-device copy: {bw / 1e9:.0f} GB/s (the floor below is bytes / this)")
    print("1. correctness matrix (CUDA jit vs numgrad CPU eager):")
    bad = correctness()
    print(f"   {'all cases agree' if not bad else f'{bad} case(s) FAILED'}")
    print("2. timings (median, synchronised):")
    for label, fn in (("W2 jit(value_and_grad) 1e7 float64", w2),
                      ("W3 MLP jit(value_and_grad) float32", w3)):
        times, nbytes = fn()
        floor = nbytes / bw
        g, c = times["cuda"], times["cpu"]
        print(f"   {label}: GPU {g * 1e3:.3f} ms, numgrad CPU {c * 1e3:.3f} ms, floor "
              f"{floor * 1e3:.3f} ms -> CPU/GPU {c / g:.1f}x, GPU/floor {g / floor:.1f}x")
    from bench import gpu_report
    from numgrad.compiler.backends.cuda import blas
    print(gpu_report.matmul_line("this process", blas.status()).lstrip("- "))
    print(f"gpu_check done in {time.perf_counter() - t_start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""The GPU check: on a machine with an NVIDIA GPU, in under 3 minutes,

1. the CUDA correctness matrix (tests/compiler/backends/cuda/cuda_cases.py) once on the real
   device,
   each case against numgrad's CPU eager result;
2. W2 (sum(tanh(x*y + sin x) * exp(-y*y)), jit(value_and_grad)) at 1e7 float64 and
   W3 (MLP 784-512-10, batch 256, float32, jit(value_and_grad)) on the GPU, against
   numgrad's CPU and against the device's memory-bandwidth floor (bytes the step must
   move / the bandwidth of a device-to-device copy measured here), printed as ratios.

``python bench/gpu_check.py`` from the repository root. Without a GPU (or under Numba's
simulator) it says so and exits 0 without running anything.
"""
from __future__ import annotations

import os
import statistics
import sys
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


def main():
    why = gpu_or_reason()
    if why is not None:
        print(f"gpu_check: no GPU to check ({why}). Nothing was run. The CUDA backend is "
              "tested without a GPU by `python -m pytest tests/compiler/backends/cuda` "
              "(simulator + sm_90 PTX).")
        return 0
    sys.path.insert(0, ROOT)
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
    print(f"gpu_check done in {time.perf_counter() - t_start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""backends.cpu.llvm.kernel: kernels whose loops are all llvm_body bodies, built without Numba.

Such kernels must give the bits of the Numba-built ones (``NUMGRAD_LLVM_KERNEL=0``) in
both tiers, agree with torch, load from the disk cache only what a trusted manifest
vouches for, and refuse an array they were not compiled for."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import numgrad as ng
from numgrad.compiler.backends.cpu.llvm import kernel as llvm_kernel

torch = pytest.importorskip("torch")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 5))
STEPS = 6  # 31 statements: a serial loop long enough for an llvm_body body


def chain(lib, x, steps=STEPS, mean=False):
    for _ in range(steps):
        x = lib.tanh(lib.sin(x) * 1.01 + 0.1 * x)
    return x.mean() if mean else x.sum()


def _run(n, dtype, mean, enabled, monkeypatch):
    """Value and gradient, f(x).backward() and jit(value_and_grad), at the first call and
    the third (the prange tier where the loop is parallel); the kernels' types."""
    monkeypatch.setenv("NUMGRAD_LLVM_KERNEL", "1" if enabled else "0")
    data = np.random.default_rng(3).standard_normal(n).astype(dtype) * 3
    data[:3] = [0.0, -0.0, 40.0][: min(3, n)]
    # cache=False: a kernel left in the disk cache by another test would load instead.
    f = ng.jit(lambda x: chain(ng, x, mean=mean), cache=False)
    vg = ng.jit(ng.value_and_grad(lambda x: chain(ng, x, mean=mean)), cache=False)
    out = []
    for call in range(4):
        threads = numba.get_num_threads()
        if call == 3:  # the final tier on one thread
            numba.set_num_threads(1)
        try:
            x = ng.tensor(data, requires_grad=True)
            y = f(x)
            y.backward()
            v, g = vg(ng.tensor(data))
        finally:
            numba.set_num_threads(threads)
        out.append([y.detach().numpy(), x.grad.numpy(), v.numpy(), g.numpy()])
        if call == 0:
            (plan,) = vg._plans.values()
            assert plan.programs[0].tier == ("serial" if n > 100 else "final")
    assert plan.programs[0].tier == "final"
    kinds = {type(k.fn).__name__ for k in vg.schedule(ng.tensor(data))[0].kernels}
    return data, out, kinds


# 37 elements: a serial loop; 1003: chunked and parallel (serial at the first call, then on
# threads: Numba's prange tier, or llvm.kernel's on Numba's threading layer).
@pytest.mark.parametrize("n,dtype,mean", [(37, "float64", False), (1003, "float64", True),
                                          (1003, "float32", False)])
def test_llvmlite_kernels_give_the_bits_of_numbas_in_both_tiers(n, dtype, mean, monkeypatch):
    data, ref, _ = _run(n, dtype, mean, False, monkeypatch)
    _, got, kinds = _run(n, dtype, mean, True, monkeypatch)
    assert kinds == {"LLVMKernel"}
    for call in range(4):
        for a, b in zip(got[call], ref[call]):
            assert a.dtype == b.dtype and np.array_equal(a, b), (call, a, b)
    t = torch.tensor(data, requires_grad=True)
    tv = chain(torch, t, mean=mean)
    tv.backward()
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got[0][0], tv.detach().numpy(), **tol)
    np.testing.assert_allclose(got[0][1], t.grad.numpy(), **tol)


def test_a_kernel_refuses_arrays_it_was_not_compiled_for():
    f = ng.jit(ng.value_and_grad(lambda x: chain(ng, x)), cache=False)
    x = ng.tensor(np.linspace(-1, 1, 37))
    f(x)
    kernel = f.schedule(x)[0].kernels[0].fn
    assert isinstance(kernel, llvm_kernel.LLVMKernel)
    good = np.linspace(-1, 1, 37)
    kernel(good)  # runs
    for bad in (good.astype(np.float32), good[:36].copy(), np.linspace(-1, 1, 74)[::2],
                [0.0] * 37):
        before = np.array(bad, copy=True)
        with pytest.raises(TypeError, match="takes writeable C-contiguous float64 arrays of 37"):
            kernel(bad)
        np.testing.assert_array_equal(np.asarray(bad), before)
    ro = good.copy()
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        kernel(ro)


SCRIPT = r"""
import json, sys, warnings
import numpy as np
import numgrad as ng
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    def probe(x):
        for _ in range(6):
            x = ng.tanh(ng.sin(x) * 1.01 + 0.1 * x)
        return x.sum()
    f = ng.jit(probe)
    x = ng.tensor(np.linspace(-2.0, 2.0, 37), requires_grad=True)
    y = f(x)
    y.backward()
print(json.dumps({"numba": "numba" in sys.modules, "disk_hits": f.stats.disk_hits,
                  "value": float(y.item()), "grad": x.grad.numpy().tolist(),
                  "warnings": [str(w.message) for w in caught]}))
"""


def _probe(cache):
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(cache), NUMGRAD_PROGRESS="0")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_objects_on_disk_are_verified_before_they_are_linked(tmp_path):
    cache = tmp_path / "cache"
    cold = _probe(cache)
    assert not cold["numba"], "a cold compile of llvm_body-only kernels imported Numba"
    assert cold["disk_hits"] == 0 and not cold["warnings"]
    objects = sorted(glob.glob(str(cache / "*.o")))
    assert len(objects) == 2  # forward and backward
    for o in objects:
        assert os.stat(o).st_mode & 0o777 == 0o600
        assert os.stat(o[:-2] + ".manifest").st_mode & 0o777 == 0o600
    warm = _probe(cache)
    assert warm["disk_hits"] == 2 and not warm["numba"] and not warm["warnings"]
    assert warm["value"] == cold["value"] and warm["grad"] == cold["grad"]

    # A changed object is refused (never linked) and compiled again.
    with open(objects[0], "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with open(objects[0], "wb") as f:
        f.write(data)
    tampered = _probe(cache)
    assert tampered["disk_hits"] == 1
    assert any("content hash does not match" in w for w in tampered["warnings"])
    assert tampered["value"] == cold["value"] and tampered["grad"] == cold["grad"]

    # A manifest others could have written vouches for nothing.
    manifest = objects[1][:-2] + ".manifest"
    os.chmod(manifest, 0o666)
    loose = _probe(cache)
    assert loose["disk_hits"] == 1
    assert any("only its owner can write" in w for w in loose["warnings"])
    assert loose["value"] == cold["value"] and loose["grad"] == cold["grad"]


# The ops llvm_body writes as IR, forward and backward (a comparison's bool mask, as in
# maximum's or relu's gradient, leaves the loop to Numba).
UNARY = ["ng.exp(-({x}) * ({x}))", "ng.tanh({x})", "ng.sin({x})", "ng.cos({x})",
         "ng.sigmoid({x})", "(-{x})", "ng.sqrt({x} * {x} + 1.0)", "ng.log({x} * {x} + 1.0)",
         "({x} * {x})"]
BINARY = ["({x} + {y})", "({x} - {y})", "({x} * {y})", "({x} / ({y} * {y} + 0.5))",
          "({x} * 1.5 - {y} * 0.25)"]


def _random_program(seed, steps):
    """A random long elementwise program of a and b, then a sum or a mean."""
    r = np.random.default_rng(seed)
    vals = ["a", "b"]
    lines = []
    for i in range(steps):
        if r.random() < 0.5:
            expr = UNARY[r.integers(len(UNARY))].format(x=vals[r.integers(len(vals))])
        else:
            x, y = (vals[r.integers(len(vals))] for _ in range(2))
            expr = BINARY[r.integers(len(BINARY))].format(x=x, y=y)
        lines.append(f"    t{i} = {expr}")
        vals.append(f"t{i}")
    red = "mean" if r.random() < 0.5 else "sum"
    live = " + ".join(vals[-4:] + [vals[len(vals) // 2]])  # most of it stays live
    src = "def prog(a, b):\n" + "\n".join(lines) + f"\n    return ({live}).{red}()\n"
    ns = {"ng": ng}
    exec(src, ns)  # noqa: S102 (a program written above)
    return ns["prog"], src


@pytest.mark.parametrize("seed", range(int(os.environ.get("NG_LLVM_KERNEL_SEEDS", "4"))))
def test_random_long_programs_give_numbas_bits(seed, monkeypatch):
    """Random long elementwise programs (the loops llvm.kernel takes), with inputs holding
    +-inf, NaN, +-0, subnormals and huge values: value and gradients through the
    llvmlite kernels, serially and on threads, have the bits of the Numba kernels."""
    prog, src = _random_program(seed, 14 + 4 * seed)
    r = np.random.default_rng(100 + seed)
    n = (37, 1003)[seed % 2]
    dtype = ("float64", "float32")[seed // 2 % 2]
    a = (r.standard_normal(n) * 3).astype(dtype)
    b = (r.standard_normal(n) * 3).astype(dtype)
    a[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 3e38, 2.0 ** 41]
    b[-4:] = [-0.0, np.inf, 1e-310, -3e38]
    results, kinds = [], []
    for enabled in (True, False):
        monkeypatch.setenv("NUMGRAD_LLVM_KERNEL", "1" if enabled else "0")
        vg = ng.jit(ng.value_and_grad(prog, argnums=(0, 1)), cache=False)
        calls = []
        for _ in range(3):  # serial, then the threaded (or prange) tier
            with np.errstate(all="ignore"):
                v, (ga, gb) = vg(ng.tensor(a), ng.tensor(b))
            calls.append([v.numpy(), ga.numpy(), gb.numpy()])
        results.append(calls)
        sched = vg.schedule(ng.tensor(a), ng.tensor(b))[0]
        kinds.append({type(k.fn).__name__ for k in sched.kernels})
    # Every kernel goes through llvmlite where a loop is long (an llvm_body body).
    assert kinds[0] == ({"LLVMKernel"} if any(k.ir_specs for k in sched.kernels)
                        else {"CPUDispatcher"}), src
    for got, ref in zip(results[0], results[1]):
        for x, y in zip(got, ref):
            assert np.array_equal(x, y, equal_nan=True), src

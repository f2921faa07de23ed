"""Micro-benchmark of numgrad.compiler.backends.cpu.llvm.vmath against libm and NumPy.

For each function and dtype it times, on 1e6 elements (median of repeats):

  vmath     out[i] = vmath.fn(x[i])   in an njit loop, fastmath={contract,arcp,nsz}
  math      out[i] = math.fn(x[i])    in the same kind of loop (scalar libm)
  numpy     the NumPy ufunc (sigmoid: 1/(1+exp(-x)) as four ufunc passes)
  vmath||   the vmath loop with prange (parallel=True)
  math||    the math loop with prange

and reports whether LLVM vectorised the vmath loop (packed ymm/zmm arithmetic
in ``dispatcher.inspect_asm``).  The five are timed interleaved, one call each
per round.  "compile" is the first call of the vmath kernel: it includes
compiling vmath's subroutine for that type once per process.

    python bench/vmath_micro.py                 # all functions
    python bench/vmath_micro.py exp tanh -n 21  # some, more repeats
"""

import argparse
import math
import re
import time

import numba
import numpy as np
from numba import njit, prange

from numgrad.compiler.backends.cpu.llvm import vmath_numba as vmath
from numgrad.compiler.backends.cpu.llvm.vmath import TEMPLATES

FM = {"contract", "arcp", "nsz"}  # no nnan/ninf: vmath relies on inf/nan


def _math_sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


MATH = {
    "exp": math.exp,
    "expm1": math.expm1,
    "log": math.log,
    "tanh": math.tanh,
    "sin": math.sin,
    "cos": math.cos,
    "sigmoid": njit(inline="always")(_math_sigmoid),
    "pow": math.pow,
}


def _np_sigmoid(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


NUMPY = {
    "exp": lambda x, o: np.exp(x, out=o),
    "expm1": lambda x, o: np.expm1(x, out=o),
    "log": lambda x, o: np.log(x, out=o),
    "tanh": lambda x, o: np.tanh(x, out=o),
    "sin": lambda x, o: np.sin(x, out=o),
    "cos": lambda x, o: np.cos(x, out=o),
    "sigmoid": _np_sigmoid,
    "pow": lambda x, y, o: np.power(x, y, out=o),
}

DOMAIN = {
    "exp": (-50.0, 50.0),
    "expm1": (-5.0, 5.0),
    "log": (1e-3, 1e3),
    "tanh": (-5.0, 5.0),
    "sigmoid": (-20.0, 20.0),
    "sin": (-100.0, 100.0),
    "cos": (-100.0, 100.0),
    "pow": (0.01, 100.0),  # y ~ U(-3, 3)
}


def make_kernels(fn):
    @njit(fastmath=FM)
    def serial(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    @njit(fastmath=FM, parallel=True)
    def parallel(x, out):
        for i in prange(x.size):
            out[i] = fn(x[i])

    return serial, parallel


def make_kernels2(fn):
    @njit(fastmath=FM)
    def serial(x, y, out):
        for i in range(x.size):
            out[i] = fn(x[i], y[i])

    @njit(fastmath=FM, parallel=True)
    def parallel(x, y, out):
        for i in prange(x.size):
            out[i] = fn(x[i], y[i])

    return serial, parallel


def interleaved_medians(systems, repeat):
    """systems: {label: (f, args)}.  One call of each per round, rounds
    repeated, median per label: on a shared 2-vCPU host this keeps slow
    phases of the machine from landing on one system only."""
    for f, a in systems.values():
        f(*a)  # compile / warm
    ts = {k: [] for k in systems}
    for _ in range(repeat):
        for label, (f, a) in systems.items():
            t0 = time.perf_counter()
            f(*a)
            ts[label].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in ts.items()}


_PACKED = re.compile(
    r"\bv(?:fn?m(?:add|sub)\d+|mul|add|sub|div|round|blendv|cmp)\w*p[sd]\b[^\n]*%(ymm|zmm)")


def vector_width(dispatcher):
    """'zmm'/'ymm' if packed float arithmetic on those registers is in the
    kernel's own code (the slow-path helpers vmath emits for huge sin/cos
    arguments are skipped), else 'scalar'."""
    asm = dispatcher.inspect_asm(dispatcher.signatures[0])
    regs = set()
    keep = True
    for line in asm.splitlines():
        if line and not line[0].isspace() and line.endswith(":") and not line.startswith("."):
            keep = "numgrad_vmath_slow" not in line  # a new function starts
        elif keep:
            regs.update(_PACKED.findall(line))
    if "zmm" in regs:
        return "zmm"
    if "ymm" in regs:
        return "ymm"
    return "scalar"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(TEMPLATES))
    ap.add_argument("-n", "--repeat", type=int, default=15)
    ap.add_argument("--size", type=int, default=1_000_000)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    print(f"numba {numba.__version__}, numpy {np.__version__}, "
          f"{numba.get_num_threads()} threads, n={args.size}, median of {args.repeat}")
    print("ns/element; 'vec' = registers of the vmath serial loop")
    hdr = f"{'fn':8s} {'dtype':8s} {'vmath':>7s} {'math':>7s} {'numpy':>7s} " \
          f"{'vmath||':>8s} {'math||':>7s} {'x libm':>7s} {'x numpy':>8s}  vec   compile"
    print(hdr)
    print("-" * len(hdr))
    for name in args.names:
        binary = name == "pow"
        mk = make_kernels2 if binary else make_kernels
        vs, vp = mk(getattr(vmath, name))
        ms, mp = mk(MATH[name])
        lo, hi = DOMAIN[name]
        for dt in (np.float64, np.float32):
            x = rng.uniform(lo, hi, args.size).astype(dt)
            out = np.empty_like(x)
            fargs = (x, rng.uniform(-3, 3, args.size).astype(dt), out) if binary else (x, out)
            t0 = time.perf_counter()
            vs(*fargs)
            compile_s = time.perf_counter() - t0
            r = interleaved_medians({
                "vmath": (vs, fargs), "math": (ms, fargs), "numpy": (NUMPY[name], fargs),
                "vmath||": (vp, fargs), "math||": (mp, fargs)}, args.repeat)
            ns = {k: v * 1e9 / args.size for k, v in r.items()}
            print(f"{name:8s} {np.dtype(dt).name:8s} {ns['vmath']:7.2f} {ns['math']:7.2f} "
                  f"{ns['numpy']:7.2f} {ns['vmath||']:8.2f} {ns['math||']:7.2f} "
                  f"{ns['math'] / ns['vmath']:7.1f} {ns['numpy'] / ns['vmath']:8.1f}  "
                  f"{vector_width(vs):5s} {compile_s:5.2f}s")


if __name__ == "__main__":
    main()

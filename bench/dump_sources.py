"""Write the generated kernel source of a fixed corpus of jitted functions to a folder.

A refactor of how ops reach the backends (the registry, the helper namespaces) must leave
every kernel byte-identical: run this on two trees and ``diff -r`` the folders.

    NUMGRAD_CACHE_DIR=/tmp/ngc PYTHONPATH=. python bench/dump_sources.py /tmp/src-new
    (cd /tmp/main && PYTHONPATH=. python bench/dump_sources.py /tmp/src-old)
    diff -r /tmp/src-old /tmp/src-new

``--cuda`` adds the CUDA sources (Numba's simulator: NUMBA_ENABLE_CUDASIM=1 is set here).
The corpus covers elementwise chains (every unary transcendental, binary ops with
broadcasting, comparisons, where, clamp, powers), reductions, matmul, softmax, a conv and
an MLP step, each with its backward (inputs require grad).
"""
from __future__ import annotations

import argparse
import os
import pathlib


def corpus(ng):
    """``{name: (function, args)}``: small fixed shapes, float64 unless the case says."""
    ng.manual_seed(0)

    def leaf(*shape, dtype=ng.float64):
        return ng.randn(*shape, dtype=dtype, requires_grad=True)

    F = ng.nn.functional

    def unary_chain(x):
        y = x.exp().sin() + x.cos() * x.tanh() + x.sigmoid().log() + x.abs().sqrt()
        y = y + ng.erf(x) + ng.log1p(x.abs()) + ng.expm1(x) + x.relu() + x.sign()
        return y.sum()

    def binary_chain(x, b):
        y = ng.maximum(x, b) - ng.minimum(x, b) + ng.hypot(x, b) + (x * b) / (b * b + 1)
        y = y + ng.remainder(x, b + 3) + ng.fmod(x, b + 3) + ng.where(x > b, x, b)
        return (y + (x >= 0) * 1.0 + x.clamp(-0.5, 0.5) + x ** 2 + x ** 0.5 + 2.0 ** x).sum()

    def long_chain(x):  # long enough for an llvm.body body
        for i in range(12):
            x = (x * 0.9 + 0.1).tanh() + x.sigmoid() * (i + 1)
        return x.sum()

    def reductions(x):
        return x.sum(0).mean() + x.amax(1).sum() + x.var() + x.norm() + x.max()

    def matmul(a, b):
        return (a @ b).relu().sum()

    def softmax(x):
        return (ng.softmax(x, dim=1) * ng.log_softmax(x, dim=0)).sum() + ng.logsumexp(x, 1).sum()

    def conv(x, w):
        return F.conv2d(x, w, padding=1).relu().sum()

    def mlp(x, w1, w2, t):
        return F.cross_entropy(F.linear(x, w1).tanh() @ w2, t)

    x = leaf(3, 4)
    return {
        "unary_chain": (unary_chain, (x,)),
        "unary_chain_f32": (unary_chain, (leaf(3, 4, dtype=ng.float32),)),
        "binary_chain": (binary_chain, (x, leaf(4))),
        "long_chain": (long_chain, (leaf(64),)),
        "reductions": (reductions, (x,)),
        "matmul": (matmul, (x, leaf(4, 5))),
        "softmax": (softmax, (x,)),
        "conv": (conv, (leaf(2, 3, 6, 6), leaf(4, 3, 3, 3))),
        "mlp": (mlp, (x, leaf(5, 4), leaf(5, 3), ng.tensor([0, 2, 1]))),
    }


def dump(out: pathlib.Path, cuda=False):
    import numgrad as ng
    out.mkdir(parents=True, exist_ok=True)
    cases = corpus(ng)
    for name, (fn, args) in cases.items():
        f = ng.jit(fn)
        (out / f"{name}.cpu.txt").write_text(str(f.source(*args)))
        if cuda:
            dargs = tuple(a.cuda().detach().requires_grad_(a.requires_grad)
                          if isinstance(a, ng.Tensor) else a for a in args)
            (out / f"{name}.cuda.txt").write_text(str(ng.jit(fn).source(*dargs)))
    return sorted(p.name for p in out.iterdir())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=pathlib.Path)
    p.add_argument("--cuda", action="store_true", help="also the CUDA sources (simulator)")
    a = p.parse_args()
    if a.cuda:
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    for name in dump(a.out, a.cuda):
        print(name)


if __name__ == "__main__":
    main()

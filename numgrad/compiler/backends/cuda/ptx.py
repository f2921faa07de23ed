"""backends.cuda.ptx: compile rendered CUDA kernels for a real GPU, without one.

Room: compiler. The simulator runs kernels as Python and type-checks nothing, so every
kernel the CUDA renderer produces is also compiled by the real target:
``numba.cuda.compile_ptx(..., cc=(9, 0))`` (NVVM, no device needed) and assembled by the
``ptxas`` of the ``nvidia-cuda-nvcc`` wheel for ``sm_90``, whose ``-v`` report gives
registers and spills per kernel. Run as a script (``python -m
numgrad.compiler.backends.cuda.ptx kernels.json``) in a process where the simulator is
off (``NUMBA_ENABLE_CUDASIM=0``): the simulator replaces ``numba.cuda`` when it is on.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

from numgrad.compiler.backends.cuda.renderer import lazy


def ptxas_path():
    """The wheel's ptxas (``nvidia-cuda-nvcc-cu12``), else one on PATH, else None."""
    try:
        import nvidia.cuda_nvcc as nv
        for base in nv.__path__:
            p = os.path.join(base, "bin", "ptxas")
            if os.path.exists(p):
                return p
    except ImportError:
        pass
    from shutil import which
    return which("ptxas")


def compile_kernels(kernels, cc=(9, 0)):
    """``kernels``: [(name, source, signature)]. Returns one dict per kernel: name,
    registers, spill_stores, spill_loads, shared (bytes), ok, error."""
    from numba import cuda
    from numba.cuda import config
    if config.ENABLE_CUDASIM:
        raise RuntimeError("compile_kernels needs the real CUDA target: run it with "
                           "NUMBA_ENABLE_CUDASIM=0")
    ptxas = ptxas_path()
    arch = f"sm_{cc[0]}{cc[1]}"
    modules = {}
    out = []
    for name, source, sig in kernels:
        rec = {"name": name, "ok": False}
        try:
            ns = modules.get(source)
            if ns is None:
                ns = modules[source] = {}
                text = lazy(source)  # (declared signatures would compile for a device here)
                exec(compile(text, f"<numgrad-cuda {name}>", "exec"), ns)  # noqa: S102
            ptx, _ = cuda.compile_ptx(ns[name].py_func, sig, cc=cc)
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "k.ptx")
                with open(path, "w") as f:
                    f.write(ptx)
                res = subprocess.run([ptxas, f"-arch={arch}", "-v", path, "-o",
                                      os.path.join(d, "k.cubin")],
                                     capture_output=True, text=True, timeout=120)
            if res.returncode != 0:
                rec["error"] = res.stderr.strip()[-2000:]
            else:
                rec.update(_parse(res.stderr))
                rec["ok"] = True
        except Exception as exc:  # reported per kernel; the test fails on any
            rec["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        out.append(rec)
    return out


def _parse(report):
    regs = re.search(r"Used (\d+) registers", report)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    smem = re.search(r"(\d+) bytes smem", report)
    return {"registers": int(regs.group(1)) if regs else None,
            "spill_stores": int(spill.group(1)) if spill else 0,
            "spill_loads": int(spill.group(2)) if spill else 0,
            "shared": int(smem.group(1)) if smem else 0}


def kernel_body(name, source):
    """The text of kernel ``name`` in ``source``, its name and integer literals blanked:
    kernels equal under it differ only in extents and strides, so they type and compile
    alike (the PTX test compiles one of each)."""
    lines = source.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    body = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break
        body.append(line)
    return re.sub(r"\b\d+\b", "N", "\n".join(body))


def distinct(kernels):
    """One kernel per (signature, ``kernel_body``)."""
    seen, out = set(), []
    for name, source, sig in kernels:
        key = (sig, kernel_body(name, source))
        if key not in seen:
            seen.add(key)
            out.append((name, source, sig))
    return out


def compile_parallel(kernels, workers=None):
    """``compile_kernels`` over up to ``workers`` processes (one per core), kernels of
    one source kept together (the module is executed once per process); same order."""
    workers = workers or min(os.cpu_count() or 1, 8)
    by_source = {}
    for i, k in enumerate(kernels):
        by_source.setdefault(k[1], []).append(i)
    chunks = [[] for _ in range(workers)]
    for n, idx in enumerate(sorted(by_source.values(), key=len, reverse=True)):
        min(chunks, key=len).extend(idx)
    chunks = [c for c in chunks if c]
    if len(chunks) <= 1:
        return compile_kernels(kernels)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    ctx = multiprocessing.get_context("fork")
    out = [None] * len(kernels)
    with ProcessPoolExecutor(len(chunks), mp_context=ctx) as pool:
        futures = [(c, pool.submit(compile_kernels, [kernels[i] for i in c])) for c in chunks]
        for c, fut in futures:
            for i, rec in zip(c, fut.result()):
                out[i] = rec
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        kernels = json.load(f)
    print(json.dumps(compile_parallel([tuple(k) for k in kernels])))


if __name__ == "__main__":
    main()

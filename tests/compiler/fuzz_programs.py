"""A differential fuzzer: random numgrad programs, run eagerly and through @ng.jit.

Each program is Python source (readable, and reproducible from its seed) of a function
``prog(a, b)`` over two inputs, one captured tensor ``C`` and one captured scalar ``S``
(globals of the program), built from elementwise and broadcast ops, reductions, views,
in-place ops on non-leaves and on views of them, ``detach``, ``no_grad`` regions and
clamps. Inputs carry special values (±inf, NaN, ±0, denormals, values that overflow
float32) at random. Every program runs through these modes, each compared with eager
mode on the same data (values, gradients of ``a``, ``b`` and ``C``, and errors):

1. ``jit``: call, then ``.backward()``;
2. ``jit-again``: a second call on new data (the plan is reused);
3. ``jit-mutated``: after the captured tensor is changed in place (under ``no_grad``, as
   an optimiser step) and the captured scalar is rebound (a retrace);
4. ``jit-vg``: ``ng.jit(ng.value_and_grad(prog, argnums=(0, 1)))``;
5. ``jit-float``: where the program reads ``S``, ``S`` passed as a Python float argument
   with three values: the first is a constant of its plan, the second retraces with ``S``
   a traced 0-d input that promotes as a Python number, the third reuses that plan.

Run it by hand for a long campaign (``python tests/compiler/fuzz_programs.py --count 5000``,
``--backend numpy`` for the reference backend, ``--backend cuda`` for compiled code on a
CUDA device, with ``NUMBA_ENABLE_CUDASIM=1`` where there is none); ``test_jit_fuzz.py``
runs a small budget in CI, and ``pytest --long`` a large one.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
import warnings

import numpy as np

import numgrad as ng

UNARY = ["{x}.exp()", "{x}.tanh()", "{x}.sin()", "{x}.cos()", "{x}.sigmoid()", "{x}.relu()",
         "{x}.abs()", "(-{x})", "{x}.abs().sqrt()", "({x}.abs() + 1).log()", "({x} * {x})",
         "({x} ** 2)", "{x}.clamp(-1.5, 2.0)", "ng.maximum({x}, ng.zeros_like({x}))",
         "{x}.abs().log()", "{x}.sqrt()"]
BINARY = ["({x} + {y})", "({x} - {y})", "({x} * {y})", "({x} / ({y}.abs() + 0.5))",
          "ng.maximum({x}, {y})", "ng.minimum({x}, {y})", "ng.where({x} > {y}, {x}, {y})",
          "({x} / {y})"]
SCALAR = ["({x} * S)", "({x} + S)", "({x} * 1.5)", "({x} - 0.25)", "({x} / S)"]
REDUCE = ["{x}.sum(dim={d}, keepdim={k})", "{x}.mean(dim={d}, keepdim={k})",
          "{x}.amax(dim={d}, keepdim={k})"]
INPLACE = ["{v}.mul_(2.0)", "{v}.add_({y})", "{v}.clamp_(-1.0, 1.0)", "{v}.pow_(2)",
           "{v}.mul_({y})", "{v}.sub_(0.5)", "{v}.relu_()"]
VIEW_INPLACE = ["{v}[0].mul_(3.0)", "{v}[:, 0].add_(1.0)", "{v}.T.mul_(3.0)",
                "{v}.reshape(-1)[1:].zero_()", "{v}[0] *= 3.0"]
SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 3e38, -3e38, 1e-3]


class Program:
    def __init__(self, seed, source, shapes, dtype, c_grad):
        self.seed, self.source, self.shapes, self.dtype, self.c_grad = (
            seed, source, shapes, dtype, c_grad)


def generate(seed, n_stmts=None, specials=True, views=True, inplace=True):
    """One random program (its source and the shapes of its inputs)."""
    r = random.Random(seed)
    rows, cols = r.choice([2, 3]), r.choice([3, 4])
    if r.random() < 0.05:
        rows = 0                               # an empty extent
    dtype = r.choice(["float32", "float64"])
    b_shape = r.choice([(cols,), (rows, cols), (1, cols), (rows, 1)])
    live = [("a", (rows, cols)), ("b", b_shape), ("C", (cols,))]
    lines = []
    n = n_stmts or r.randint(3, 9)

    def pick(shape=None):
        cands = [v for v in live if shape is None or v[1] == shape]
        return r.choice(cands) if cands else None

    def new(expr, shape):
        name = f"t{len(lines)}"
        lines.append(f"    {name} = {expr}")
        live.append((name, shape))
        return name

    for _ in range(n):
        kind = r.random()
        x, xs = pick()
        if kind < 0.25:
            new(r.choice(UNARY).format(x=x), xs)
        elif kind < 0.45:
            y, ys = pick()
            try:
                shape = tuple(np.broadcast_shapes(xs, ys))
            except ValueError:
                continue
            new(r.choice(BINARY).format(x=x, y=y), shape)
        elif kind < 0.55:
            new(r.choice(SCALAR).format(x=x), xs)
        elif kind < 0.65 and len(xs) == 2:
            d, k = r.choice([0, 1, -1]), r.choice([True, False])
            red = r.choice(REDUCE)
            if xs[d] == 0 and "amax" in red:
                if r.random() < 0.7:
                    continue                   # now and then: the error eager raises
            shape = list(xs)
            if k:
                shape[d] = 1
            else:
                shape.pop(d)
            new(red.format(x=x, d=d, k=k), tuple(shape))
        elif kind < 0.72 and views and len(xs) == 2 and xs[0] > 0:
            view, shape = r.choice([(f"{x}[0]", xs[1:]), (f"{x}[:, 1:]", (xs[0], xs[1] - 1)),
                                    (f"{x}.T", xs[::-1]), (f"{x}.reshape(-1)", (xs[0] * xs[1],)),
                                    (f"{x}.unsqueeze(0)", (1,) + xs)])
            new(view, shape)
        elif kind < 0.86 and inplace and x not in ("a", "b", "C"):
            # In-place on a non-leaf (a fresh clone, so eager's rules allow it), or on a view.
            v = new(f"({x} * 1.0)", xs)
            if views and len(xs) == 2 and xs[0] > 0 and xs[1] > 1 and r.random() < 0.5:
                lines.append("    " + r.choice(VIEW_INPLACE).format(v=v))
            else:
                y, ys = pick(xs) or (None, None)
                op = r.choice(INPLACE)
                if "{y}" in op and y is None:
                    op = "{v}.mul_(2.0)"
                lines.append("    " + op.format(v=v, y=y))
        elif kind < 0.92:
            new(f"{x}.detach()", xs)
        else:
            y, ys = pick()
            try:
                shape = tuple(np.broadcast_shapes(xs, ys))
            except ValueError:
                continue
            lines.append("    with ng.no_grad():")
            name = f"t{len(lines)}"
            lines.append(f"        {name} = ({x} * {y}).tanh()")
            live.append((name, shape))
            new(f"({name} + {x})" if tuple(np.broadcast_shapes(shape, xs)) == shape
                else f"({name} * 2.0)", shape)
    # Every live value that can carry a gradient feeds the scalar output, weighted so that
    # the gradients differ per element.
    terms = [f"({v} * {1.0 + 0.5 * i}).sum()" for i, (v, s) in enumerate(live[3:])
             if v.startswith("t")]
    terms.append("(a * C).sum()")
    body = "\n".join(lines)
    src = (f"def prog(a, b):\n{body}\n    return " + " + ".join(terms[-6:]) + "\n")
    c_grad = r.random() < 0.7
    return Program(seed, src, {"a": (rows, cols), "b": b_shape, "C": (cols,)}, dtype, c_grad)


def data_for(prog, seed, specials=True):
    r = np.random.default_rng(seed)
    out = {}
    for name, shape in prog.shapes.items():
        a = r.standard_normal(shape).astype(prog.dtype)
        if specials and a.size and r.random() < 0.5:
            k = r.integers(1, max(2, a.size // 2 + 1))
            idx = r.choice(a.size, size=min(k, a.size), replace=False)
            a.reshape(-1)[idx] = r.choice(SPECIALS, size=len(idx))
        out[name] = a
    return out


def _namespace(prog, data, source=None, device="cpu"):
    ns = {"ng": ng, "S": 0.75,
          "C": ng.tensor(data["C"].copy(), requires_grad=prog.c_grad, device=device)}
    exec(compile(source or prog.source, f"<fuzz program {prog.seed}>", "exec"), ns)
    return ns


def _float_source(prog):
    """``prog``'s source with ``S`` a parameter instead of a global (None where the
    program never reads ``S``)."""
    body = prog.source.split("\n", 1)[1]
    return None if "S" not in body else prog.source.replace(
        "def prog(a, b):", "def prog(a, b, S):", 1)


def _run(fn, ns, data, vg=False, extra=()):
    """Values and gradients (as arrays), or the exception raised; ``extra``: more
    arguments after ``a`` and ``b``. The inputs go where ``C`` is."""
    device = ns["C"].device
    a = ng.tensor(data["a"].copy(), requires_grad=not vg, device=device)
    b = ng.tensor(data["b"].copy(), requires_grad=not vg, device=device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if vg:
                value, (ga, gb) = fn(a, b, *extra)
                return [value.cpu().numpy(), ga.cpu().numpy(), gb.cpu().numpy()]
            out = fn(a, b, *extra)
            out.backward()
            C = ns["C"]
            res = [out.detach().cpu().numpy(), _g(a), _g(b), _g(C)]
            C.grad = None
            return res
    except Exception as e:  # noqa: BLE001 - the error is part of what is compared
        return e


def _g(t):
    return None if t.grad is None else t.grad.cpu().numpy().copy()


def same(x, y, dtype, stable=None):
    """Equal NaN positions, equal infinities, finite values within float tolerance; only
    where ``stable`` (a mask of well-conditioned elements, see ``unstable``) is True."""
    if x is None or y is None:
        return x is None and y is None
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if stable is not None and np.shape(stable) == x.shape:
        x, y = x[stable], y[stable]
    nx, ny = np.isnan(x), np.isnan(y)
    if not np.array_equal(nx, ny):
        return False
    ix, iy = np.isinf(x), np.isinf(y)
    if not np.array_equal(ix, iy) or not np.array_equal(x[ix], y[iy]):
        return False
    f = ~(nx | ix)
    if not f.any():
        return True
    xf, yf = x[f].astype(np.float64), y[f].astype(np.float64)
    eps = 1e-4 if dtype == "float32" else 1e-9
    scale = 1.0 + np.max(np.abs(yf))
    return bool(np.all(np.abs(xf - yf) <= eps * scale + eps * np.abs(yf)))


# Conditioning. A fused kernel sums in another order than NumPy's pairwise sum (SIMD
# lanes and fixed chunks: the `reassoc` flag on its accumulators), a rounding-level
# change: any order's result is within n*u*sum(|x|) of the exact sum (u: the unit
# roundoff), so two orders may differ by twice that, and where finite terms of one sign
# add up beyond the float range, whether a partial sum overflows depends on the order.
# Elements of a result that such a change can move beyond the comparison's tolerance
# are ill-conditioned and not compared; NumPy and PyTorch disagree there too. They are
# found from eager mode alone, never from the jit result: eager mode re-runs the program
# with every sum moved by +-2*n*u*sum(|x|), and with NaN for a sum whose terms can
# overflow in some order; the elements that then change are left out. Everything else --
# elementwise overflow, NaN and inf propagation, signed zeros -- is still compared.
def _bounded_sum(sign, mean):
    def impl(x, dim, keepdim):
        dt = x.dtype if mean or x.dtype.kind == "f" else np.dtype(np.int64)
        s = np.sum(x, axis=dim, keepdims=keepdim, dtype=dt)
        if dt.kind != "f":
            return s / x.dtype.type(max(x.size // max(s.size, 1), 1)) if mean else s
        n = x.size // max(s.size, 1)
        x64 = x.astype(np.float64)
        finite = np.isfinite(x64)
        kw = {"axis": dim, "keepdims": keepdim}
        pos = np.sum(np.where(finite & (x64 > 0), x64, 0.0), **kw)
        neg = np.sum(np.where(finite & (x64 < 0), x64, 0.0), **kw)
        big = float(np.finfo(dt).max)
        # Non-finite terms make the sum NaN or +-inf in every order.
        may_overflow = ((pos > big) | (neg < -big)) & np.all(finite, **kw)
        u = float(np.finfo(dt).eps) / 2
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = (s.astype(np.float64) + sign * 2 * n * u * (pos - neg)).astype(dt)
            out = np.where(may_overflow, np.nan, out).astype(dt)
            if mean:
                out = (out / dt.type(n)).astype(dt)
        return np.asarray(out)
    return impl


class _SumBound:
    """Eager sums moved to one end of their rounding bound (see above) while active."""

    def __init__(self, sign):
        self.sign = sign

    def __enter__(self):
        from numgrad.ops.registry import REGISTRY
        self.saved = [(REGISTRY[n], REGISTRY[n].impl) for n in ("sum", "mean")]
        for prim, _ in self.saved:
            # Registry rows are frozen records: this probe alone swaps an impl, and puts
            # it back on exit.
            object.__setattr__(prim, "impl", _bounded_sum(self.sign, prim.name == "mean"))

    def __exit__(self, *exc):
        for prim, impl in self.saved:
            object.__setattr__(prim, "impl", impl)


def unstable(ref, probes, dtype):
    """Per result of ``ref`` (values, gradients), the mask of its elements that every
    probe (``ref``'s program re-run with other summation orders) agrees with."""
    if not isinstance(ref, list) or any(not isinstance(p, list) for p in probes):
        return [None] * (len(ref) if isinstance(ref, list) else 4)
    masks = []
    for i, r in enumerate(ref):
        if r is None:
            masks.append(None)
            continue
        r = np.asarray(r)
        ok = np.ones(r.shape, dtype=bool)
        for probe in probes:
            p = probe[i]
            if p is None or np.shape(p) != r.shape:
                continue
            p = np.asarray(p)
            ok &= np.array([same(a, b, dtype) for a, b in zip(r.reshape(-1), p.reshape(-1))],
                           dtype=bool).reshape(r.shape)
        masks.append(ok)
    return masks


def _compare(ref, got, dtype, stable=None):
    if isinstance(ref, Exception) or isinstance(got, Exception):
        if isinstance(ref, Exception) and isinstance(got, Exception):
            return None if type(got) is type(ref) or isinstance(got, type(ref)) else (
                f"eager raised {type(ref).__name__}: {ref}; jit raised "
                f"{type(got).__name__}: {got}")
        if isinstance(got, ng.TracingError):
            return f"REFUSED: jit raised {got}"
        which = "eager" if isinstance(ref, Exception) else "jit"
        err = ref if which == "eager" else got
        return f"only {which} raised {type(err).__name__}: {err}"
    names = ["value", "grad a", "grad b", "grad C"]
    stable = stable or [None] * len(ref)
    for name, r, g, ok in zip(names, ref, got, stable):
        if not same(g, r, dtype, ok):
            return f"{name} differs:\n  eager {r!r}\n  jit   {g!r}"
    return None


def check(prog, backend="cpu", specials=True, stats=None):
    """Run ``prog`` in every mode; return a list of (mode, message) disagreements.
    ``stats`` (a dict) counts the compared and the ill-conditioned (skipped) elements."""
    problems = []
    d1, d2 = data_for(prog, prog.seed, specials), data_for(prog, prog.seed + 1, specials)
    # "cuda": the compiled side runs on a CUDA device (Numba's simulator without one),
    # compared with eager on the CPU, whose sums the conditioning probes can move.
    dev = "cuda" if backend == "cuda" else "cpu"
    kw = {"cpu": {"parallel": False}, "cuda": {}}.get(backend, {"backend": backend})
    ens, jns = _namespace(prog, d1), _namespace(prog, d1, device=dev)
    jf = ng.jit(jns["prog"], **kw)

    def conditioning(fn_of_ns, data, vg=False, mutate=False, source=None, extra=()):
        probes = []
        for sign in (1, -1):
            pns = _namespace(prog, d1, source)  # C as the modes see it: made from d1
            if mutate:
                _mutate(pns)
            with _SumBound(sign):
                probes.append(_run(fn_of_ns(pns), pns, data, vg=vg, extra=extra))
        return probes

    def compare(mode, ref, got, probe):
        stable = unstable(ref, probe, prog.dtype)
        if stats is not None and isinstance(ref, list):
            for r, ok in zip(ref, stable):
                n = 0 if r is None else np.size(r)
                stats["compared"] = stats.get("compared", 0) + n
                if ok is not None:
                    stats["ill-conditioned"] = stats.get("ill-conditioned", 0) + int(
                        n - np.count_nonzero(ok))
        msg = _compare(ref, got, prog.dtype, stable)
        if msg:
            problems.append((mode, msg))

    for mode, data in (("jit", d1), ("jit-again", d2), ("jit-mutated", d2)):
        if mode == "jit-mutated":
            for ns in (ens, jns):
                _mutate(ns)
        ref = _run(ens["prog"], ens, data)
        got = _run(jf, jns, data)
        compare(mode, ref, got, conditioning(lambda ns: ns["prog"], data,
                                             mutate=mode == "jit-mutated"))
    ens, vns = _namespace(prog, d1), _namespace(prog, d1, device=dev)
    vg = ng.jit(ng.value_and_grad(vns["prog"], argnums=(0, 1)), **kw)
    ref = _run(ng.value_and_grad(ens["prog"], argnums=(0, 1)), ens, d1, vg=True)
    got = _run(vg, vns, d1, vg=True)
    compare("jit-vg", ref, got, conditioning(
        lambda ns: ng.value_and_grad(ns["prog"], argnums=(0, 1)), d1, vg=True))
    src = _float_source(prog)
    if src is not None:
        ens, fns = _namespace(prog, d1, src), _namespace(prog, d1, src, dev)
        jf = ng.jit(fns["prog"], **kw)
        raised = False
        for s in FLOAT_VALUES:
            ref = _run(ens["prog"], ens, d1, extra=(s,))
            got = _run(jf, fns, d1, extra=(s,))
            raised = raised or isinstance(ref, Exception)
            compare(f"jit-float S={s}", ref, got, conditioning(
                lambda ns: ns["prog"], d1, source=src, extra=(s,)))
        if not raised and jf.stats.traces != 2:
            problems.append(("jit-float", f"{jf.stats.traces} traces for {len(FLOAT_VALUES)} "
                             "values of S (want 2: S a constant, then traced)"))
    return problems


# jit-float's values of S: a constant first, then traced (its plan made once, reused).
FLOAT_VALUES = (0.75, -1.25, 2.5)


def _mutate(ns):
    with ng.no_grad():
        ns["C"].mul_(-0.5)     # an optimiser step on the captured tensor
    ns["S"] = -1.25            # and the captured scalar rebound


def campaign(start, count, backend="cpu", specials=True, verbose=False, out=sys.stdout,
             stats=None):
    """Run ``count`` programs from seed ``start``; return (ran, failures)."""
    failures = []
    stats = {} if stats is None else stats
    t0 = time.perf_counter()
    for seed in range(start, start + count):
        prog = generate(seed, specials=specials)
        try:
            problems = check(prog, backend, specials, stats)
        except Exception:  # noqa: BLE001 - a crash of the harness itself is a finding too
            problems = [("harness", traceback.format_exc())]
        if problems:
            failures.append((prog, problems))
            if verbose:
                print(f"--- seed {seed}\n{prog.source}", file=out)
                for mode, msg in problems:
                    print(f"  [{mode}] {msg[:600]}", file=out)
        if verbose and (seed - start + 1) % 50 == 0:
            print(f"{seed - start + 1} programs, {len(failures)} failing, "
                  f"{time.perf_counter() - t0:.0f}s", file=out, flush=True)
    return count, failures


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--start", type=int, default=0, help="first seed")
    p.add_argument("--count", type=int, default=200, help="how many programs")
    p.add_argument("--backend", default="cpu",
                   help="cpu (Numba, the default), numpy, or cuda (the simulator without a GPU)")
    p.add_argument("--no-specials", action="store_true", help="finite inputs only")
    a = p.parse_args(argv)
    stats = {}
    ran, failures = campaign(a.start, a.count, a.backend, not a.no_specials, verbose=True,
                             stats=stats)
    modes = 5
    print(f"ran {ran} programs x {modes} jit modes on backend {a.backend}: "
          f"{len(failures)} with disagreements; {stats.get('compared', 0)} result elements, "
          f"{stats.get('ill-conditioned', 0)} of them ill-conditioned (not compared)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""demo: the article's five gradient tools, run eager and through ``@ng.jit``.

Room: the command line (``python -m numgrad demo``). Each case is one small
function of the computation; the compiled column wraps that same function in
``ng.jit``, so the two columns show that compiled code means what eager code
means, error cases included.
"""
from __future__ import annotations

import time
import warnings

import numgrad as ng


def _fmt(t):
    return repr(t).replace("\n", " ")


def case_detach(jit):
    """1. detach(): y = x**2, z = x**3, r = (y + z).sum() -> x.grad is 5s; detach x in z -> 2s."""
    def f(x):
        return (x ** 2 + x ** 3).sum()

    def f_detached(x):
        return (x ** 2 + x.detach() ** 3).sum()

    out = []
    for fn in (f, f_detached):
        x = ng.ones(10, requires_grad=True)
        jit(fn)(x).backward()
        out.append(f"x.grad = {_fmt(x.grad)}")
    return out


def case_inplace_after_detach(jit):
    """1b. detach() shares storage: zeroing the detached alias breaks the backward."""
    def f(a):
        return a.sigmoid()

    a = ng.tensor([1., 2., 3.], requires_grad=True)
    b = jit(f)(a)
    c = b.detach()
    c.zero_()
    try:
        b.sum().backward()
        return ["no error (unexpected)"]
    except RuntimeError as e:
        first = str(e).split(" Hint:")[0]
    a2 = ng.tensor([1., 2., 3.], requires_grad=True)
    b2 = jit(f)(a2)
    b2.clone().detach().zero_()
    b2.sum().backward()
    return [f"RuntimeError: {first}", f"with .clone().detach(): a.grad = {_fmt(a2.grad)}"]


def case_no_grad(jit):
    """2. no_grad(): results do not require grad, so backward() fails."""
    def f(x):
        return (x ** 2 + x ** 3).sum()

    x = ng.ones(10, requires_grad=True)
    with ng.no_grad():
        r = jit(f)(x)
    lines = [f"r.requires_grad = {r.requires_grad}"]
    try:
        r.backward()
    except RuntimeError as e:
        lines.append(f"RuntimeError: {e}")
    return lines


def case_clone(jit):
    """3. clone(): stays in the graph; the clone is not a leaf, so its .grad is None."""
    def f(x):
        xc = x.clone()
        return (xc ** 2 + xc ** 3).sum(), xc

    x = ng.ones(10, requires_grad=True)
    r, xc = jit(f)(x)
    r.backward()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = xc.grad
    warned = bool(w) and "retain_grad" in str(w[0].message)
    return [f"x.grad = {_fmt(x.grad)}", f"x_clone.grad = {g} (UserWarning: {warned})"]


def case_backward(jit):
    """4. backward(): non-scalar needs `gradient`; a second backward needs retain_graph."""
    def f(x):
        return x ** 2

    x = ng.tensor([1., 2., 3.], requires_grad=True)
    y = jit(f)(x)
    lines = []
    try:
        y.backward()
    except RuntimeError as e:
        lines.append(f"y.backward(): RuntimeError: {e}")
    y.backward(ng.ones(3), retain_graph=True)
    y.backward(ng.ones(3))
    lines.append(f"twice with retain_graph: x.grad = {_fmt(x.grad)}")
    try:
        y.backward(ng.ones(3))
    except RuntimeError as e:
        lines.append(f"third time: RuntimeError: {str(e).split(' (or')[0]} ...")
    x = ng.tensor([1., 2., 3.], requires_grad=True)
    (g,) = ng.autograd.grad(jit(lambda t: (t ** 3).sum())(x), x, create_graph=True)
    g.sum().backward()
    lines.append(f"create_graph: d2/dx2 sum(x**3) = {_fmt(x.grad)}")
    return lines


def case_hook(jit):
    """5. register_hook(): v.register_hook(lambda g: g * 2) doubles the gradient."""
    def f(v):
        v.register_hook(lambda g: g * 2)
        return v * 1

    v = ng.tensor([0., 0., 0.], requires_grad=True)
    out = jit(f)(v)
    out.backward(ng.tensor([1., 2., 3.]))
    lines = [f"v.grad = {_fmt(v.grad)}"]
    try:
        ng.tensor([1., 2., 3.]).register_hook(lambda g: g)
    except RuntimeError as e:
        lines.append(f"hook on a tensor without grad: RuntimeError: {e}")
    return lines


CASES = [case_detach, case_inplace_after_detach, case_no_grad, case_clone, case_backward,
         case_hook]


def _eager(fn, **_):
    return fn


def run(compiled=True):
    jit = None
    if compiled:
        try:
            jit = ng.jit
        except (ImportError, AttributeError) as e:
            print(f"(compiled column unavailable: {e})")
    for case in CASES:
        print("=" * 78)
        print(case.__doc__)
        t0 = time.perf_counter()
        eager = case(_eager)
        t_eager = time.perf_counter() - t0
        for line in eager:
            print(f"  eager    | {line}")
        if jit is not None:
            cache = {}

            def cached_jit(fn, **kw):
                # One compiled function per case function, so the second run is warm.
                key = fn.__code__
                if key not in cache:
                    cache[key] = jit(fn, **kw)
                return cache[key]

            t0 = time.perf_counter()
            comp = case(cached_jit)
            t_first = time.perf_counter() - t0
            t0 = time.perf_counter()
            case(cached_jit)
            t_warm = time.perf_counter() - t0
            t0 = time.perf_counter()
            case(_eager)
            t_eager = time.perf_counter() - t0
            for line in comp:
                print(f"  compiled | {line}")
            same = "same" if comp == eager else "DIFFERENT"
            print(f"  -> {same} results | eager {t_eager * 1e3:.2f} ms, compiled "
                  f"{t_warm * 1e3:.2f} ms warm ({t_first:.2f} s first call: trace + compile)")
    return 0


def info():
    import numpy
    print(f"numgrad {ng.__version__}, numpy {numpy.__version__}")
    try:
        import numba
        print(f"numba {numba.__version__}, threads {numba.config.NUMBA_NUM_THREADS}, "
              f"threading layer {numba.config.THREADING_LAYER}")
    except ImportError:
        print("numba not installed")
    try:
        from numgrad.compiler.codegen import cache
        print(f"kernel cache: {cache.cache_dir()}")
    except ImportError:
        pass
    return 0

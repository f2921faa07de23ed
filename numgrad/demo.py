"""demo: the article's five gradient tools, run eager and through ``@ng.jit``.

Room: the command line (``python -m numgrad demo``). Each case is a short piece of
code, printed as it is run: eagerly, as plain code (``jit(fn)(x)`` read as ``fn(x)``),
and then as written, with ``jit = ng.jit`` (the compiled column). Errors and warnings
are printed with their real text, so the two columns show that compiled code means
what eager code means, mistakes included. Times are per run of a case's code: the
first compiled run (trace and compile) apart from the steady state, timed once the
plan's later tiers have compiled.
"""
from __future__ import annotations

import re
import textwrap
import time
import warnings

import numgrad as ng

CASES = [
    ("1. detach(): y = x², z = x³, r = sum(y + z); dr/dx = 2x + 3x² = 5 at x = 1, "
     "2 once z is cut off", """
def f(x):
    return (x ** 2 + x ** 3).sum()

def f_detached(x):
    return (x ** 2 + x.detach() ** 3).sum()   # z = x.detach()³ is out of the graph

for fn in (f, f_detached):
    x = ng.ones(10, requires_grad=True)
    jit(fn)(x).backward()
    show(f"{fn.__name__}: x.grad =", x.grad)
"""),
    ("1b. where detach() breaks: it shares storage, so changing the detached tensor "
     "changes what the backward needs", """
def sigmoid(a):
    return a.sigmoid()                 # its backward reads its output b

a = ng.tensor([1., 2., 3.], requires_grad=True)
b = jit(sigmoid)(a)
c = b.detach()
c.zero_()                              # zeroes b too
try:
    b.sum().backward()
except RuntimeError as e:
    show_error(e)
b = jit(sigmoid)(a)
b.clone().detach().zero_()             # a copy: b is left alone
b.sum().backward()
show("with .clone().detach(): a.grad =", a.grad)
"""),
    ("2. no_grad(): nothing inside records a graph, so there is nothing to backward "
     "through", """
def f(x):
    return (x ** 2 + x ** 3).sum()

x = ng.ones(10, requires_grad=True)
with ng.no_grad():
    r = jit(f)(x)
show("r.requires_grad =", r.requires_grad)
try:
    r.backward()
except RuntimeError as e:
    show_error(e)
"""),
    ("3. clone(): a copy that stays in the graph; gradients pass through it to x, "
     "and the clone, not a leaf, keeps none", """
def f(x):
    x_clone = x.clone()
    return (x_clone ** 2 + x_clone ** 3).sum(), x_clone

x = ng.ones(10, requires_grad=True)
r, x_clone = jit(f)(x)
r.backward()
show("x.grad =", x.grad)
show("x_clone.grad =", x_clone.grad)   # reading it warns
"""),
    ("4. backward(): a scalar needs no argument, anything else needs `gradient`; "
     "the graph is freed unless retain_graph=True", """
def square(x):
    return x ** 2

x = ng.tensor([1., 2., 3.], requires_grad=True)
y = jit(square)(x)
try:
    y.backward()
except RuntimeError as e:
    show_error(e)
y.backward(ng.ones(3), retain_graph=True)
y.backward(ng.ones(3))                 # gradients add up: 2x + 2x
show("x.grad =", x.grad)
try:
    y.backward(ng.ones(3))             # the last call freed the graph
except RuntimeError as e:
    show_error(e)
try:
    jit(square)(ng.tensor([1., 2., 3.])).sum().backward()   # no leaf requires grad
except RuntimeError as e:
    show_error(e)

def cube_sum(t):
    return (t ** 3).sum()

x = ng.tensor([1., 2., 3.], requires_grad=True)
(g,) = ng.autograd.grad(jit(cube_sum)(x), x, create_graph=True)
g.sum().backward()                     # differentiate the gradient again
show("d²/dx² sum(x³) = 6x:", x.grad)
"""),
    ("5. register_hook(): a function called with the gradient, which may replace it; "
     "handle.remove() takes it off", """
def times_one(v):
    return v * 1

v = ng.tensor([0., 0., 0.], requires_grad=True)
handle = v.register_hook(lambda g: g * 2)
jit(times_one)(v).backward(ng.tensor([1., 2., 3.]))
show("with the hook: v.grad =", v.grad)
handle.remove()
v.grad = None
jit(times_one)(v).backward(ng.tensor([1., 2., 3.]))
show("after handle.remove(): v.grad =", v.grad)

def hooked_inside(v):
    h = v * 1
    h.register_hook(lambda g: g * 10)  # on an intermediate, inside the function
    return h * 3

v = ng.tensor([1., 1., 1.], requires_grad=True)
jit(hooked_inside)(v).sum().backward()
show("hook inside the function: v.grad =", v.grad)
try:
    ng.tensor([1., 2., 3.]).register_hook(lambda g: g)
except RuntimeError as e:
    show_error(e)
"""),
]


_JIT_CALL = re.compile(r"\bjit\((\w+)\)")
WARM_RUNS, TIMED_RUNS = 2, 3


def eager_source(source):
    """The case's code as eager code: ``jit(fn)(x)`` is ``fn(x)``."""
    return _JIT_CALL.sub(r"\1", source)


def _one_line(value):
    return " ".join(repr(value).split())


def _run_case(code, jit=None):
    """Run a case's code; return the lines it showed (values, errors and warnings)."""
    lines = []

    def show(label, value):
        lines.append(f"{label} {_one_line(value)}")

    def show_error(exc):
        lines.append(f"{type(exc).__name__}: {exc}")

    def on_warning(message, category, *_args, **_kw):
        lines.append(f"{category.__name__}: {message}")

    ns = {"ng": ng, "show": show, "show_error": show_error}
    if jit is not None:
        ns["jit"] = jit
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = on_warning
        exec(code, ns)
    return lines


def _timed(run):
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def _steady(run):
    """Seconds per run once nothing is left to compile: WARM_RUNS runs first (a plan's
    second call may compile its multi-threaded tier or its joint forward + backward), then
    the best of TIMED_RUNS. Returns (warm-up seconds, steady seconds)."""
    warm = sum(_timed(run) for _ in range(WARM_RUNS))
    return warm, min(_timed(run) for _ in range(TIMED_RUNS))


def _print_lines(tag, lines, width):
    for line in lines:
        chunks = textwrap.wrap(line, width - 13, subsequent_indent="    ") or [""]
        for k, chunk in enumerate(chunks):
            print(f"  {tag if k == 0 else '':8} │ {chunk}")


def _ms(seconds):
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def run(compiled=True, width=100):
    print("numgrad demo: the five gradient tools of the article (detach, no_grad, clone, "
          "backward, register_hook),\neach run as printed: first eagerly, then with the same "
          "functions compiled by @ng.jit; errors are shown as raised.")
    jit = None
    if compiled:
        try:
            jit = ng.jit
        except (ImportError, AttributeError) as e:
            print(f"(compiled column unavailable: {e})")
    if jit is not None:
        print("The compiled column runs the same code with each function passed through "
              "jit = ng.jit\n(one compiled function per Python function, kept across runs); "
              "`jit code` lists the lines that change.\nTimes are per run of a case's code: "
              "its first compiled run traces and compiles (or loads\nkernels from the disk "
              f"cache); steady state is the best of {TIMED_RUNS} runs after {WARM_RUNS} "
              "more, by which\ntime later tiers (multi-threaded kernels, a joint "
              "forward + backward) have compiled too.")
    agree, shown, first_total, warm_total = 0, 0, 0.0, 0.0
    for title, source in CASES:
        tag = title.split(" ")[0]
        eager_src = eager_source(source)
        eager_code = compile(eager_src, f"<demo: {tag} eager>", "exec")
        print("\n" + "─" * width)
        print(title)
        for line in eager_src.strip("\n").splitlines():
            print(f"  code     │ {line}")
        eager = _run_case(eager_code)
        _print_lines("eager", eager, width)
        shown += sum(1 for ln in eager if ln.split(":")[0].endswith(("Error", "Warning")))
        if jit is None:
            continue
        memo = {}

        def cached_jit(fn):
            # One compiled function per function of the case, so a second run is warm.
            if fn.__code__ not in memo:
                memo[fn.__code__] = jit(fn)
            return memo[fn.__code__]

        for line in source.strip("\n").splitlines():
            if _JIT_CALL.search(line):
                print(f"  jit code │ {line}")
        code = compile(source, f"<demo: {tag}>", "exec")
        comp = []
        t_first = _timed(lambda: comp.extend(_run_case(code, cached_jit)))
        t_warm, t_steady = _steady(lambda: _run_case(code, cached_jit))
        _, t_eager = _steady(lambda: _run_case(eager_code))
        first_total += t_first
        warm_total += t_warm
        same = comp == eager
        agree += same
        if same:
            print(f"  compiled │ (the same {len(comp)} line{'s' if len(comp) != 1 else ''})")
        else:
            _print_lines("compiled", comp, width)
        loaded = sum(f.stats.disk_hits for f in memo.values())
        how = "trace + compile" + (f", {loaded} program{'s' if loaded != 1 else ''} loaded from "
                                   "the disk cache" if loaded else "")
        print(f"  {'same' if same else 'DIFFERENT'} in both columns · steady state: eager "
              f"{_ms(t_eager)}, compiled {_ms(t_steady)}\n"
              f"  {'':8}   compiled first run {_ms(t_first)} ({how}), "
              f"next {WARM_RUNS} runs {_ms(t_warm)}")
    print("\n" + "─" * width)
    if jit is None:
        print(f"Summary: {len(CASES)} cases run eagerly; {shown} errors and warnings shown "
              "with their real text.")
        return 0
    print(f"Summary: {agree}/{len(CASES)} cases print the same eager and compiled, "
          f"{shown} errors and warnings included; first runs took {first_total:.1f} s, "
          f"the warm-up runs after them {warm_total:.1f} s.")
    return 0 if agree == len(CASES) else 1


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
        from numgrad.compiler.backends import disk_cache as cache
        print(f"kernel cache: {cache.cache_dir()}")
    except ImportError:
        pass
    from numgrad import devices
    print(f"cuda: {devices.cuda_summary()}")
    return 0

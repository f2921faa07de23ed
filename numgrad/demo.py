"""demo: the article's five gradient tools, run eager and through ``@ng.jit``.

Room: the command line (``python -m numgrad demo``). Each case is a short piece of
code, printed as it is run: once with ``jit`` meaning "leave the function alone"
(the eager column) and once with ``jit = ng.jit`` (the compiled column). Errors
and warnings are printed with their real text, so the two columns show that
compiled code means what eager code means, mistakes included.
"""
from __future__ import annotations

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


def _one_line(value):
    return " ".join(repr(value).split())


def _run_case(code, jit):
    """Run a case's code; return the lines it showed (values, errors and warnings)."""
    lines = []

    def show(label, value):
        lines.append(f"{label} {_one_line(value)}")

    def show_error(exc):
        lines.append(f"{type(exc).__name__}: {exc}")

    def on_warning(message, category, *_args, **_kw):
        lines.append(f"{category.__name__}: {message}")

    ns = {"ng": ng, "jit": jit, "show": show, "show_error": show_error}
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = on_warning
        exec(code, ns)
    return lines


def _print_lines(tag, lines, width):
    for line in lines:
        chunks = textwrap.wrap(line, width - 13, subsequent_indent="    ") or [""]
        for k, chunk in enumerate(chunks):
            print(f"  {tag if k == 0 else '':8} │ {chunk}")


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
    agree, shown, first_total = 0, 0, 0.0
    for title, source in CASES:
        code = compile(source, f"<demo: {title.split(' ')[0]}>", "exec")
        print("\n" + "─" * width)
        print(title)
        for line in source.strip("\n").splitlines():
            print(f"  code     │ {line}")
        t0 = time.perf_counter()
        eager = _run_case(code, lambda fn: fn)
        t_eager = time.perf_counter() - t0
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

        t0 = time.perf_counter()
        comp = _run_case(code, cached_jit)
        t_first = time.perf_counter() - t0
        first_total += t_first
        t0 = time.perf_counter()
        _run_case(code, cached_jit)
        t_warm = time.perf_counter() - t0
        same = comp == eager
        agree += same
        if same:
            print(f"  compiled │ (the same {len(comp)} line{'s' if len(comp) != 1 else ''})")
        else:
            _print_lines("compiled", comp, width)
        print(f"  {'same' if same else 'DIFFERENT'} in both columns · eager {t_eager * 1e3:.1f} ms,"
              f" compiled {t_warm * 1e3:.1f} ms warm, {t_first:.2f} s first run "
              "(trace + compile, or load from the disk cache)")
    print("\n" + "─" * width)
    if jit is None:
        print(f"Summary: {len(CASES)} cases run eagerly; {shown} errors and warnings shown "
              "with their real text.")
        return 0
    print(f"Summary: {agree}/{len(CASES)} cases print the same eager and compiled, "
          f"{shown} errors and warnings included; first runs took {first_total:.1f} s.")
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
        from numgrad.compiler.backends.cpu import cache
        print(f"kernel cache: {cache.cache_dir()}")
    except ImportError:
        pass
    from numgrad import devices
    print(f"cuda: {devices.cuda_summary()}")
    return 0

"""One-way imports (docs/architecture.md): compiler -> autograd -> ops -> tensor, grad_mode,
dtypes.

The compiler room is ``numgrad.compiler`` (``ng.jit`` is a function, so it cannot also be a
submodule name); ``numgrad.jit`` is checked too. Numba itself must not load either.

Importing the eager rooms must not pull in the compiler, checked both at run time (a fresh
interpreter's sys.modules) and statically (no import statement that reaches numgrad.jit).

No import cycle, counting imports inside functions (``test_no_import_cycle``), and no
import from the eager core (tensor, ops, autograd, creation, devices, the CUDA runtime)
into the compiler, nn, optim or distributed.

The backends are packages that do not know each other: ``compiler/backends/cpu`` never
imports ``compiler/backends/cuda`` nor the other way round (what both need lives in
``compiler/backends`` itself). The eager CUDA runtime (``numgrad/cuda``) sits below the
ops, and outside the compiler only the package root names the CUDA backend.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

import numgrad

PKG = Path(numgrad.__file__).resolve().parent


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("modules", [
    ["numgrad.ops", "numgrad.autograd"],
    ["numgrad.ops"],
    ["numgrad.autograd"],
])
def test_eager_rooms_do_not_import_jit(modules):
    code = (
        "import sys, importlib\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(k for k in sys.modules\n"
        "             if k.split('.')[:2] in (['numgrad', 'jit'], ['numgrad', 'compiler'])\n"
        "             or k == 'numba')\n"
        "print('JIT_MODULES=' + ','.join(bad))\n"
    )
    proc = _fresh(code)
    assert proc.returncode == 0, proc.stderr
    assert "JIT_MODULES=\n" in proc.stdout or proc.stdout.strip() == "JIT_MODULES=", proc.stdout


def test_jit_still_reachable_from_package():
    proc = _fresh("import numgrad as ng; assert callable(ng.jit); print('ok')")
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def _resolve(module_file: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    rel = module_file.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    else:
        parts = parts[:-1]  # the module's package
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_compiler(mod: str) -> bool:
    return any(mod == r or mod.startswith(r + ".") for r in ("numgrad.jit", "numgrad.compiler"))


def _jit_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_compiler(alias.name):
                    found.append(f"{path.name}:{node.lineno} import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(path, node)
            if _is_compiler(mod):
                found.append(f"{path.name}:{node.lineno} from {mod}")
            elif mod == "numgrad":
                for alias in node.names:
                    if alias.name in ("jit", "compiler"):
                        found.append(f"{path.name}:{node.lineno} from numgrad import jit")
    return found


def _eager_files():
    files = []
    for room in ("ops", "autograd"):
        d = PKG / room
        if d.is_dir():
            files += sorted(d.rglob("*.py"))
        elif (PKG / f"{room}.py").exists():
            files.append(PKG / f"{room}.py")
    for name in ("tensor.py", "grad_mode.py", "dtypes.py"):
        if (PKG / name).exists():
            files.append(PKG / name)
    return files


def test_eager_sources_have_no_jit_imports():
    files = _eager_files()
    assert files, "no eager-room sources found"
    bad = [hit for f in files for hit in _jit_imports(f)]
    assert bad == []


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names (lazy ones in functions too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(path, node)
            found.append((node.lineno, mod))
            # ``from numgrad.compiler.backends import cuda``: the submodule is the import.
            found += [(node.lineno, f"{mod}.{alias.name}") for alias in node.names]
    return found


def _under(mod: str, pkg: str) -> bool:
    return mod == pkg or mod.startswith(pkg + ".")


BACKENDS = PKG / "compiler" / "backends"
CPU, CUDA = "numgrad.compiler.backends.cpu", "numgrad.compiler.backends.cuda"


@pytest.mark.parametrize("room, other", [(CPU, CUDA), (CUDA, CPU)])
def test_backends_do_not_import_each_other(room, other):
    files = sorted((BACKENDS / room.rsplit(".", 1)[1]).rglob("*.py"))
    assert len(files) > 3, f"no sources found for {room}"
    bad = [f"{f.relative_to(PKG)}:{line} imports {mod}" for f in files
           for line, mod in _imports(f) if _under(mod, other)]
    assert bad == []


def test_generated_kernels_import_only_their_own_backend():
    """The helper modules named in generated source belong to the backend that renders it."""
    cpu = (BACKENDS / "cpu" / "renderer.py").read_text()
    cuda = (BACKENDS / "cuda" / "renderer.py").read_text()
    assert "numgrad.compiler.backends.cuda" not in cpu
    assert "numgrad.compiler.backends.cpu" not in cuda


RUNTIME = "numgrad.cuda"
# What the eager CUDA runtime may import of numgrad: itself and the leaves below the tensor.
RUNTIME_BELOW = ("numgrad.cuda", "numgrad.config", "numgrad.device_type", "numgrad.tracing_hook")


def test_the_cuda_runtime_imports_nothing_above_it():
    """``numgrad/cuda`` (device, allocator, payload, eager interpreter, launches) sits below
    the tensor and the ops: what it needs from above is registered into it."""
    files = sorted((PKG / "cuda").rglob("*.py"))
    assert len(files) > 5, "no sources found for the CUDA runtime"
    bad = [f"{f.relative_to(PKG)}:{line} imports {mod}" for f in files
           for line, mod in _imports(f)
           if _under(mod, "numgrad") and not any(_under(mod, ok) for ok in RUNTIME_BELOW)]
    assert bad == []


def test_the_compilers_cuda_backend_is_reached_only_from_the_package():
    """Outside the compiler only ``numgrad/__init__.py`` names the CUDA backend: it hands the
    runtime a loader for the backend's one-op programs, called on the first eager compile."""
    importers = sorted(
        str(f.relative_to(PKG.parent)) for f in PKG.rglob("*.py")
        if not f.is_relative_to(PKG / "compiler")
        and any(_under(mod, CUDA) for _, mod in _imports(f)))
    assert importers == ["numgrad/__init__.py"]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(f): f for f in sorted(PKG.rglob("*.py"))}


@functools.lru_cache(maxsize=1)
def _graph() -> dict[str, dict[str, list[int]]]:
    """module -> {imported module: [line, ...]}: every import statement of numgrad/, those
    inside functions too. A package counts as a module (its ``__init__``); an import of
    ``a.b.c`` is an edge to the longest prefix of it that is a module, and ``from a import
    b`` names both ``a`` and ``a.b``."""
    graph = {}
    for mod, path in MODULES.items():
        out = graph.setdefault(mod, {})
        for line, target in _imports(path):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != mod:
                out.setdefault(target, []).append(line)
    return graph


def _strongly_connected(graph) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}, "d": {"a": [4]}}
    assert sorted(len(c) for c in _strongly_connected(graph)) == [1, 3]


def test_no_import_cycle():
    """No two modules of numgrad import each other, directly or around a loop, not even
    inside a function: what a lower module needs from a higher one is entered into it
    (docs/architecture.md, "The rule")."""
    graph = _graph()
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1]
    where = [f"{a} -> {b} (line {', '.join(map(str, graph[a][b]))})"
             for c in cycles for a in c for b in graph[a] if b in c]
    assert cycles == [], "import cycles:\n" + "\n".join(where)


LOWER = ("numgrad.tensor", "numgrad.ops", "numgrad.autograd", "numgrad.creation",
         "numgrad.devices", RUNTIME)
UPPER = ("numgrad.compiler", "numgrad.nn", "numgrad.optim", "numgrad.distributed")


def test_no_import_climbs_from_the_eager_core():
    """Tensor, ops, autograd, creation, devices and the CUDA runtime never import the
    compiler, nn, optim or distributed (not even inside a function)."""
    bad = [f"{a} -> {b}" for a, targets in sorted(_graph().items())
           if any(_under(a, low) for low in LOWER)
           for b in targets if any(_under(b, up) for up in UPPER)]
    assert bad == []


# The programs at the top, which may use the package as a user does.
ENTRY_POINTS = {"numgrad/__init__.py", "numgrad/__main__.py", "numgrad/demo.py",
                "numgrad/notebooks.py"}


def test_library_modules_import_the_defining_module_not_the_package():
    """``import numgrad`` / ``from numgrad import x`` in a library module reaches
    numgrad/__init__.py, which imports everything: a module imports what it uses from the
    module that defines it."""
    bad = [f"{f.relative_to(PKG.parent)}:{line}" for f in MODULES.values()
           if str(f.relative_to(PKG.parent)) not in ENTRY_POINTS
           for line, mod in _imports(f) if mod == "numgrad"]
    assert bad == []


def test_ng_cuda_answers_without_numba_cuda():
    """``ng.cuda`` is the runtime package; ``is_available`` and ``device_count`` answer
    without importing numba.cuda where no NVIDIA driver is present (as torch answers)."""
    import os
    if any(os.path.exists(f) for f in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")):
        pytest.skip("an NVIDIA driver is present: the probe asks numba.cuda")
    code = ("import sys, numgrad as ng\n"
            "print(ng.cuda.is_available(), ng.cuda.device_count(),"
            " 'numba.cuda' in sys.modules, 'numba' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "0", "False", "False"]


def _reads_numgrad_env(node) -> bool:
    # os.environ.get("NUMGRAD_X"), os.getenv("NUMGRAD_X"), os.environ["NUMGRAD_X"] (a read)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and (
            (node.func.attr == "get" and isinstance(node.func.value, ast.Attribute)
             and node.func.value.attr == "environ") or node.func.attr == "getenv"):
        key = node.args[0]
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
            and isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
        key = node.slice
    else:
        return False
    return isinstance(key, ast.Constant) and str(key.value).startswith("NUMGRAD_")


def test_one_config_channel():
    """Every NUMGRAD_* setting is read through ``numgrad.config`` (declared once, parsed
    with one error text), and no module holds an on/off switch of its own (``ENABLED =
    True``): a switch is a config flag or a plain parameter."""
    env = [f"{f.relative_to(PKG)}:{n.lineno}" for f in MODULES.values()
           if f.name != "config.py" or f.parent != PKG
           for n in ast.walk(ast.parse(f.read_text())) if _reads_numgrad_env(n)]
    switches = [f"{f.relative_to(PKG)}:{n.lineno}" for f in MODULES.values()
                for n in ast.parse(f.read_text()).body
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                and isinstance(n.value.value, bool)
                and any(isinstance(t, ast.Name) and t.id.isupper()
                        and any(w in t.id for w in ("ENABLE", "DISABLE", "USE_"))
                        for t in n.targets)]
    assert (env, switches) == ([], [])


def test_test_file_basenames_are_unique():
    # tests/ has no packages: pytest imports each file by its basename, so two files of one
    # name collide (and a Dask worker unpickling a test's function may import the other).
    names = {}
    for path in Path(__file__).parent.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path))
    assert not {n: p for n, p in names.items() if len(p) > 1}

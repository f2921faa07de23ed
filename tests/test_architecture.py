"""One-way imports (docs/architecture.md): compiler -> autograd -> ops -> tensor, grad_mode,
dtypes.

The compiler room is ``numgrad.compiler`` (``ng.jit`` is a function, so it cannot also be a
submodule name); ``numgrad.jit`` is checked too. Numba itself must not load either.

Importing the eager rooms must not pull in the compiler, checked both at run time (a fresh
interpreter's sys.modules) and statically (no import statement that reaches numgrad.jit).

The backends are packages that do not know each other: ``compiler/backends/cpu`` never
imports ``compiler/backends/cuda`` nor the other way round (what both need lives in
``compiler/backends`` itself). The eager CUDA runtime (``numgrad/cuda``) sits below the
ops, and outside the compiler only the package root names the CUDA backend.
"""

from __future__ import annotations

import ast
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


def test_the_ops_room_never_imports_nn_optim_or_distributed():
    # Not even inside a function: Tensor.softmax and log_softmax are ops composites that
    # nn.functional re-exports, so the ops room needs nothing from above it.
    bad = [(str(f.relative_to(PKG)), line, mod)
           for f in sorted((PKG / "ops").rglob("*.py")) + [PKG / "tensor.py"]
           for line, mod in _imports(f)
           if any(_under(mod, f"numgrad.{room}") for room in ("nn", "optim", "distributed"))]
    assert bad == []

"""backends.cpu.build: rendered Numba source -> compiled kernels, in tiers, with a fallback.

Room: compiler. ``build`` picks how a rendered schedule gets machine code:

- a schedule whose every loop is an ``llvm.body`` body skips Numba: ``llvm.kernel``
  builds its kernels with llvmlite (serial at the first call, on Numba's threading layer
  from the second, no compile between); the rendered Numba source is what
  ``compiled.source`` shows for it;
- otherwise Numba compiles the module (``cache.load_module``, verified on disk). With
  ``parallel="auto"`` and a cold cache the first call gets the serial tier and the
  Program compiles the prange tier at its second call (``prange_tier``), unless the plan
  is shape-generic and no loop would run threaded at its shapes;
- a module Numba cannot compile runs on the NumPy reference backend, with a warning: a
  codegen gap must never reach the user as a Numba traceback.

``load`` binds the module's kernels into a ``program.Program``. This module is the CPU
backend (``backends.Backend``: ``render``, ``build``, ``load``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numgrad.compiler.progress as _progress
from numgrad.compiler.backends.cpu import cache as _cache
import numgrad.malloc_tuning as _malloc
from numgrad.compiler.backends.cpu import omp as _omp
from numgrad.compiler.backends.cpu.llvm import kernel as _llvm_kernel
from numgrad.compiler.backends.cpu.program import Program, first_line
from numgrad.compiler.backends.cpu.renderer import render_program
from numgrad.compiler.schedule import Kernel


@dataclass(frozen=True, kw_only=True)
class Built:
    """A compiled kernel module, or a finished Program (llvmlite kernels, a fallback)."""
    rendered: object
    program: object = None
    module: object = None
    disk_hit: bool = False
    upgrade: object = None     # compiles the prange tier at the second call


SCHEDULED = True
SHAPE_GENERIC = True
# A generic plan's constants computed from shapes (a mean's count) are kernel inputs,
# bound per plan by the Program, so the source is the same for every shape.
SHAPE_CONSTANT_INPUTS = True


def render(sched, options):
    _malloc.tune()
    return render_program(sched, options)


def build(rendered, options):
    sched = rendered.sched
    kernels = sched.kernels
    verbose, use_disk = options.verbose, options.cache  # cache=False: nothing read or written
    source, sources = rendered.source, rendered.sources
    # Tiered compile: parallel=True costs Numba more per kernel (its parfors passes:
    # docs/design-notes.md, "Tiers"), so with parallel="auto" a cold cache first gets the
    # serial tier (prange runs as range; the chunked loops keep the results bit-identical),
    # and the Program compiles the prange tier at its second call. A call made once never
    # pays for threads; a kernel built before loads at once.
    par = any(k.parallel for k in kernels)
    built = use_disk and _cache.is_built(source)
    tiered = par and options.parallel == "auto" and not built
    # A shape-generic plan decides per loop at run time whether to thread: where no loop
    # would at this plan's shapes (a small batch), the serial tier is its final one, and
    # the prange tier is compiled by the first plan whose shapes need it.
    upgrade = prange_tier(sources, verbose, use_disk) if tiered and _threads_pay(sched) else None
    if kernels and (tiered or not par or options.parallel is True):
        # Without Numba where every loop can be an llvm.body body (backends.cpu.llvm.kernel):
        # serial kernels, which go multi-threaded at the second call (at once with
        # parallel=True) on Numba's threading layer, without a compile.
        prog = _llvm_kernel.program(sched, _steps(sched), options, "\n\n".join(sources))
        if prog is not None:
            return Built(rendered=rendered, program=prog)
    serial = rendered.serial(options) if tiered else source
    if par and not tiered:
        _omp.tune()
    try:
        if rendered.chunk_fns:
            _cache.load_module(rendered.chunk_source, verbose=verbose, use_disk=use_disk)
        _progress.note(options.role, _cache.module_name(serial), [k.name for k in kernels])
        module, disk_hit = _cache.load_module(serial, verbose=verbose, use_disk=use_disk)
    except Exception as exc:  # a codegen gap must never reach the user as a Numba traceback
        return Built(rendered=rendered,
                     program=_fallback(sched.graph, options, "\n\n".join(sources), exc))
    return Built(rendered=rendered, module=module, disk_hit=disk_hit, upgrade=upgrade)


def load(built, options):
    if built.program is not None:
        return built.program
    rendered, module = built.rendered, built.module
    sched = rendered.sched
    kernels = sched.kernels
    for k in kernels:
        k.fn = getattr(module, k.name)
    disk_hit = built.disk_hit if kernels else False
    prog = Program(sched.graph, _steps(sched), module, "\n\n".join(rendered.sources), disk_hit,
                   built.upgrade)
    prog.schedule = sched
    prog.modules = (module.__name__,) + ((_cache.module_name(rendered.chunk_source),)
                                         if rendered.chunk_fns else ())
    return prog


def prange_tier(sources, verbose, use_disk):
    """The upgrade (program.Program) to the prange kernels of ``sources`` (the chunk
    functions' module first, if any; the kernels' module last)."""
    def upgrade(prog):
        _omp.tune()
        if verbose:
            print("[numgrad.jit] second call: compiling the multi-threaded (prange) tier")
        _progress.note("tier", _cache.module_name(sources[-1]),
                       [st.name for kind, st in prog.steps if kind == "kernel"])
        for source in sources:
            module, _ = _cache.load_module(source, verbose=verbose, use_disk=use_disk)
        for kind, st in prog.steps:
            if kind == "kernel":
                st.fn = getattr(module, st.name)
        prog.module = module
        prog.modules = tuple(_cache.module_name(s) for s in reversed(sources))
    return upgrade


def _threads_pay(sched):
    """Whether some loop of ``sched`` runs threaded at the shapes it was built for."""
    for k in sched.kernels:
        for b in k.body:
            if getattr(b, "parallel", False) and (not b.runtime_size or b.work >= sched.min_work):
                return True
    return False


def _steps(sched):
    return [("kernel", s) if isinstance(s, Kernel) else ("python", s.eqn) for s in sched.steps]


def _fallback(graph, options, source, exc):
    import warnings

    import numgrad.compiler.backends.reference as reference
    first = first_line(exc)
    warnings.warn(f"numgrad could not compile a fused kernel for {options.name!r} ({first}); "
                  "running this graph with the NumPy reference backend instead",
                  RuntimeWarning, stacklevel=3)
    prog = reference.load(graph, options)
    prog.source = f"# fused kernel failed to compile: {first}\n{source}"
    return prog

"""compiler.backends.cuda: the CUDA backend (``numba.cuda`` kernels).

Room: compiler. ``renderer`` spells a Schedule as ``numba.cuda`` kernels (``matmul_kernel``
and ``blas`` for matmul), ``cache`` loads them through the verified disk cache,
``program`` runs them, ``scalar`` holds their device functions, ``ptx`` compiles them for
a real GPU without one, ``one_op`` builds the eager runtime's one-op programs. It stands
on the eager CUDA runtime below the ops (``numgrad.cuda``: device, allocator, payload,
launches), which it imports downward; nothing here imports ``backends.cpu``.
"""
from __future__ import annotations

SCHEDULED = True
SHAPE_GENERIC = True    # a second shape renders kernels that take their extents as arguments
# (and every one-element constant, a mean's count among them: renderer.Values), so the
# schedule keeps constants computed from shapes as literals for it to pass.
SHAPE_CONSTANT_INPUTS = False


# The backend's stages (backends.Backend), imported when first called: ``numgrad.devices``
# imports ``device`` and ``array`` without the renderer.
def render(sched, options):
    from numgrad.compiler.backends.cuda import renderer
    return renderer.render(sched, options)


def build(rendered, options):
    """The rendered module loaded (its kernels compiled, or their cubins read from the
    verified disk cache): ``(schedule, steps, source, module, disk_hit)``."""
    import numgrad.compiler.progress as progress
    from numgrad.compiler.backends.cuda import cache
    sched, steps, source, kernels = rendered
    progress.note(options.role, cache.module_name(source), kernels)
    module, disk_hit = cache.load_module(source, verbose=options.verbose,
                                         use_disk=options.cache)
    return sched, steps, source, module, disk_hit


def load(built, options):
    from numgrad.compiler.backends.cuda.program import Program
    return Program(*built)

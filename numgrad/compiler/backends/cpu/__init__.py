"""compiler.backends.cpu: fused Numba (and llvmlite) kernels for the CPU.

Room: compiler. ``renderer`` spells a Schedule as Numba source; ``build`` turns it into a
Program (tiers, the llvmlite path in ``llvm/``, the fallback); ``program`` runs it;
``scalar``, ``scalar_vec``, ``accumulate_ir``, ``arrays_ir`` are what kernels import;
``cache`` and ``numba_load`` keep compiled modules on disk; ``malloc`` and ``omp`` tune
the process. ``build`` is the backend (``backends.Backend``). Nothing here imports
``backends.cuda``.
"""

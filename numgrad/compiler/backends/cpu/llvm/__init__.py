"""compiler.backends.cpu.llvm: the llvmlite path — loop bodies and kernels as LLVM IR.

Room: compiler. ``body`` writes long loop bodies as vectorised IR, ``kernel`` builds whole
kernels from them without Numba, ``vmath`` holds the vector math they call (and
``vmath_numba`` the same bodies for Numba kernels), ``attrs`` the function attributes
Numba has no option for.
"""

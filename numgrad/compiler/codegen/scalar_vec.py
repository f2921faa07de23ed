"""codegen.scalar_vec: ``scalar`` with vectorisable transcendentals from ``vmath``.

Room: compiler. A kernel that imports from here keeps its loops SIMD through
exp/log/tanh/sigmoid/sin/cos (about 1 ns per element instead of 6-18 ns of
scalar libm), at the price of a slower first compile (the disk cache pays it
once per machine).
"""
from numgrad.compiler.codegen.scalar import *  # noqa: F401,F403
from numgrad.compiler.codegen.vmath import exp, log, tanh, sigmoid, sin, cos  # noqa: F401

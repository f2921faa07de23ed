"""config: every ``NUMGRAD_*`` environment variable, declared once and read when asked.

Room: core (imports nothing of numgrad). A flag is read each time its value is asked
for (``config.get("NUMGRAD_SPECULATE")``), never at import, so a test or a notebook can
set it after ``import numgrad``. ``python -m numgrad info`` lists them all with their
current values. A value that does not parse raises ValueError naming the variable.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

_TRUE = ("1", "on", "yes", "true")
_FALSE = ("0", "off", "no", "false")


@dataclass(frozen=True, kw_only=True)
class Flag:
    name: str
    type: type          # bool, int, float or str
    default: object     # None: computed where it is used (see doc)
    doc: str
    choices: tuple = ()  # str flags: the values it accepts (empty: any)

    def parse(self, text):
        if self.type is bool:
            low = text.strip().lower()
            if low in _TRUE or low in _FALSE:
                return low in _TRUE
            raise ValueError(f"{self.name}={text!r}: expected one of "
                             f"{', '.join(_TRUE + _FALSE)}")
        if self.choices:
            low = text.strip().lower()
            if low not in self.choices:
                raise ValueError(f"{self.name}={text!r}: expected one of "
                                 f"{', '.join(self.choices)}")
            return low
        try:
            return self.type(text)
        except ValueError:
            raise ValueError(f"{self.name}={text!r}: expected a {self.type.__name__}") \
                from None


FLAGS = {f.name: f for f in (
    Flag(name="NUMGRAD_CACHE_DIR", type=str, default=None,
         doc="kernel cache directory (default $XDG_CACHE_HOME/numgrad or ~/.cache/numgrad)"),
    Flag(name="NUMGRAD_CACHE_MAX_MB", type=float, default=1024.0,
         doc="size over which the least recently used cache entries are deleted"),
    Flag(name="NUMGRAD_VECTOR_MATH", type=bool, default=True,
         doc="default of ng.jit(vector_math=): vectorised exp/log/tanh/sigmoid/sin/cos"),
    Flag(name="NUMGRAD_LLVM_BODY", type=bool, default=True,
         doc="render long flat loop bodies as LLVM IR (off: Numba's loops, for comparison)"),
    Flag(name="NUMGRAD_LLVM_KERNEL", type=bool, default=True,
         doc="build kernels made only of LLVM IR bodies with llvmlite, without Numba"),
    Flag(name="NUMGRAD_SPECULATE", type=bool, default=True,
         doc="run forward and backward in one pass for `loss = f(x); loss.backward()`"),
    Flag(name="NUMGRAD_LIGHT_LOAD", type=bool, default=True,
         doc="load cached kernels without Numba's whole-registry refresh"),
    Flag(name="NUMGRAD_MALLOC_TUNING", type=bool, default=True,
         doc="set glibc malloc's thresholds before the first compile or large eager array"),
    Flag(name="NUMGRAD_OMP_TUNING", type=bool, default=True,
         doc="set libgomp's spin count before Numba's threads start"),
    Flag(name="NUMGRAD_PROGRESS", type=bool, default=True,
         doc="print what is compiling when a compile takes longer than the delay"),
    Flag(name="NUMGRAD_PROGRESS_DELAY", type=float, default=1.0,
         doc="seconds a compile runs before its progress line is printed"),
    Flag(name="NUMGRAD_TRACEBACK_FILTERING", type=bool, default=True,
         doc="drop numgrad's own frames from the tracebacks of errors in user code"),
    Flag(name="NUMGRAD_LOG_RECOMPILES", type=bool, default=False,
         doc="print why each @ng.jit call traces again: the guard that failed, old and new "
             "(as verbose=True does; TORCH_LOGS=recompiles in PyTorch)"),
    Flag(name="NUMGRAD_DEBUG_PASSES", type=bool, default=False,
         doc="print the graph after each compiler pass"),
    Flag(name="NUMGRAD_CUDA_CACHE_MAX_BYTES", type=float, default=None,
         doc="cap on idle bytes the CUDA allocator keeps cached (default: no cap)"),
    Flag(name="NUMGRAD_CUDA_MATMUL", type=str, default="auto", choices=("auto", "cublas", "kernel"),
         doc="CUDA matmul: cuBLAS through nvmath-python where it loads (auto), or forced"),
    Flag(name="NUMGRAD_PTX_ALL", type=bool, default=False,
         doc="tests: compile every CUDA kernel the session rendered to PTX, not a sample"),
)}


def get(name):
    """The value of flag ``name`` now (its default when unset or empty)."""
    flag = FLAGS[name]
    text = os.environ.get(name)
    return flag.default if text is None or text == "" else flag.parse(text)


def describe():
    """``[(name, value now or the error it raises, doc)]`` for every flag."""
    rows = []
    for name, flag in FLAGS.items():
        try:
            value = get(name)
        except ValueError as exc:
            value = f"invalid: {exc}"
        rows.append((name, "(default)" if value is None else value, flag.doc))
    return rows

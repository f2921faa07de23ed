"""backends.cpu.llvm.attrs: LLVM function attributes that Numba has no option for.

Room: compiler. (No Numba import here: the IR modules use it, and ``llvm.kernel``
builds kernels without Numba; ``noalias_args`` lives with the kernel helpers, in
``scalar``.) Two things a generated kernel wants from LLVM that ``@njit`` cannot say:

* ``"prefer-vector-width"="512"`` on functions that call the vector math
  (``llvm.vmath`` tags its callers while lowering them);
* ``noalias`` on the data pointers of a loop function's array arguments:
  ``noalias_args()``, called first thing in the function. A fused loop that
  writes several arrays is otherwise left scalar, because LLVM cannot prove that
  arrays from ``np.empty`` do not overlap the inputs or each other and gives up on
  the runtime checks (docs/design-notes.md, "noalias"; in a parfor Numba adds the same
  attribute after its own alias analysis).
  numgrad's kernels only ever write arrays they allocated, so no array an
  argument points to is written through another argument.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir.values import FunctionAttributes


class AttrsWithStrings(FunctionAttributes):
    """llvmlite only knows enum attributes; this adds "key"="value" ones."""

    extra = ()

    def __bool__(self):  # llvmlite prints the attributes only of a non-empty set
        return bool(self.extra) or super().__len__() > 0

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + list(self.extra)


def add_string_attribute(fn, text):
    """Add ``"key"="value"`` (given as that text) to an llvmlite function, once."""
    attrs = fn.attributes
    if not isinstance(attrs, AttrsWithStrings):
        tagged = AttrsWithStrings(list(attrs))
        tagged.alignstack = attrs.alignstack
        tagged.personality = attrs.personality
        fn.attributes = attrs = tagged
    if text not in attrs.extra:
        attrs.extra = tuple(attrs.extra) + (text,)


def declare(module, fnty, name):
    """The function ``name`` of ``module``, declared with ``fnty`` if it is not there yet."""
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)

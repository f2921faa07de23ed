"""ops.cuda_ops: the ops' part of the eager CUDA interpreter.

Room: ops. The interpreter (``numgrad.cuda.eager``) sits below the ops, so it cannot name
them: imported with ``numgrad.ops``, this module registers what it uses, the device-move
primitive (a copy, no kernel), the dtype cast (``CudaArray.astype``) and the view record
of a detached alias.
"""
from __future__ import annotations

from numgrad.cuda import eager as cuda_eager
import numgrad.ops.views as views
from numgrad.ops.device_copy import to_device
from numgrad.ops.elementwise import to_dtype


def _record_alias(tensor, out):
    # ``out = tensor.detach()`` shares the payload: an in-place op on either writes the memory
    # both read, so it is recorded as a view, as a traced alias is (ops.inplace).
    views.record(out, tensor, views.DETACH, {})


cuda_eager.INTERPRETER.register(move=to_device, cast=to_dtype, record_alias=_record_alias)

"""ops: the op registry and every op's single definition, one module per family.

Room: ops. Imports tensor, dtypes, grad_mode and autograd.graph; never jit.
``REGISTRY`` maps primitive names to their ``Primitive`` (impl, shape rule,
vjp rules, lowering); the functions below are the public spellings.
"""
from numgrad.ops.registry import (REGISTRY, HELPERS, Primitive, Api, Helper, defop, register,
                                  unregister)
from numgrad.ops.dispatch import apply, evaluate, sum_to, broadcast_shapes
from numgrad.ops.elementwise import where
# The public spellings of the rows: documented functions generated from them (ops.api).
from numgrad.ops.api import *  # noqa: F401,F403
from numgrad.ops.reduction import sum, mean, amax, amin, max, min, argmax, argmin
from numgrad.ops.layout import (
    reshape, view, flatten, squeeze, unsqueeze, permute, transpose, t, expand, broadcast_to,
    cat, stack,
)
from numgrad.ops.indexing import getitem, index_put
from numgrad.ops.linalg import matmul, bmm
from numgrad.ops.logical import all, any, equal
from numgrad.ops.sorting import sort, argsort, topk
from numgrad.ops.einsum import einsum
from numgrad.ops.methods import to
from numgrad.ops import inplace  # noqa: F401  (registers fill/copy)
from numgrad.ops import device_copy  # noqa: F401  (registers to_device)
from numgrad.ops import structural  # registers detach and hook
from numgrad.ops import index_check  # noqa: F401  (registers check_targets)
from numgrad.ops import cuda_ops  # noqa: F401  (the ops' part of the eager CUDA interpreter)
from numgrad.ops.composites import (
    softplus, gelu, leaky_relu, elu, silu, var, std, norm, prod, cumsum, flip, roll,
    index_select, gather, scatter_add, masked_fill, narrow, split, chunk, unbind, repeat, tile,
    tril, triu, isclose, allclose,
)

concatenate, concat = cat, cat


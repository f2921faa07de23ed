"""numgrad: PyTorch's gradient semantics for NumPy, compiled with Numba.

>>> import numgrad as ng
>>> x = ng.ones(10, requires_grad=True)
>>> (x ** 2 + x ** 3).sum().backward()
>>> x.grad[0]
tensor(5.)
"""
from numgrad.dtypes import dtype, float32, float64, int64, int32, bool_ as bool  # noqa: A001
from numgrad.grad_mode import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,
                               inference_mode, is_inference_mode_enabled)
from numgrad.tensor import Tensor, device
from numgrad.creation import (tensor, as_tensor, from_numpy, zeros, ones, empty, full, rand,
                              randn, randint, arange, linspace, zeros_like, ones_like, empty_like,
                              full_like, rand_like, randn_like, manual_seed, eye, randperm)
from numgrad.printing import set_printoptions
from numgrad.ops.api import *  # noqa: F401,F403,A004  (every registry row's public function)
from numgrad.ops import (sum, mean, amax,
                         amin, max, min, argmax, argmin, reshape, flatten, squeeze, unsqueeze,
                         permute, transpose, t, expand, broadcast_to, cat, stack, matmul,
                         concatenate, concat, var, std, norm, prod,
                         cumsum, flip, roll, index_select, gather, scatter_add, masked_fill, narrow,
                         split, chunk, unbind, tile, tril, triu, isclose, allclose)
from numgrad.ops import all, any, equal, bmm, einsum, sort, argsort, topk  # noqa: A004
from numgrad import autograd, nn, optim, utils, viz
import numgrad.autograd.functional, numgrad.autograd.forward_ad  # noqa: E401,F401  (ng.autograd.*)
from numgrad.ops.composites import softmax, log_softmax, logsumexp
from numgrad.errors import TracingError
from numgrad.dlpack import from_dlpack
from numgrad.serialization import save, load
from numgrad import profiler

from numgrad.ops.products import mm, mv, addmm, baddbmm
from numgrad.size import Size
from numgrad.defaults import (set_default_dtype, get_default_dtype, set_default_device,
                              get_default_device)
from numgrad import accelerator
from numgrad import cuda
from numgrad.cuda import eager as _cuda_eager
from numgrad.ops import window_kernels as _window_kernels
from numgrad.ops.masked import masked_select, nonzero, argwhere, unique
from numgrad.ops.movedim import movedim, moveaxis
from numgrad.ops.dist import dist
from numgrad.ops.bernoulli import bernoulli
from numgrad.ops.small_math import (isfinite, isnan, isinf, floor, ceil, trunc, frac, square,
                                    reciprocal, rsqrt, lerp, addcmul, addcdiv, dot, outer,
                                    numel, is_tensor, detach)
from numgrad.ops.diagonals import diagonal, diag_embed, diag, trace, diagflat, diagonal_scatter
from numgrad.ops.matrices import (det, logdet, inverse, pinverse, matrix_power, cholesky_solve,
                                  cholesky_inverse, matrix_exp,
                                  slogdet_top as slogdet, cholesky_top as cholesky, svd_top as svd,
                                  cross_top as cross)
from numgrad import linalg
from numgrad.ops import keywords as _keywords
_keywords.install(globals())  # out= and axis= on the public functions, as PyTorch's take them
from numgrad.ops import inplace_functions as _inplace_functions
_inplace_functions.install_methods(Tensor, globals())  # x.floor_() and the composites' kin
_inplace_functions.install_shape_methods(Tensor)  # x.unsqueeze_(0), x.t_()
globals().update(_inplace_functions.functions(Tensor))  # torch.sin_(x) and its family

float = float32  # noqa: A001  (PyTorch spells the default float dtype this way too)
double = float64
long = int64
int = int32  # noqa: A001  (torch.int is int32)
from numgrad.dtypes import int16, int8, uint8, promote_types, result_type  # noqa: E402
short = int16

__version__ = "0.1.0"


def _cuda_op_compiler():
    # The eager CUDA runtime (numgrad.cuda, below the ops) has its one-op kernels compiled by
    # the compiler's CUDA backend (above them); the package, above both, joins them: the
    # runtime calls this on its first compile, so CPU-only use never imports the compiler.
    from numgrad.compiler.backends.cuda import one_op
    return one_op


_cuda_eager.load_compiler = _cuda_op_compiler


def _window_loops_loader(source):
    # The ops' window loops (below the compiler) load through the compiler's verified disk
    # cache; the package, above both, joins them on the loops' first use.
    from numgrad.compiler.backends.cpu import window_loops
    return window_loops.load(source)


_window_kernels.load_module = _window_loops_loader


def _lstm_step_kernels(dtype):
    # ops.recurrent's LSTM layer runs its steps' gate arithmetic as the CPU backend's compiled
    # loops (vectorised vector math, in the compiler room): joined here, like the CUDA
    # runtime's compiler, so the compiler and Numba load on the first layer run, not before.
    from numgrad.compiler.backends.cpu import lstm_steps
    return lstm_steps.kernels(dtype)


from numgrad.ops import recurrent as _recurrent  # noqa: E402

_recurrent.step_kernels = _lstm_step_kernels


def __getattr__(name):
    # The compiler is the room above eager numgrad: import it (and Numba) only when asked.
    if name in ("jit", "grad", "value_and_grad", "CompiledFunction"):
        from numgrad import compiler
        return getattr(compiler, name)
    if name == "func":  # torch.func's transforms (built on the compiler's ng.grad)
        return __import__("numgrad.func", fromlist=["vmap"])
    if name in ("backends", "xpu"):  # what programs probe for: no MPS, XPU or cuDNN here
        return __import__(f"numgrad.{name}", fromlist=["is_available"])
    if name == "vmap":  # torch.vmap is torch.func.vmap
        from numgrad.func import vmap
        return vmap
    if name == "distributed":  # data parallelism over Dask: imports Dask only when a step runs
        return __import__("numgrad.distributed", fromlist=["data_parallel"])
    raise AttributeError(f"module 'numgrad' has no attribute {name!r}")

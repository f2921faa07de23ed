"""autograd: graph nodes, saved tensors, and the engine that runs them.

``graph`` is the low half (imported by the op dispatcher); ``engine`` the high
half (it uses ops to accumulate gradients).
"""
from numgrad.autograd.graph import Node, AccumulateGrad, SavedTensor  # noqa: F401
from numgrad.autograd.engine import backward, grad  # noqa: F401
from numgrad.grad_mode import no_grad, enable_grad, set_grad_enabled  # noqa: F401
from numgrad.autograd.anomaly import (set_detect_anomaly, detect_anomaly,  # noqa: F401
                                      is_anomaly_enabled, is_anomaly_check_nan_enabled)
from numgrad.autograd import function  # noqa: F401
from numgrad.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: F401
from numgrad.autograd import graph  # noqa: F401,E402
from numgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401,E402
gradcheck.GradcheckError = GradcheckError  # ng.autograd.gradcheck.GradcheckError, as in torch

# The layers below reach the engine through slots filled here, when autograd is imported:
# Tensor.backward and register_post_accumulate_grad_hook, and the CUDA runtime, which
# refuses to write the engine's implicit seed (CudaArray._ng_write).
from numgrad.autograd import engine as _engine  # noqa: E402
from numgrad.autograd import node_hooks as _node_hooks  # noqa: E402
from numgrad.cuda import array as _cuda_array  # noqa: E402
from numgrad.tensor import Tensor as _Tensor  # noqa: E402
_Tensor._ng_engine, _Tensor._ng_node_hooks = _engine, _node_hooks
_cuda_array.is_seed = _engine.is_implicit_seed

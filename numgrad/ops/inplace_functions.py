"""ops.inplace_functions: PyTorch's top-level in-place functions (``torch.sin_(x)``).

Room: ops. PyTorch exposes some in-place variants as functions of the package as well as
methods (``torch.sin_``, ``torch.relu_``, ``torch.clamp_``...); tutorials call them that way.
Each here is the Tensor method of the same name, so it writes into ``input``, bumps its
version and returns it, with the method's errors. Only the names PyTorch has at the top
level are made (the methods have many more). The rounding and power composites
(``ops.small_math``) get their in-place methods here too, through ``apply_inplace`` as a
registry row's are.
"""
from __future__ import annotations

import numgrad.tracing_hook as tracing_hook
from numgrad.errors import TracingError
from numgrad.ops.inplace import apply_inplace
from numgrad.tensor import Tensor

# Composites (no registry row of their own) with PyTorch's in-place method.
COMPOSITES = ("ceil", "floor", "frac", "reciprocal", "rsqrt", "square", "trunc")

# torch 2.13's top-level in-place functions that numgrad has as Tensor methods.
TORCH_NAMES = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "exp2_", "exp_",
    "expm1_", "fill_", "fix_", "floor_", "frac_", "log10_", "log1p_", "log2_", "log_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_",
    "zero_")


def _function(name):
    def fn(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``input.{name}(...)`` as a function (``torch.{name}``): writes the result "
                  f"into ``input`` and returns it.")
    return fn


def _inplace_method(name, fn):
    def method(self) -> Tensor:
        return apply_inplace(self, fn)
    method.__name__ = f"{name}_"
    method.__qualname__ = f"Tensor.{name}_"
    method.__doc__ = (f"``{name}`` written into this tensor (``torch.Tensor.{name}_``); bumps "
                      "its version, and raises RuntimeError on a leaf that requires grad.")
    return method


def install_methods(tensor_type, namespace) -> None:
    """Give ``tensor_type`` the in-place methods of ``COMPOSITES`` that ``namespace`` (the
    package) defines as functions."""
    for name in COMPOSITES:
        if name in namespace and not hasattr(tensor_type, name + "_"):
            setattr(tensor_type, name + "_", _inplace_method(name, namespace[name]))


# PyTorch's in-place shape changes: the tensor itself takes the view's shape.
SHAPE_METHODS = ("unsqueeze", "squeeze", "t", "transpose", "swapdims", "swapaxes")


def _shape_method(name):
    def method(self, *args, **kwargs) -> Tensor:
        from numgrad.grad_mode import is_grad_enabled
        from numgrad.ops.views import live_views
        recording = is_grad_enabled() and self._requires_grad
        if recording and self.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if not tracing_hook.concrete(self._data):
            raise TracingError(f"{name}_() under @ng.jit: write x = x.{name}(...) instead")
        if self._base is not None or live_views(self):
            raise NotImplementedError(
                f"{name}_() on a view, or on a tensor with live views, is not supported: "
                f"write x = x.{name}(...) instead")
        new = getattr(self, name)(*args, **kwargs)  # checks the arguments, records the node
        self._data = new._data
        if recording:  # the tensor now stands where the view op's output stood, as PyTorch's
            self.grad_fn, self._output_nr = new.grad_fn, new._output_nr
        self._vc.value += 1
        return self
    method.__name__ = f"{name}_"
    method.__qualname__ = f"Tensor.{name}_"
    method.__doc__ = (f"``{name}`` applied to this tensor's own shape (``torch.Tensor.{name}_``):"
                      " the same storage, a new shape; bumps the version.")
    return method


def install_shape_methods(tensor_type) -> None:
    """Give ``tensor_type`` the in-place shape methods of ``SHAPE_METHODS``."""
    for name in SHAPE_METHODS:
        if hasattr(tensor_type, name) and not hasattr(tensor_type, name + "_"):
            setattr(tensor_type, name + "_", _shape_method(name))


def functions(tensor_type) -> dict:
    """``{name: function}`` for the names of ``TORCH_NAMES`` that ``tensor_type`` has.

    >>> import numgrad as ng
    >>> x = ng.tensor([0.0, 4.0])
    >>> ng.sqrt_(x) is x, x
    (True, tensor([0., 2.]))
    """
    return {n: _function(n) for n in TORCH_NAMES if hasattr(tensor_type, n)}

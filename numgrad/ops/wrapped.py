"""ops.wrapped: the hand-written public functions of registry rows, where one does real work.

Room: ops. Most rows' public functions are generated from the row (``ops.exposure``);
these keep code of their own (``alpha=``; a number exponent or bound becomes a kernel
parameter, and an int tensor a float one where PyTorch's result is float; one function
over two rows), and each row names its function here (``Api(wrapper=...)``), which is
then exposed, with its method and in-place variant, as a generated one would be.
"""
from __future__ import annotations

import numbers

import numgrad.dtypes as _dt
import numgrad.tracing_hook as tracing_hook
import numgrad.ops.elementwise as E
from numgrad.tensor import Tensor


def pow(input, exponent) -> Tensor:
    """``input ** exponent`` for a tensor or number exponent (and ``number ** tensor``)
    (``torch.pow``, ``jax.numpy.power``). Raises RuntimeError for an integer tensor to a
    negative integer power."""
    # A number exponent is a parameter of the kernel: a traced Python float cannot be one.
    if tracing_hook.capture is not None:
        exponent = tracing_hook.as_number(exponent)
    if isinstance(input, Tensor) and isinstance(exponent, numbers.Number) and \
            not isinstance(exponent, bool):
        if isinstance(exponent, float) and not input.dtype.is_floating_point:
            input = input.to(_dt.default_float)
        elif exponent < 0 and not input.dtype.is_floating_point:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return E.pow_scalar(input, exponent=exponent)
    return E.pow_(input, exponent)


def _scaled(other, alpha, name):
    if alpha == 1:
        return other
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Number):
        raise TypeError(f"{name}(): argument 'alpha' must be Number, not "
                        f"{type(alpha).__name__}")
    return other * alpha


def add(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` (``torch.add``); broadcasting and type promotion as for ``+``.

    Raises RuntimeError when the shapes do not broadcast.
    """
    return E.add(input, _scaled(other, alpha, "add"))


def sub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` (``torch.sub``).

    Raises RuntimeError when the shapes do not broadcast or both operands are bool.
    """
    return E.sub(input, _scaled(other, alpha, "sub"))



def clamp(input, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]`` (either may be None); no gradient where clipped
    (``torch.clamp``, ``jax.numpy.clip``). Raises RuntimeError when both are None."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    # Number bounds are parameters of the kernel (maximum/minimum would differ at -0 and
    # ties): a traced Python float cannot be one.
    if tracing_hook.capture is not None:
        min, max = tracing_hook.as_number(min), tracing_hook.as_number(max)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = E.maximum(out, min)
        if max is not None:
            out = E.minimum(out, max)
        return out
    if not input.dtype.is_floating_point and (isinstance(min, float) or isinstance(max, float)):
        # torch: an int tensor clamped to 2.5 is float
        input = E.to_dtype(input, dtype=_dt.default_float.np)
    min, max = _dt.checked_scalar(min, input.dtype.np), _dt.checked_scalar(max, input.dtype.np)
    return E.clamp(input, min=min, max=max)

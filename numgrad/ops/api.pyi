"""The public functions of the registry's rows (``ops.api``), for IDEs and type checkers.

Written by ``ops.exposure.write_stub()`` from the registry: do not edit.
"""
from typing import Union

from numgrad.tensor import Tensor

Number = Union[int, float, bool]
Operand = Union[Tensor, int, float, bool]
__all__ = [
    'abs', 'acos', 'acosh', 'add', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan',
    'arctan2', 'arctanh', 'asin', 'asinh', 'atan', 'atan2', 'atanh', 'bitwise_and',
    'bitwise_left_shift', 'bitwise_not', 'bitwise_or', 'bitwise_right_shift', 'bitwise_xor',
    'clamp', 'clip', 'clone', 'cos', 'cosh', 'deg2rad', 'div', 'divide', 'eq', 'erf', 'exp',
    'exp2', 'expm1', 'floor_divide', 'fmod', 'ge', 'gt', 'hypot', 'le', 'log', 'log10',
    'log1p', 'log2', 'logical_and', 'logical_not', 'logical_or', 'lt', 'maximum', 'minimum',
    'mul', 'multiply', 'ne', 'neg', 'pow', 'rad2deg', 'relu', 'remainder', 'sigmoid', 'sign',
    'sin', 'sinh', 'sqrt', 'sub', 'subtract', 'tanh', 'true_divide', 'where',
]


def abs(input: Tensor) -> Tensor:
    """``|input|`` (``torch.abs``, ``jax.numpy.abs``); the gradient at 0 is 0.
    Raises NotImplementedError for bool, as PyTorch does."""
    ...


def acos(input: Tensor) -> Tensor:
    """Inverse cosine, in radians (``torch.acos``, ``torch.arccos``); NaN outside [-1, 1]."""
    ...


def acosh(input: Tensor) -> Tensor:
    """Inverse hyperbolic cosine (``torch.acosh``, ``torch.arccosh``); NaN below 1."""
    ...


def add(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` (``torch.add``); broadcasting and type promotion as for ``+``.

    Raises RuntimeError when the shapes do not broadcast."""
    ...


def arccos(input: Tensor) -> Tensor:
    """Inverse cosine, in radians (``torch.acos``, ``torch.arccos``); NaN outside [-1, 1]."""
    ...


def arccosh(input: Tensor) -> Tensor:
    """Inverse hyperbolic cosine (``torch.acosh``, ``torch.arccosh``); NaN below 1."""
    ...


def arcsin(input: Tensor) -> Tensor:
    """Inverse sine, in radians (``torch.asin``, ``torch.arcsin``); NaN outside [-1, 1]."""
    ...


def arcsinh(input: Tensor) -> Tensor:
    """Inverse hyperbolic sine (``torch.asinh``, ``torch.arcsinh``)."""
    ...


def arctan(input: Tensor) -> Tensor:
    """Inverse tangent, in radians (``torch.atan``, ``torch.arctan``)."""
    ...


def arctan2(input: Operand, other: Operand) -> Tensor:
    """The angle of the point (other, input), in (-pi, pi] (``torch.atan2``,
    ``torch.arctan2``)."""
    ...


def arctanh(input: Tensor) -> Tensor:
    """Inverse hyperbolic tangent (``torch.atanh``, ``torch.arctanh``); +-inf at +-1,
    NaN beyond."""
    ...


def asin(input: Tensor) -> Tensor:
    """Inverse sine, in radians (``torch.asin``, ``torch.arcsin``); NaN outside [-1, 1]."""
    ...


def asinh(input: Tensor) -> Tensor:
    """Inverse hyperbolic sine (``torch.asinh``, ``torch.arcsinh``)."""
    ...


def atan(input: Tensor) -> Tensor:
    """Inverse tangent, in radians (``torch.atan``, ``torch.arctan``)."""
    ...


def atan2(input: Operand, other: Operand) -> Tensor:
    """The angle of the point (other, input), in (-pi, pi] (``torch.atan2``,
    ``torch.arctan2``)."""
    ...


def atanh(input: Tensor) -> Tensor:
    """Inverse hyperbolic tangent (``torch.atanh``, ``torch.arctanh``); +-inf at +-1,
    NaN beyond."""
    ...


def bitwise_and(input: Operand, other: Operand) -> Tensor:
    """``input & other``, bit by bit, of integer or bool tensors (``torch.bitwise_and``);
    NotImplementedError for floating operands. Never requires grad."""
    ...


def bitwise_left_shift(input: Operand, other: Operand) -> Tensor:
    """``input << other``: the bits of integer tensors shifted (``torch.bitwise_left_shift``); a count of the
    width or more, or a negative one, gives 0 (-1 for a negative value shifted right).
    NotImplementedError for floating or bool operands. Never requires grad."""
    ...


def bitwise_not(input: Tensor) -> Tensor:
    """``~input``: each bit flipped, of an integer or bool tensor (``torch.bitwise_not``);
    NotImplementedError for floating input. Never requires grad."""
    ...


def bitwise_or(input: Operand, other: Operand) -> Tensor:
    """``input | other``, bit by bit, of integer or bool tensors (``torch.bitwise_or``);
    NotImplementedError for floating operands. Never requires grad."""
    ...


def bitwise_right_shift(input: Operand, other: Operand) -> Tensor:
    """``input >> other``: the bits of integer tensors shifted (``torch.bitwise_right_shift``); a count of the
    width or more, or a negative one, gives 0 (-1 for a negative value shifted right).
    NotImplementedError for floating or bool operands. Never requires grad."""
    ...


def bitwise_xor(input: Operand, other: Operand) -> Tensor:
    """``input ^ other``, bit by bit, of integer or bool tensors (``torch.bitwise_xor``);
    NotImplementedError for floating operands. Never requires grad."""
    ...


def clamp(input, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]`` (either may be None); no gradient where clipped
    (``torch.clamp``, ``jax.numpy.clip``). Raises RuntimeError when both are None."""
    ...


def clip(input, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]`` (either may be None); no gradient where clipped
    (``torch.clamp``, ``jax.numpy.clip``). Raises RuntimeError when both are None."""
    ...


def clone(input: Tensor) -> Tensor:
    """A copy with its own storage that stays in the graph (``torch.clone``)."""
    ...


def cos(input: Tensor) -> Tensor:
    """Cosine, in radians (``torch.cos``, ``jax.numpy.cos``)."""
    ...


def cosh(input: Tensor) -> Tensor:
    """Hyperbolic cosine (``torch.cosh``, ``jax.numpy.cosh``)."""
    ...


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians, ``input * pi / 180`` (``torch.deg2rad``, ``jax.numpy.deg2rad``)."""
    ...


def div(input: Operand, other: Operand) -> Tensor:
    """``input / other``, true division (``torch.div``, ``jax.numpy.divide``); integer
    operands give float32."""
    ...


def divide(input: Operand, other: Operand) -> Tensor:
    """``input / other``, true division (``torch.div``, ``jax.numpy.divide``); integer
    operands give float32."""
    ...


def eq(input: Operand, other: Operand) -> Tensor:
    """``input == other`` as a bool tensor (``torch.eq``); never requires grad."""
    ...


def erf(input: Tensor) -> Tensor:
    """The error function (``torch.erf``, ``jax.scipy.special.erf``)."""
    ...


def exp(input: Tensor) -> Tensor:
    """``e ** input`` (``torch.exp``, ``jax.numpy.exp``); int/bool input gives float32."""
    ...


def exp2(input: Tensor) -> Tensor:
    """``2 ** input`` (``torch.exp2``, ``jax.numpy.exp2``)."""
    ...


def expm1(input: Tensor) -> Tensor:
    """``exp(input) - 1``, exact for small inputs (``torch.expm1``, ``jax.numpy.expm1``)."""
    ...


def floor_divide(input: Operand, other: Operand) -> Tensor:
    """``input // other``: the quotient rounded down (``torch.floor_divide``,
    ``jax.numpy.floor_divide``); integers stay integers. Raises RuntimeError for an
    integer zero divisor, and from backward (PyTorch has no derivative)."""
    ...


def fmod(input: Operand, other: Operand) -> Tensor:
    """C's ``fmod``: the remainder takes the dividend's sign (``torch.fmod``,
    ``jax.numpy.fmod``)."""
    ...


def ge(input: Operand, other: Operand) -> Tensor:
    """``input >= other`` as a bool tensor (``torch.ge``); never requires grad."""
    ...


def gt(input: Operand, other: Operand) -> Tensor:
    """``input > other`` as a bool tensor (``torch.gt``); never requires grad."""
    ...


def hypot(input: Operand, other: Operand) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow or underflow in the squares
    (``torch.hypot``, ``jax.numpy.hypot``); integer operands are computed as floats."""
    ...


def le(input: Operand, other: Operand) -> Tensor:
    """``input <= other`` as a bool tensor (``torch.le``); never requires grad."""
    ...


def log(input: Tensor) -> Tensor:
    """Natural logarithm (``torch.log``, ``jax.numpy.log``); nan below 0, -inf at 0."""
    ...


def log10(input: Tensor) -> Tensor:
    """Base-10 logarithm (``torch.log10``, ``jax.numpy.log10``); NaN below 0, -inf at 0."""
    ...


def log1p(input: Tensor) -> Tensor:
    """``log(1 + input)``, exact for small inputs (``torch.log1p``, ``jax.numpy.log1p``)."""
    ...


def log2(input: Tensor) -> Tensor:
    """Base-2 logarithm (``torch.log2``, ``jax.numpy.log2``); NaN below 0, -inf at 0."""
    ...


def logical_and(input: Operand, other: Operand) -> Tensor:
    """Elementwise AND of truth values (``torch.logical_and``); a bool tensor."""
    ...


def logical_not(input: Tensor) -> Tensor:
    """Elementwise NOT of truth values (``torch.logical_not``); a bool tensor."""
    ...


def logical_or(input: Operand, other: Operand) -> Tensor:
    """Elementwise OR of truth values (``torch.logical_or``); a bool tensor."""
    ...


def lt(input: Operand, other: Operand) -> Tensor:
    """``input < other`` as a bool tensor (``torch.lt``); never requires grad."""
    ...


def maximum(input: Operand, other: Operand) -> Tensor:
    """Elementwise maximum, nan-propagating; ties split the gradient evenly
    (``torch.maximum``, ``jax.numpy.maximum``)."""
    ...


def minimum(input: Operand, other: Operand) -> Tensor:
    """Elementwise minimum, nan-propagating; ties split the gradient evenly
    (``torch.minimum``, ``jax.numpy.minimum``)."""
    ...


def mul(input: Operand, other: Operand) -> Tensor:
    """``input * other`` with broadcasting (``torch.mul``, ``jax.numpy.multiply``)."""
    ...


def multiply(input: Operand, other: Operand) -> Tensor:
    """``input * other`` with broadcasting (``torch.mul``, ``jax.numpy.multiply``)."""
    ...


def ne(input: Operand, other: Operand) -> Tensor:
    """``input != other`` as a bool tensor (``torch.ne``); never requires grad."""
    ...


def neg(input: Tensor) -> Tensor:
    """``-input`` (``torch.neg``, ``jax.numpy.negative``). Raises RuntimeError for bool."""
    ...


def pow(input, exponent) -> Tensor:
    """``input ** exponent`` for a tensor or number exponent (and ``number ** tensor``)
    (``torch.pow``, ``jax.numpy.power``). Raises RuntimeError for an integer tensor to a
    negative integer power."""
    ...


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees, ``input * 180 / pi`` (``torch.rad2deg``, ``jax.numpy.rad2deg``)."""
    ...


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)`` (``torch.relu``, ``jax.nn.relu``); the gradient at 0 is 0.
    Raises RuntimeError for bool."""
    ...


def remainder(input: Operand, other: Operand) -> Tensor:
    """Python's ``%``: the remainder takes the divisor's sign (``torch.remainder``,
    ``jax.numpy.remainder``)."""
    ...


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``, computed without overflow (``torch.sigmoid``,
    ``jax.nn.sigmoid``)."""
    ...


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (``torch.sign``); no gradient flows."""
    ...


def sin(input: Tensor) -> Tensor:
    """Sine, in radians (``torch.sin``, ``jax.numpy.sin``)."""
    ...


def sinh(input: Tensor) -> Tensor:
    """Hyperbolic sine (``torch.sinh``, ``jax.numpy.sinh``)."""
    ...


def sqrt(input: Tensor) -> Tensor:
    """Square root (``torch.sqrt``, ``jax.numpy.sqrt``); nan below 0."""
    ...


def sub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` (``torch.sub``).

    Raises RuntimeError when the shapes do not broadcast or both operands are bool."""
    ...


def subtract(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input - alpha * other`` (``torch.sub``).

    Raises RuntimeError when the shapes do not broadcast or both operands are bool."""
    ...


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent (``torch.tanh``, ``jax.numpy.tanh``)."""
    ...


def true_divide(input: Operand, other: Operand) -> Tensor:
    """``input / other``, true division (``torch.div``, ``jax.numpy.divide``); integer
    operands give float32."""
    ...


def where(cond, x, y) -> Tensor:
    """``x`` where ``cond`` holds, else ``y`` (numbers allowed); gradients flow to x and y
    (``torch.where``, ``jax.numpy.where``). Raises RuntimeError for a non-bool ``cond``."""
    ...

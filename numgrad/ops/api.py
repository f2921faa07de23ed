"""ops.api: the public spellings of the elementwise primitives, as documented functions.

Room: ops. A primitive (``ops.registry.Primitive``) is an object, so ``help(ng.exp)``
would show the registry's class; these thin functions give each public name a
signature, a docstring and type hints. They add one Python call; the operators and
the engine call the primitives directly.

Every function here takes tensors (or Python numbers, which become 0-d operands under
PyTorch's type promotion) and raises TypeError for anything else, and RuntimeError when
shapes do not broadcast.
"""
from __future__ import annotations

from typing import Union

import numgrad.ops.elementwise as _E
import numgrad.ops.special as _S
from numgrad.tensor import Tensor

Number = Union[int, float, bool]
Operand = Union[Tensor, int, float, bool]


# ------------------------------------------------------------------ unary
def neg(input: Tensor) -> Tensor:
    """``-input`` (``torch.neg``, ``jax.numpy.negative``). Raises RuntimeError for bool."""
    return _E.neg(input)


def abs(input: Tensor) -> Tensor:  # noqa: A001  (PyTorch's name)
    """``|input|`` (``torch.abs``, ``jax.numpy.abs``); the gradient at 0 is 0.
    Raises NotImplementedError for bool, as PyTorch does."""
    return _E.abs_(input)


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (``torch.sign``); no gradient flows."""
    return _E.sign(input)


def exp(input: Tensor) -> Tensor:
    """``e ** input`` (``torch.exp``, ``jax.numpy.exp``); int/bool input gives float32."""
    return _E.exp(input)


def log(input: Tensor) -> Tensor:
    """Natural logarithm (``torch.log``, ``jax.numpy.log``); nan below 0, -inf at 0."""
    return _E.log(input)


def sqrt(input: Tensor) -> Tensor:
    """Square root (``torch.sqrt``, ``jax.numpy.sqrt``); nan below 0."""
    return _E.sqrt(input)


def sin(input: Tensor) -> Tensor:
    """Sine, in radians (``torch.sin``, ``jax.numpy.sin``)."""
    return _E.sin(input)


def cos(input: Tensor) -> Tensor:
    """Cosine, in radians (``torch.cos``, ``jax.numpy.cos``)."""
    return _E.cos(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent (``torch.tanh``, ``jax.numpy.tanh``)."""
    return _E.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))``, computed without overflow (``torch.sigmoid``,
    ``jax.nn.sigmoid``)."""
    return _E.sigmoid(input)


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)`` (``torch.relu``, ``jax.nn.relu``); the gradient at 0 is 0.
    Raises RuntimeError for bool."""
    return _E.relu(input)


def clone(input: Tensor) -> Tensor:
    """A copy with its own storage that stays in the graph (``torch.clone``)."""
    return _E.clone(input)


def erf(input: Tensor) -> Tensor:
    """The error function (``torch.erf``, ``jax.scipy.special.erf``)."""
    return _S.erf(input)


def hypot(input: Operand, other: Operand) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow or underflow in the squares
    (``torch.hypot``, ``jax.numpy.hypot``); integer operands are computed as floats."""
    return _S.hypot(input, other)


def log1p(input: Tensor) -> Tensor:
    """``log(1 + input)``, exact for small inputs (``torch.log1p``, ``jax.numpy.log1p``)."""
    return _S.log1p(input)


def expm1(input: Tensor) -> Tensor:
    """``exp(input) - 1``, exact for small inputs (``torch.expm1``, ``jax.numpy.expm1``)."""
    return _S.expm1(input)


# ----------------------------------------------------------------- binary
def mul(input: Operand, other: Operand) -> Tensor:
    """``input * other`` with broadcasting (``torch.mul``, ``jax.numpy.multiply``)."""
    return _E.mul(input, other)


def div(input: Operand, other: Operand) -> Tensor:
    """``input / other``, true division (``torch.div``, ``jax.numpy.divide``); integer
    operands give float32."""
    return _E.div(input, other)


def remainder(input: Operand, other: Operand) -> Tensor:
    """Python's ``%``: the remainder takes the divisor's sign (``torch.remainder``,
    ``jax.numpy.remainder``)."""
    return _S.remainder(input, other)


def fmod(input: Operand, other: Operand) -> Tensor:
    """C's ``fmod``: the remainder takes the dividend's sign (``torch.fmod``,
    ``jax.numpy.fmod``)."""
    return _S.fmod(input, other)


def maximum(input: Operand, other: Operand) -> Tensor:
    """Elementwise maximum, nan-propagating; ties split the gradient evenly
    (``torch.maximum``, ``jax.numpy.maximum``)."""
    return _E.maximum(input, other)


def minimum(input: Operand, other: Operand) -> Tensor:
    """Elementwise minimum, nan-propagating; ties split the gradient evenly
    (``torch.minimum``, ``jax.numpy.minimum``)."""
    return _E.minimum(input, other)


# ------------------------------------------------------------ comparisons
def eq(input: Operand, other: Operand) -> Tensor:
    """``input == other`` as a bool tensor (``torch.eq``); never requires grad."""
    return _E.eq(input, other)


def ne(input: Operand, other: Operand) -> Tensor:
    """``input != other`` as a bool tensor (``torch.ne``); never requires grad."""
    return _E.ne(input, other)


def lt(input: Operand, other: Operand) -> Tensor:
    """``input < other`` as a bool tensor (``torch.lt``); never requires grad."""
    return _E.lt(input, other)


def le(input: Operand, other: Operand) -> Tensor:
    """``input <= other`` as a bool tensor (``torch.le``); never requires grad."""
    return _E.le(input, other)


def gt(input: Operand, other: Operand) -> Tensor:
    """``input > other`` as a bool tensor (``torch.gt``); never requires grad."""
    return _E.gt(input, other)


def ge(input: Operand, other: Operand) -> Tensor:
    """``input >= other`` as a bool tensor (``torch.ge``); never requires grad."""
    return _E.ge(input, other)


def logical_and(input: Operand, other: Operand) -> Tensor:
    """Elementwise AND of truth values (``torch.logical_and``); a bool tensor."""
    return _E.logical_and(input, other)


def logical_or(input: Operand, other: Operand) -> Tensor:
    """Elementwise OR of truth values (``torch.logical_or``); a bool tensor."""
    return _E.logical_or(input, other)


def logical_not(input: Tensor) -> Tensor:
    """Elementwise NOT of truth values (``torch.logical_not``); a bool tensor."""
    return _E.logical_not(input)

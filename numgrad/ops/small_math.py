"""ops.small_math: functions PyTorch tutorials reach for that are compositions of numgrad's
primitives: rounding (``floor``, ``ceil``, ``trunc``, ``frac``), ``square``, ``reciprocal``,
``rsqrt``, the float checks (``isnan``, ``isinf``, ``isfinite``), ``lerp``, ``addcmul``,
``addcdiv``, ``dot``, ``outer``, and the helpers ``numel``, ``is_tensor`` and ``detach``.

Room: ops. No primitive of their own, so their gradients, ``@ng.jit`` and CUDA follow from the
primitives. Rounding goes through Python's float remainder: ``x - x % 1`` is exactly
``floor(x)`` for a finite float (both terms and the difference are representable), its
gradient is 0 as PyTorch's is, and infinities and NaN pass through unchanged.
"""
from __future__ import annotations

from numgrad.dtypes import SCALAR_NAMES
from numgrad.tensor import Tensor


def _t(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _floating(x):
    return x.dtype.is_floating_point


def isfinite(input: Tensor) -> Tensor:
    """Whether each entry is neither infinite nor NaN (``torch.isfinite``).

    >>> ng.isfinite(ng.tensor([1.0, float("inf"), float("nan")]))
    tensor([ True, False, False])
    """
    x = _t(input, "isfinite")
    if not _floating(x):
        return x == x
    with _no_grad():
        return (x - x) == 0  # inf - inf and NaN - NaN are NaN


def isnan(input: Tensor) -> Tensor:
    """Whether each entry is NaN (``torch.isnan``).

    >>> ng.isnan(ng.tensor([1.0, float("nan")]))
    tensor([False,  True])
    """
    x = _t(input, "isnan")
    return x != x


def isinf(input: Tensor) -> Tensor:
    """Whether each entry is +inf or -inf (``torch.isinf``).

    >>> ng.isinf(ng.tensor([1.0, float("-inf")]))
    tensor([False,  True])
    """
    x = _t(input, "isinf")
    if not _floating(x):
        return x != x
    import numgrad.ops.api as api
    return api.abs(x.detach()) == float("inf")


def floor(input: Tensor) -> Tensor:
    """The largest integer not above each entry (``torch.floor``); integers pass unchanged.
    Its gradient is 0.

    >>> ng.floor(ng.tensor([-1.5, 0.5, 2.0]))
    tensor([-2.,  0.,  2.])
    """
    x = _t(input, "floor")
    if not _floating(x):
        return x.clone()
    import numgrad.ops.api as api
    from numgrad.ops.elementwise import where
    finite = isfinite(x)
    # (the infinities and NaN are replaced first: their remainder would warn in NumPy)
    safe = where(finite, x, 0.0)
    return where(finite, safe - api.remainder(safe, 1.0), x.detach())


def ceil(input: Tensor) -> Tensor:
    """The smallest integer not below each entry (``torch.ceil``). Its gradient is 0.

    >>> ng.ceil(ng.tensor([-1.5, 0.5, 2.0]))
    tensor([-1.,  1.,  2.])
    """
    x = _t(input, "ceil")
    return x.clone() if not _floating(x) else -floor(-x)


def trunc(input: Tensor) -> Tensor:
    """Each entry rounded toward zero (``torch.trunc``). Its gradient is 0.

    >>> ng.trunc(ng.tensor([-1.5, 0.5]))
    tensor([-1.,  0.])
    """
    x = _t(input, "trunc")
    if not _floating(x):
        return x.clone()
    from numgrad.ops.elementwise import where
    return where(x < 0, ceil(x), floor(x))


def frac(input: Tensor) -> Tensor:
    """``input - trunc(input)``: the fractional part, with the entry's sign (``torch.frac``).

    >>> ng.frac(ng.tensor([-1.5, 2.25]))
    tensor([-0.5000,  0.2500])
    """
    x = _t(input, "frac")
    if not _floating(x):
        name = SCALAR_NAMES.get(x.dtype.name, x.dtype.name)
        raise NotImplementedError(f'"frac_cpu" not implemented for \'{name}\'')
    return x - trunc(x)


def square(input: Tensor) -> Tensor:
    """``input * input`` (``torch.square``).

    >>> ng.square(ng.tensor([-2, 3]))
    tensor([4, 9])
    """
    x = _t(input, "square")
    return x * x


def reciprocal(input: Tensor) -> Tensor:
    """``1 / input``, in the default float dtype for integers (``torch.reciprocal``).

    >>> ng.reciprocal(ng.tensor([2.0, 4.0]))
    tensor([0.5000, 0.2500])
    """
    return 1.0 / _t(input, "reciprocal")


def rsqrt(input: Tensor) -> Tensor:
    """``1 / sqrt(input)`` (``torch.rsqrt``).

    >>> ng.rsqrt(ng.tensor([4.0]))
    tensor([0.5000])
    """
    import numgrad.ops.api as api
    return 1.0 / api.sqrt(_t(input, "rsqrt"))


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """``input + weight * (end - input)`` (``torch.lerp``); ``weight`` a number or a tensor.

    >>> ng.lerp(ng.tensor([0.0, 10.0]), ng.tensor([10.0, 20.0]), 0.5)
    tensor([ 5., 15.])
    """
    _t(input, "lerp")
    return input + weight * (end - input)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (``torch.addcmul``).

    >>> ng.addcmul(ng.ones(2), ng.tensor([1.0, 2.0]), ng.tensor([3.0, 4.0]), value=0.5)
    tensor([2.5000, 5.0000])
    """
    _t(input, "addcmul")
    return input + value * (tensor1 * tensor2)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (``torch.addcdiv``).

    >>> ng.addcdiv(ng.ones(2), ng.tensor([1.0, 2.0]), ng.tensor([4.0, 4.0]), value=2)
    tensor([1.5000, 2.0000])
    """
    _t(input, "addcdiv")
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future  release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    return input + value * (tensor1 / tensor2)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of one dtype (``torch.dot``).

    >>> ng.dot(ng.tensor([2.0, 3.0]), ng.tensor([2.0, 1.0]))
    tensor(7.)
    """
    _t(input, "dot")
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D "
                           "tensors")
    if input.dtype is not tensor.dtype:
        names = [SCALAR_NAMES.get(t.dtype.name, t.dtype.name) for t in (input, tensor)]
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{names[0]} and {names[1]}")
    n, m = input.shape[0], tensor.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    from numgrad.ops.linalg import matmul
    return matmul(input, tensor)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product ``input[i] * vec2[j]`` of two 1-D tensors (``torch.outer``).

    >>> ng.outer(ng.tensor([1.0, 2.0]), ng.tensor([1.0, 10.0, 100.0]))
    tensor([[  1.,  10., 100.],
            [  2.,  20., 200.]])
    """
    _t(input, "outer")
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


def numel(input: Tensor) -> int:
    """The number of elements (``torch.numel``).

    >>> ng.numel(ng.zeros(2, 3))
    6
    """
    return _t(input, "numel").numel()


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a numgrad Tensor (``torch.is_tensor``).

    >>> ng.is_tensor(ng.zeros(1)), ng.is_tensor([0.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def detach(input: Tensor) -> Tensor:
    """``input.detach()`` (``torch.detach``): the same data, cut out of the graph.

    >>> ng.detach(ng.ones(2, requires_grad=True)).requires_grad
    False
    """
    return _t(input, "detach").detach()


def _no_grad():
    from numgrad.grad_mode import no_grad
    return no_grad()


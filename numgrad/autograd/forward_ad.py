"""autograd.forward_ad: forward-mode AD with dual tensors (``torch.autograd.forward_ad``).

Room: autograd (high half). A dual tensor's payload is a ``Dual``: the primal payload and
its tangent. The op dispatcher hands every primitive applied to one to its ``Level`` (the
seam the ``@ng.jit`` tracer and ``ng.func.vmap`` use), which computes the primal and the
tangent J·t. Linear primitives (adds, reshapes, sums, indexing...) apply themselves to the
tangents; every other primitive gets its jvp by transposing its vjp rule: the vjp
``g -> J^T g`` is linear in ``g``, so the vjp of the vjp, taken at any ``g``, with cotangent
``t`` is ``J t``. Under ``@ng.jit`` those equations are traced and fused like any others.
"""
from __future__ import annotations

import contextlib
import math
import itertools
from collections import namedtuple

import numpy as np

import numgrad.tracing_hook as tracing_hook
from numgrad.grad_mode import enable_grad
from numgrad.tensor import Tensor

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level",
           "exit_dual_level"]

# Depth of every transform level (forward mode here, ng.func.vmap's batching levels): the
# op dispatcher lets the deepest one see a call first.
next_depth = itertools.count(1)

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

# Primitives linear in all their tensor inputs: the tangent is the op applied to tangents.
LINEAR = frozenset({"neg", "clone", "add", "sub", "reshape", "permute", "expand", "sum",
                    "mean", "getitem", "index_add", "cat", "stack", "cumsum", "to_device"})
# Primitives whose output carries no tangent.
NO_TANGENT = frozenset({"detach", "dropout_mask"})


class Dual:
    """The payload of a dual tensor: ``primal`` and ``tangent`` payloads of one shape."""

    __slots__ = ("primal", "tangent", "_ng_interpreter", "given")

    def __init__(self, primal, tangent, level, given=None):
        self.primal = primal
        self.tangent = tangent
        self._ng_interpreter = level
        self.given = given  # the tangent Tensor make_dual used as is (unpack_dual returns it)

    shape = property(lambda self: self.primal.shape)
    dtype = property(lambda self: self.primal.dtype)
    ndim = property(lambda self: len(self.primal.shape))
    size = property(lambda self: math.prod(self.primal.shape))
    _ng_weak = property(lambda self: getattr(self.primal, "_ng_weak", False))

    def _ng_concrete(self, reason=None):
        p = self.primal
        if type(p) is np.ndarray:
            return p
        return p._ng_concrete(reason)

    def _ng_repr(self):
        return "<dual>"


def detach_payload(v):
    """A detached payload: traced and batched payloads ask their interpreter."""
    interp = getattr(v, "_ng_interpreter", None)
    return v if interp is None else interp.detach(v)


def lift_payload(v):
    """``v`` without reverse-mode history but with what transform levels attach (tangents,
    batches), at every level: see ``transform_detach``."""
    interp = getattr(v, "_ng_interpreter", None)
    if interp is None:
        return v
    lift = getattr(interp, "lift_payload", None)
    return interp.detach(v) if lift is None else lift(v)


def transform_detach(t):
    """``t.detach()`` as a function transform takes it (``ng.grad`` making its leaves,
    ``ng.func.vjp``, the results it returns): the reverse-mode history goes, the tangent of
    forward mode and the batch of ``vmap`` stay, so ``jacfwd(grad(f))`` sees the tangent
    through the gradient (as torch.func's levels do). A plain ``t.detach()`` drops the
    tangent, as PyTorch's does."""
    d = t._data
    if getattr(getattr(d, "_ng_interpreter", None), "lift_payload", None) is None:
        return t.detach()
    return Tensor._make(lift_payload(d), None, t._vc)


class Level:
    """One forward-mode level: the interpreter of its dual payloads."""

    def __init__(self):
        self._ng_depth = next(next_depth)
        self.closed = False

    def owns(self, d):
        return type(d) is Dual and d._ng_interpreter is self

    # Tensor.detach asks the payload's interpreter: the tangent goes too, as in PyTorch.
    def detach(self, d):
        return detach_payload(d.primal)

    def refuse_backward(self):
        pass  # reverse mode over a dual tensor differentiates its primal, as PyTorch does

    def lift_payload(self, d):
        return Dual(lift_payload(d.primal), d.tangent, self)

    def detached(self, tensor, out):
        pass

    def process(self, prim, datas, params):
        from numgrad.ops.dispatch import evaluate, _innermost
        inner = _innermost([d for d in datas if type(d) is Dual], self)
        if inner is not self:
            return inner.process(prim, datas, params)
        primals = [d.primal if self.owns(d) else d for d in datas]
        out = evaluate(prim, primals, params)
        tangents = [d.tangent if self.owns(d) else None for d in datas]
        if prim.name in NO_TANGENT or not prim.differentiable \
                or all(t is None for t in tangents) or out.dtype.kind != "f":
            return out
        if prim.name in LINEAR:
            t = evaluate(prim, [t if t is not None else _zeros(p) for p, t in
                                zip(primals, tangents)], params)
        else:
            t = _transposed_vjp(prim, primals, out, tangents, params)
        if t is None:
            return out
        return Dual(out, t, self)


def _zeros(like):
    return np.zeros(like.shape, like.dtype)


def zeros_leaf(like):
    """A zero leaf like ``like`` that requires grad, for differentiating a vjp w.r.t. its
    cotangent. While ``@ng.jit`` traces it must be a traced value: a concrete tensor that
    requires grad would be captured as an input of the plan, and the graph would not lead
    back to this leaf."""
    if tracing_hook.capture is None:
        return Tensor._make(_zeros(like._data)).requires_grad_(True)
    return (like.detach() * 0).requires_grad_(True)


def _transposed_vjp(prim, primals, out, tangents, params):
    """``sum_i J_i t_i`` from the vjp rules: each rule's result is linear in ``g``, so its
    vjp w.r.t. ``g`` with cotangent ``t_i`` is ``J_i t_i``."""
    from numgrad.autograd import engine
    from numgrad.ops.dispatch import record
    xs = [Tensor._make(p) for p in primals]
    with enable_grad():
        g = zeros_leaf(Tensor._make(out))
        node = record(prim, params, xs, tuple(i for i, t in enumerate(tangents)
                                              if t is not None), out).grad_fn
        grads = node.apply([g])
        outs, cots = [], []
        for r, t in zip(grads, tangents):
            if r is not None and t is not None and r.requires_grad:
                outs.append(r)
                cots.append(Tensor._make(t))
        if not outs:
            return None
        (jt,) = engine.grad(tuple(outs), (g,), tuple(cots), allow_unused=True)
    return None if jt is None else jt._data


_stack = []  # the open public levels (torch allows one)


def enter_dual_level():
    """Open a forward-mode level (prefer ``with dual_level():``); returns it."""
    if _stack:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = Level()
    _stack.append(level)
    return level


def exit_dual_level(*, level=None):
    """Close the current level: its dual tensors lose their tangents."""
    lv = _stack.pop()
    lv.closed = True


class dual_level(contextlib.ContextDecorator):
    """Context for forward-mode AD: dual tensors made inside carry tangents until it exits.

    >>> import numgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(ng.tensor([1., 2.]), ng.tensor([1., 0.])) ** 2
    ...     fwAD.unpack_dual(y).tangent
    tensor([2., 0.])
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: ``tensor``'s values with forward gradient ``tangent``
    (``torch.autograd.forward_ad.make_dual``)."""
    lv = level if isinstance(level, Level) else (_stack[-1] if _stack else None)
    if lv is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"torch.{tensor.dtype}".replace("torch.numgrad.", "torch."))
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    t, given = tangent._data, tangent
    if t.dtype != tensor._data.dtype:
        from numgrad.ops.dispatch import evaluate, to_dtype_prim
        t, given = evaluate(to_dtype_prim(), [t], {"dtype": tensor._data.dtype}), None
    elif None not in (_strides(t), _strides(tensor._data)) and t.strides != tensor._data.strides:
        # As PyTorch: a tangent laid out unlike the primal is copied into the primal's layout;
        # one laid out alike is used as is (unpack_dual gives that very tensor back).
        t, given = np.array(t, order="C"), None
    if tensor.requires_grad:  # reverse mode still sees the primal: keep its history
        out = tensor.clone()
        out._data = Dual(out._data, t, lv, given)
        return out
    return Tensor._make(Dual(tensor._data, t, lv, given), None, tensor._vc)


def _strides(a):
    """A NumPy payload's strides; None for a device or traced payload, whose layout is not
    compared (the tangent is then used as is)."""
    return a.strides if type(a) is np.ndarray else None


def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)`` of a dual tensor; ``tangent`` is None for a
    plain tensor or after its level exited (``torch.autograd.forward_ad.unpack_dual``)."""
    d = tensor._data
    lv = level if isinstance(level, Level) else None
    if type(d) is not Dual or d._ng_interpreter.closed or (lv is not None and
                                                            d._ng_interpreter is not lv):
        return UnpackedDualTensor(tensor, None)
    primal = Tensor._make(d.primal, None, tensor._vc)
    given = d.given
    if given is not None and given._data is d.tangent:
        return UnpackedDualTensor(primal, given)
    return UnpackedDualTensor(primal, Tensor._make(d.tangent))

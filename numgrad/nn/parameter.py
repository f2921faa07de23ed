"""nn.parameter: ``Parameter``, the tensor a ``Module`` registers as a learnable weight.

Room: nn. A ``Tensor`` subclass (as in PyTorch) so ``isinstance(p, ng.Tensor)`` holds and
every op accepts it; op results are plain tensors.
"""
from __future__ import annotations

from numgrad.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a ``Module`` attribute registers as a parameter
    (``torch.nn.Parameter``). It shares storage (and version counter) with ``data``.

    >>> ng.nn.Parameter(ng.ones(2))
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from numgrad.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        t = Tensor.__new__(cls)
        src = data.detach()
        fresh = Tensor._make(src._data, None, src._vc)
        for name in Tensor._PAYLOAD_SLOTS:
            setattr(t, name, getattr(fresh, name))
        t._set_requires_grad(requires_grad)
        return t

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # __new__ built it; Tensor.__init__ would copy the data again

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach().numpy().copy(), self._requires_grad))

    def __deepcopy__(self, memo):
        from numgrad.ops import clone
        out = Parameter(clone(self.detach()), self._requires_grad)
        memo[id(self)] = out
        return out


def _rebuild_parameter(array, requires_grad):
    return Parameter(Tensor._make(array), requires_grad)

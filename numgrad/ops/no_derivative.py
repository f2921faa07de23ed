"""ops.no_derivative: the vjp rule of a derivative PyTorch does not have.

Room: ops. Eagerly the rule raises when the backward reaches its node: PyTorch's error at
``.backward()``. ``@ng.jit`` derives the backward ahead, when the function is first
called, so there the rule must not raise: it records a ``hook`` equation
(``ops.structural``) whose function raises the error, and the compiled backward raises it
when it runs, where eager mode and ``torch.compile`` do. A call whose result is never
differentiated (or one under ``no_grad``) runs as eager mode's does. The hook equation is
never folded, merged or dropped, and keeps the plan off the one-pass speculative path
(``compiler.speculate``), so the error never comes early.
"""
from __future__ import annotations

import numgrad.tracing_hook as tracing_hook


class Refusal:
    """The hook a traced backward records: raises a fresh ``error(message)`` at each run
    where ``needed()`` says the gradient it stands in for is wanted; ``needed`` is set by
    the compiler (``compiler.autodiff``: did a cotangent that reaches it come, as eager
    mode reaches the node only then); None: always."""

    __slots__ = ("error", "message", "needed")
    __name__ = "no_derivative"

    def __init__(self, error, message):
        self.error = error
        self.message = message
        self.needed = None

    def __call__(self, g):
        if self.needed is None or self.needed():
            raise self.error(self.message)
        return None  # a cotangent that never came (zeros): the gradient stays as it is

    def __repr__(self):
        return f"raise {self.error.__name__}"


def refuse(g, error, message):
    """The gradient ``g`` of a derivative that does not exist, in its place: raises
    ``error(message)`` now, or, in a backward being traced, when the compiled backward runs.

    >>> import numgrad as ng
    >>> y = ng.tensor([0.5], requires_grad=True) * 1
    >>> _ = y.asinh_()
    >>> y.sum().backward()
    Traceback (most recent call last):
    NotImplementedError: the derivative for 'inplace version of asinh' is not implemented.
    """
    interp = None if tracing_hook.concrete(g._data) else getattr(g._data, "_ng_interpreter",
                                                                   None)
    wrap = getattr(interp, "wrap_hook", None)
    if wrap is None:  # eager (a vmap level, forward mode: no ahead-of-time backward either)
        raise error(message)
    return wrap(g, Refusal(error, message))(g)

"""PyTorch's implementation switches of an optimizer (``foreach``, ``capturable``,
``differentiable``, ``fused``): each optimizer takes those its PyTorch namesake takes and keeps
them in ``param_groups`` (so in ``state_dict``) in PyTorch's order. numgrad has one
implementation of each update, so ``foreach``, ``fused`` and ``capturable`` choose nothing and
change no number; ``differentiable=True`` (a step autograd can go through) is refused."""
from __future__ import annotations


def check_flags(foreach=None, differentiable=False, fused=None) -> None:
    """Refuse what numgrad cannot do or PyTorch refuses.

    >>> check_flags(foreach=True)

    Raises RuntimeError for ``fused`` and ``foreach`` both True, NotImplementedError for
    ``differentiable=True``.
    """
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("numgrad's optimizers step outside autograd: "
                                  "differentiable=True is not supported")

"""PyTorch's implementation switches of an optimizer (``foreach``, ``capturable``,
``differentiable``, ``fused``): accepted and kept in ``param_groups`` (and so in
``state_dict``) as PyTorch's optimizers keep them. numgrad has one implementation of each
update, so ``foreach``, ``fused`` and ``capturable`` choose nothing and change no number;
``differentiable=True`` (a step autograd can go through) is refused."""
from __future__ import annotations


def impl_flags(foreach=None, differentiable=False, fused=None, **more) -> dict:
    """The flags as the defaults entries PyTorch's optimizer shows, in its order
    (``more``, e.g. ``capturable``, goes where the caller puts it in the keywords).

    >>> impl_flags(foreach=None, differentiable=False, fused=None)
    {'foreach': None, 'differentiable': False, 'fused': None}

    Raises RuntimeError for ``fused`` and ``foreach`` both True, NotImplementedError for
    ``differentiable=True``.
    """
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("numgrad's optimizers step outside autograd: "
                                  "differentiable=True is not supported")
    return {"foreach": foreach, **more, "differentiable": differentiable, "fused": fused}

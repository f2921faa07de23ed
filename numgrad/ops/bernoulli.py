"""``bernoulli`` / ``Tensor.bernoulli_``: 0/1 draws from numgrad's generator with
probabilities ``input`` (or one ``p``), as PyTorch's; like every draw, refused inside
``@ng.jit`` (``compiler.random_watch``)."""
from __future__ import annotations

import numpy as np

import numgrad.creation as _creation
import numgrad.dtypes as _dt
from numgrad.ops.conv import named
from numgrad.tensor import Tensor


def _draw(like: Tensor, probs, generator) -> Tensor:
    """0/1 values of ``like``'s shape, dtype and device, 1 with probability ``probs``."""
    # The generator first: inside @ng.jit this is where the trace refuses the draw, with the
    # message every random factory gives (compiler.random_watch).
    rng = generator if generator is not None else _creation._generator()
    if not like.dtype.is_floating_point:
        name = _dt.SCALAR_NAMES.get(like.dtype.name, like.dtype.name)
        raise NotImplementedError(f'"bernoulli_tensor_cpu_p_" not implemented for \'{name}\'')
    if isinstance(probs, Tensor):
        probs = probs.detach()
        if type(probs._data) is np.ndarray or hasattr(probs._data, "_ng_host"):  # has values
            p = probs.cpu().numpy()
            if not ((p >= 0) & (p <= 1)).all():
                raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    elif not 0 <= probs <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={probs:g}")
    u = _creation.tensor(rng.random(tuple(like.shape)).astype(like.dtype.np), device=like.device)
    return (u < probs).to(like.dtype)


def bernoulli(input: Tensor, p: float | None = None, *, generator=None) -> Tensor:
    """1 with probability ``input`` (or ``p``), else 0, elementwise (``torch.bernoulli``);
    ``input``'s shape and dtype. Its gradient is zero, as PyTorch's.

    >>> ng.bernoulli(ng.tensor([0.0, 1.0]))
    tensor([0., 1.])

    Raises RuntimeError for probabilities outside [0, 1], NotImplementedError for an
    integer input.
    """
    out = _draw(input, input if p is None else p, generator)
    if input.requires_grad and p is None:
        out = named(input * 0.0 + out, "BernoulliBackward0")  # zero gradient, in the graph
    return out


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill ``self`` in place with 0/1 draws, 1 with probability ``p`` (a number or a
    tensor) (``Tensor.bernoulli_``).

    >>> ng.zeros(3).bernoulli_(1.0)
    tensor([1., 1., 1.])
    """
    return self.copy_(_draw(self, p, generator))


# The methods, bound here: ops.methods sits below ops.conv (whose ``named`` this uses), so it
# cannot import this module; the package imports it.
Tensor.bernoulli = bernoulli
Tensor.bernoulli_ = bernoulli_

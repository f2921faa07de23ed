"""nn.layers: ``Linear``, ``Embedding``, ``LayerNorm``, ``Dropout``, ``Identity``.

Room: nn. Each layer owns its parameters (initialised as PyTorch does) and forwards to the
functional form in ``nn.functional``; ``device=``/``dtype=`` are PyTorch's factory keywords.
"""
from __future__ import annotations

import math
import operator

import numgrad.creation as creation
import numgrad.nn.functional as F
import numgrad.nn.init as init
from numgrad.nn.module import Module
from numgrad.nn.parameter import Parameter


def _param(*shape, device=None, dtype=None):
    # PyTorch's checks on a layer's sizes (``nn.Linear(3.5, 2)`` must not build a layer).
    for i, s in enumerate(shape):
        if not hasattr(type(s), "__index__"):
            raise TypeError(_size_error(i, type(s).__name__))
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    t = creation.empty(*shape, dtype=dtype)
    return Parameter(t if device is None else t.to(device))


def _size_error(i, kind):
    """PyTorch's text for a size that is not an int (its wording depends on the place)."""
    if i == 0:
        return ("empty(): argument 'size' (position 1) must be tuple of ints, but found "
                f"element of type {kind} at pos 0")
    return (f"empty(): argument 'size' failed to unpack the object at pos {i + 1} with error "
            f'"type must be tuple of ints,but got {kind}"')


class Identity(Module):
    """Returns its input (``torch.nn.Identity``); extra arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        """``input`` itself."""
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` (``torch.nn.Linear``). The weight is kaiming-uniform with
    ``a=sqrt(5)`` and the bias U(-1/sqrt(in), 1/sqrt(in)), PyTorch's defaults.

    >>> layer = ng.nn.Linear(3, 2)
    >>> layer(ng.ones(4, 3)).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _param(out_features, in_features, device=device, dtype=dtype)
        if bias:
            self.bias = _param(out_features, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh weights with PyTorch's default initialisation."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """``input @ weight.T + bias``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        """``in_features=..., out_features=..., bias=...``."""
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``, initialised
    N(0, 1) with the ``padding_idx`` row zero (``torch.nn.Embedding``)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = _param(num_embeddings, embedding_dim, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh N(0, 1) rows, the padding row zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from numgrad.grad_mode import no_grad
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):
        """The rows of ``weight`` at the indices ``input``."""
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        """``num_embeddings, embedding_dim[, padding_idx=...]``."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then an elementwise affine map
    (weight ones, bias zeros) (``torch.nn.LayerNorm``)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape = tuple(shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = _param(*self.normalized_shape, device=device, dtype=dtype)
            if bias:
                self.bias = _param(*self.normalized_shape, device=device, dtype=dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        """``layer_norm(input, normalized_shape, weight, bias, eps)``."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``normalized_shape, eps=..., elementwise_affine=..., bias=...``."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class Dropout(Module):
    """Zero elements with probability ``p`` while training, scaling the rest by
    ``1 / (1 - p)``; the identity in ``eval()`` mode (``torch.nn.Dropout``).

    Raises ValueError unless ``0 <= p <= 1``."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        """``dropout(input, p, training)``."""
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """``p=..., inplace=...``."""
        return f"p={self.p}, inplace={self.inplace}"

"""nn.normalization: ``BatchNorm1d``, ``BatchNorm2d`` and ``GroupNorm`` (``torch.nn``).

Room: nn. Batch norm keeps ``running_mean``/``running_var``/``num_batches_tracked`` as
buffers (saved in the state_dict, updated in place while training), as PyTorch does.
"""
from __future__ import annotations

import numgrad.creation as creation
from numgrad.grad_mode import no_grad
import numgrad.nn.functional_norm as F
from numgrad.nn.layers import LayerNorm, _param
from numgrad.nn.module import Module


def _affine(module, n, affine, bias, device, dtype):
    """``weight`` and ``bias`` of ``n`` (or None each), as the norm layers register them."""
    if affine:
        module.weight = _param(n, device=device, dtype=dtype)
        if bias:
            module.bias = _param(n, device=device, dtype=dtype)
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            def buf(t):
                t = t if dtype is None else t.to(dtype)
                return t if device is None else t.to(device)
            self.register_buffer("running_mean", buf(creation.zeros(num_features)))
            self.register_buffer("running_var", buf(creation.ones(num_features)))
            nbt = creation.tensor(0)
            self.register_buffer("num_batches_tracked", nbt if device is None else
                                 nbt.to(device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean zeros, running variance ones, no batches tracked."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Fresh running statistics; weight ones, bias zeros."""
        self.reset_running_stats()
        LayerNorm.reset_parameters(self)

    def forward(self, input):
        """Batch statistics while training (updating the running ones), else the running
        statistics (PyTorch's rules for ``momentum=None`` and ``track_running_stats``)."""
        if input.ndim not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got "
                             f"{input.ndim}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        """``num_features, eps=..., momentum=..., affine=..., bias=..., track_running_stats``."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` per channel (``torch.nn.BatchNorm1d``).

    >>> ng.nn.BatchNorm1d(3)(ng.randn(4, 3)).shape
    torch.Size([4, 3])
    """
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` per channel (``torch.nn.BatchNorm2d``).

    >>> ng.nn.BatchNorm2d(3)(ng.randn(2, 3, 4, 4)).shape
    torch.Size([2, 3, 4, 4])
    """
    _dims = (4,)


class GroupNorm(Module):
    """Normalise groups of channels per sample, then an affine map per channel (weight ones,
    bias zeros) (``torch.nn.GroupNorm``).

    >>> ng.nn.GroupNorm(2, 4)(ng.randn(2, 4, 3)).shape
    torch.Size([2, 4, 3])

    Raises ValueError when ``num_channels`` is not divisible by ``num_groups``.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, bias: bool = True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    reset_parameters = LayerNorm.reset_parameters  # weight ones, bias zeros

    def forward(self, input):
        """``group_norm(input, num_groups, weight, bias, eps)``."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``num_groups, num_channels, eps=..., affine=..., bias=...``."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")

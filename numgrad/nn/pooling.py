"""nn.pooling: ``MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d``,
``AdaptiveMaxPool2d`` (``torch.nn``).

Room: nn. Parameter-free modules holding their options, over ``nn.functional_conv``.
"""
from __future__ import annotations

import numgrad.nn.functional_conv as F
from numgrad.nn.module import Module


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        """The pooled input (and the indices of the maxima with ``return_indices``)."""
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=..., dilation=..., ceil_mode=...``."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, L)`` (``torch.nn.MaxPool1d``).

    >>> ng.nn.MaxPool1d(2)(ng.ones(1, 2, 6)).shape
    torch.Size([1, 2, 3])
    """
    _fn = F.max_pool1d


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, H, W)`` (``torch.nn.MaxPool2d``).

    >>> ng.nn.MaxPool2d(2)(ng.ones(1, 2, 6, 6)).shape
    torch.Size([1, 2, 3, 3])
    """
    _fn = F.max_pool2d


class AvgPool1d(Module):
    """Mean over sliding windows of ``(N, C, L)`` (``torch.nn.AvgPool1d``).

    >>> ng.nn.AvgPool1d(3)(ng.ones(1, 2, 6)).shape
    torch.Size([1, 2, 2])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = F._tuple(kernel_size, 1)
        self.stride = F._tuple(stride if stride is not None else kernel_size, 1)
        self.padding = F._tuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        """``avg_pool1d(input, ...)``."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over sliding windows of ``(N, C, H, W)`` (``torch.nn.AvgPool2d``).

    >>> ng.nn.AvgPool2d(2)(ng.ones(1, 2, 6, 6)).shape
    torch.Size([1, 2, 3, 3])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        """``avg_pool2d(input, ...)``."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        """The input pooled to ``output_size``."""
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        """``output_size=...``."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Mean over ``output_size`` windows covering ``(N, C, L)`` (``torch.nn.AdaptiveAvgPool1d``).

    >>> ng.nn.AdaptiveAvgPool1d(2)(ng.ones(1, 2, 5)).shape
    torch.Size([1, 2, 2])
    """
    _fn = F.adaptive_avg_pool1d


class AdaptiveAvgPool2d(_AdaptivePool):
    """Mean over an ``output_size`` grid covering ``(N, C, H, W)``
    (``torch.nn.AdaptiveAvgPool2d``).

    >>> ng.nn.AdaptiveAvgPool2d((1, 1))(ng.ones(1, 2, 5, 5)).shape
    torch.Size([1, 2, 1, 1])
    """
    _fn = F.adaptive_avg_pool2d


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max over an ``output_size`` grid covering ``(N, C, H, W)``
    (``torch.nn.AdaptiveMaxPool2d``).

    >>> ng.nn.AdaptiveMaxPool2d(2)(ng.ones(1, 2, 5, 5)).shape
    torch.Size([1, 2, 2, 2])
    """

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        """``adaptive_max_pool2d(input, output_size)``."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)

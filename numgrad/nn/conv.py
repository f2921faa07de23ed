"""nn.conv: ``Conv1d``, ``Conv2d`` and ``ConvTranspose2d`` (``torch.nn``).

Room: nn. Each owns its weight and bias, initialised as PyTorch does (kaiming-uniform with
``a=sqrt(5)``, the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))), and forwards to
``nn.functional_conv``; a ``padding_mode`` other than "zeros" pads with ``F.pad`` first.
"""
from __future__ import annotations

import numgrad.nn.functional_conv as F
from numgrad.nn.layers import Linear, _param
from numgrad.nn.module import Module

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", output_padding=0,
                 device=None, dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in F._tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._tuple(kernel_size, n)
        self.stride = F._tuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else F._tuple(padding, n, "padding")
        self.dilation = F._tuple(dilation, n, "dilation")
        self.output_padding = F._tuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        self.transposed = self._transposed
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = _param(*shape, device=device, dtype=dtype)
        if bias:
            self.bias = _param(out_channels, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    # Linear's: kaiming-uniform(a=sqrt(5)) weight, U(+-1/sqrt(fan_in)) bias, fan_in from the
    # weight's dims 1.. (in_channels/groups * kernel), as PyTorch's _ConvNd does.
    reset_parameters = Linear.reset_parameters

    def forward(self, input):
        """``conv{n}d(input, weight, bias, ...)``, padded by ``padding_mode`` first."""
        padding = self.padding
        if self.padding_mode != "zeros":
            input, padding = self._mode_pad(input)
        return type(self)._fn(input, self.weight, self.bias, self.stride, padding,
                              self.dilation, self.groups)

    def _mode_pad(self, input):
        """The input padded by ``padding_mode`` (the conv itself then pads nothing)."""
        if self.padding == "valid":
            return input, 0
        if self.padding == "same":
            pairs = F._conv_padding("same", self._n, self.kernel_size, self.dilation,
                                    self.stride)
        else:
            pairs = [(p, p) for p in self.padding]
        flat = [v for lo_hi in reversed(pairs) for v in lo_hi]
        return F.pad(input, flat, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        """PyTorch's summary: channels, kernel_size, stride and the non-default options."""
        n = self._n
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)`` (``torch.nn.Conv1d``).

    >>> ng.nn.Conv1d(2, 3, 3)(ng.ones(1, 2, 5)).shape
    torch.Size([1, 3, 3])
    """
    _n = 1
    _fn = F.conv1d

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device=device, dtype=dtype)


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C_in, H, W)`` (``torch.nn.Conv2d``): stride, padding (an
    int, a pair, "same" or "valid"), dilation, groups and ``padding_mode`` ("zeros",
    "reflect", "replicate", "circular").

    >>> ng.nn.Conv2d(1, 6, 5)(ng.ones(2, 1, 28, 28)).shape
    torch.Size([2, 6, 24, 24])

    Raises ValueError when the channels are not divisible by ``groups``.
    """
    _fn = F.conv2d

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device=device, dtype=dtype)


class ConvTranspose2d(_ConvNd):
    """The transpose (adjoint) of ``Conv2d`` (``torch.nn.ConvTranspose2d``); its weight is
    ``(C_in, C_out / groups, kH, kW)``.

    >>> ng.nn.ConvTranspose2d(2, 3, 3, stride=2)(ng.ones(1, 2, 4, 4)).shape
    torch.Size([1, 3, 9, 9])
    """
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        """``conv_transpose2d(input, weight, bias, ...)``; ``output_size`` picks the
        output padding that gives that size (the stride leaves a choice)."""
        output_padding = self.output_padding
        if output_size is not None:
            if len(output_size) not in (2, input.ndim):
                raise ValueError(f"ConvTranspose2D: for {input.ndim}D input, output_size must "
                                 f"have 2 or {input.ndim} elements (got {len(output_size)})")
            output_padding = self._output_padding(input, list(output_size)[-2:])
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)

    def _output_padding(self, input, size):
        spatial = tuple(input.shape[-2:])
        lo = [(s - 1) * st - 2 * p + d * (k - 1) + 1 for s, st, p, d, k in
              zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size)]
        hi = [m + st - 1 for m, st in zip(lo, self.stride)]
        if any(not a <= s <= b for a, s, b in zip(lo, size, hi)):
            raise ValueError(f"requested an output size of {size}, but valid sizes range from "
                             f"{lo} to {hi} (for an input of {list(spatial)})")
        return tuple(s - a for s, a in zip(size, lo))

"""nn.activation_extra: ``LeakyReLU``, ``ELU``, ``SiLU``, ``Softplus``, ``Hardtanh``
(``torch.nn``).

Room: nn. Parameter-free modules over ``nn.functional``.
"""
from __future__ import annotations

import numgrad.nn.functional as F
from numgrad.nn.module import Module


def _maybe_inplace(input, inplace, fn):
    if not inplace:
        return fn(input)
    from numgrad.ops.inplace import apply_inplace
    return apply_inplace(input, fn)


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x`` (``torch.nn.LeakyReLU``).

    >>> ng.nn.LeakyReLU(0.1)(ng.tensor([-1., 2.]))
    tensor([-0.1000,  2.0000])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        """``leaky_relu(input, negative_slope)``."""
        return _maybe_inplace(input, self.inplace,
                              lambda x: F.leaky_relu(x, self.negative_slope))

    def extra_repr(self) -> str:
        """``negative_slope=...[, inplace=True]``."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)`` (``torch.nn.ELU``).

    >>> ng.nn.ELU()(ng.tensor([0., 2.]))
    tensor([0., 2.])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        """``elu(input, alpha)``."""
        return _maybe_inplace(input, self.inplace, lambda x: F.elu(x, self.alpha))

    def extra_repr(self) -> str:
        """``alpha=...[, inplace=True]``."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class SiLU(Module):
    """``x * sigmoid(x)`` (``torch.nn.SiLU``).

    >>> ng.nn.SiLU()(ng.tensor([0.]))
    tensor([0.])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """``silu(input)``."""
        return F.silu(input, self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when in place."""
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (``torch.nn.Softplus``).

    >>> ng.nn.Softplus()(ng.tensor([30.]))
    tensor([30.])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        """``softplus(input, beta, threshold)``."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        """``beta=..., threshold=...``."""
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``input`` clamped to ``[min_val, max_val]`` (``torch.nn.Hardtanh``).

    >>> ng.nn.Hardtanh()(ng.tensor([-3., 0.5]))
    tensor([-1.0000,  0.5000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise AssertionError("max_val must be greater than min_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        """``hardtanh(input, min_val, max_val)``."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        """``min_val=..., max_val=...[, inplace=True]``."""
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                + (", inplace=True" if self.inplace else ""))

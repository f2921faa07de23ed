"""accelerator: which accelerator numgrad would use, if any (``torch.accelerator``).

Room: core. Answers from ``devices.cuda_is_available`` (fast without a GPU: no
numba.cuda import); CUDA, or Numba's CUDA simulator, is numgrad's only accelerator.
"""
from __future__ import annotations

import numgrad.devices as devices  # imported with numgrad: ng.cuda then costs no import either


def is_available() -> bool:
    """Whether an accelerator (CUDA) can hold tensors (``torch.accelerator.is_available``).

    >>> ng.accelerator.is_available() == ng.cuda.is_available()
    True
    """
    return devices.cuda_is_available()


def current_accelerator(check_available: bool = False):
    """``device(type='cuda')`` when CUDA is available, else None
    (``torch.accelerator.current_accelerator``). Programs pick their device with it:

    >>> device = ng.accelerator.current_accelerator() or "cpu"
    """
    from numgrad.tensor import device
    return device("cuda") if is_available() else None


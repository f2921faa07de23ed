"""devices: moving tensors between devices.

Room: core. The CUDA backend plugs in here (a later stage); until then asking
for ``cuda`` says so clearly instead of failing somewhere deep.
"""
from __future__ import annotations


def cuda_is_available() -> bool:
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # numba missing or no driver: both mean "no"
        return False


def transfer(t, device):
    if device.type == "cpu":
        return t
    raise RuntimeError(
        f"numgrad cannot place tensors on '{device}' yet: the CUDA backend is not part of this "
        "build. Use device='cpu'.")

"""``torch.backends.cudnn``: numgrad does not use cuDNN, so it is never available; the
switches programs set (``benchmark``, ``deterministic``...) are plain module attributes with
PyTorch's defaults, read by nothing.

>>> is_available(), version(), benchmark
(False, None, False)
"""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: numgrad's CUDA kernels are its own."""
    return False


def version():
    """None, as PyTorch's without cuDNN."""
    return None

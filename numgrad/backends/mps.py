"""``torch.backends.mps``: numgrad has no Metal backend.

>>> is_available(), is_built()
(False, False)
"""


def is_available() -> bool:
    """False: numgrad runs on the CPU and on CUDA GPUs only."""
    return False


def is_built() -> bool:
    """False: numgrad is not built with Metal (MPS) support."""
    return False

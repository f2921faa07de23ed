"""``torch.xpu``: numgrad has no Intel GPU backend; programs that probe for one find none.

>>> is_available(), device_count()
(False, 0)
"""


def is_available() -> bool:
    """False: numgrad runs on the CPU and on CUDA GPUs only."""
    return False


def device_count() -> int:
    """0: no XPU device."""
    return 0

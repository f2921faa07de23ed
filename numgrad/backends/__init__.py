"""``torch.backends`` as programs query it: ``mps`` (Apple GPUs) is never available to numgrad,
``cudnn`` is not used (numgrad's CUDA kernels are its own), so its switches are accepted and
kept but choose nothing.

>>> import numgrad.backends
>>> numgrad.backends.mps.is_available(), numgrad.backends.cudnn.is_available()
(False, False)
"""
from numgrad.backends import cudnn, mps  # noqa: F401

"""nn: the functional layer library (``ng.nn.functional``)."""
from numgrad.nn import functional  # noqa: F401

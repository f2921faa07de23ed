"""utils: data loading (``ng.utils.data``, as ``torch.utils.data``)."""
import numgrad.utils.data as data  # noqa: F401
import numgrad.utils.checkpoint as checkpoint  # noqa: F401,E402

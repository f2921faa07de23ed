"""utils: data loading (``ng.utils.data``, as ``torch.utils.data``)."""
from numgrad.utils import data  # noqa: F401
from numgrad.utils import checkpoint  # noqa: F401,E402
from numgrad.utils import benchmark  # noqa: F401,E402

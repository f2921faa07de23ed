"""nn.utils: helpers for training loops (``torch.nn.utils``)."""
from numgrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from numgrad.nn.utils import rnn  # noqa: F401,E402
from numgrad.nn.utils import parametrize  # noqa: F401,E402

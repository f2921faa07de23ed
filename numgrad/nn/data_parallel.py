"""``nn.DataParallel``: PyTorch's single-process wrapper, as it behaves with no GPU or one:
the wrapped module runs the whole batch itself (numgrad keeps a module on one device, so there
is nothing to replicate); parameters and state_dict keys sit under ``module.``. For data
parallelism across processes see ``numgrad.distributed``."""
from __future__ import annotations

from numgrad.nn.module import Module


class DataParallel(Module):
    """Wrap ``module``; calling the wrapper calls it (``torch.nn.DataParallel`` without GPUs
    to spread over).

    >>> net = nn.DataParallel(nn.Linear(2, 1))
    >>> net(ng.ones(3, 2)).shape, list(net.state_dict())
    (torch.Size([3, 1]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

"""ops.device_copy: ``to_device``, the differentiable copy between devices.

Room: ops. ``t.to("cuda")``, ``t.cuda()`` and ``t.cpu()`` apply it; like PyTorch's
``ToCopyBackward0`` its gradient is the incoming gradient copied back to the source
device. The copy itself is the device backend's (``numgrad.devices``): a host array is
uploaded by ``impl``; a CUDA payload's interpreter copies it down or across.
"""
from __future__ import annotations

import numgrad.devices as devices
from numgrad.ops.registry import defop


def _upload(x, device, src):
    return devices.upload(x, device)


to_device = defop("to_device", inputs=("x",), params=("device", "src"), impl=_upload,
                  abstract=lambda x, device, src: (x.shape, x.dtype), node="ToCopyBackward0",
                  jit=False)
to_device.defvjp(lambda g, src, device: to_device(g, device=src, src=device))


def transfer(t, device):
    """``t`` on ``device``: a differentiable copy (``ToCopyBackward0``); ``t`` itself when
    it is there already."""
    device = devices.target(device)
    if device == t.device:
        return t
    return to_device(t, device=str(device), src=str(t.device))

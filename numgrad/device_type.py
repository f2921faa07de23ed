"""device_type: ``ng.device``, where a tensor lives.

Room: leaf (imports nothing of numgrad). A module of its own so that the CUDA runtime
(``numgrad.cuda``), which sits below ``tensor``, names devices as the tensor does.

>>> device("cuda:1")
device(type='cuda', index=1)
"""
from __future__ import annotations


class device:
    """Where a tensor lives: ``device(type='cpu')`` or ``device(type='cuda', index=0)``."""

    __slots__ = ("type", "index")

    def __init__(self, spec="cpu", index=None):
        if isinstance(spec, device):
            spec, index = spec.type, spec.index
        spec = str(spec)
        if ":" in spec:
            spec, idx = spec.split(":", 1)
            index = int(idx)
        if spec not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device "
                               f"string: {spec}")
        self.type = spec
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        extra = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{extra})"

    # ``with ng.device("meta"):``: factories given no device use this one inside (PyTorch's
    # device context). numgrad.defaults, above this leaf, enters its setter here.
    _ng_set_default = None

    def __enter__(self):
        _entered.append(device._ng_set_default(self))
        return self

    def __exit__(self, *exc):
        device._ng_set_default(_entered.pop())


_entered = []  # the default devices the open `with device(...)` blocks replaced

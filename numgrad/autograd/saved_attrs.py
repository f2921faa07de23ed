"""``grad_fn._saved_<name>``: what a backward node keeps for its backward, read by PyTorch's
names (``_saved_self``, ``_saved_other``, ``_saved_result``, ``_saved_exponent``...).

A primitive's inputs are named by its rule (``x``, ``y``); PyTorch calls the first ``self``
and the second ``other``, and a saved output ``result``. Other names are the primitive's own
input or parameter names. Reading a saved tensor unpacks it, as PyTorch's does: through the
unpack hook of ``saved_tensors_hooks`` when one packed it, and a RuntimeError once backward
freed it.

>>> a, b = ng.ones(2, requires_grad=True), ng.ones(2, requires_grad=True)
>>> (a * b).grad_fn._saved_self is a
True
"""
from __future__ import annotations

_ALIASES = {"self": 0, "other": 1}


def saved_attribute(node, name: str):
    """The value behind ``node._saved_<key>`` (``name``); AttributeError as Python's when the
    node keeps nothing by that name."""
    if not name.startswith("_saved_"):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{name}'")
    key = name[len("_saved_"):]
    inputs = node._prim.inputs
    if key == "result":
        key = "out"
    elif key in _ALIASES and _ALIASES[key] < len(inputs):
        key = inputs[_ALIASES[key]]
    if node._saved.get(key) is not None:
        # unpacked as the node's backward unpacks it (a version check, hooks, freed)
        value = node._kwargs((key,))[key]
        return tuple(value) if isinstance(value, list) else value
    if key in node._params:
        return node._params[key]
    raise AttributeError(f"'{node.name()}' object has no attribute '{name}'")

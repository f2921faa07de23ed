"""compiler.saved_hooks: ``saved_tensors_hooks`` around a call of an ``@ng.jit`` function.

Room: compiler. A compiled call saves for its backward what its plan saves, not what eager
mode's nodes would: the inputs the backward program reads and the forward's saved
residuals (the values the partitioner chose to keep rather than recompute). When a
``saved_tensors_hooks`` context (or ``save_on_cpu``) is open around the call, each of
those goes through the innermost ``pack_hook`` as soon as the forward has run (inputs
first, in argument order, then the residuals in the order the forward made them), and
through its ``unpack_hook`` when the backward runs, at every call, as ``torch.compile``
does at its graph's boundaries. As eagerly, the hooks then own what was saved: no
"modified by an inplace operation" check is made on it.
"""
from __future__ import annotations

from numgrad.autograd import graph
from numgrad.tensor import Tensor


def active() -> bool:
    """Whether a ``saved_tensors_hooks`` context is open around this call."""
    return bool(graph._SAVED_HOOKS)


def pack(node, read_inputs):
    """Pack what the compiled backward ``node`` keeps: the inputs at ``read_inputs`` and its
    saved residuals. The node then holds only what ``pack_hook`` returned."""
    hooks = graph._SAVED_HOOKS[-1]
    with graph.hooks_off():  # what the pack hook itself computes saves plainly
        arrays, tensors = node._arrays, node._tensors
        inputs = []
        for i in read_inputs:
            a = arrays[i]
            t = tensors[i] if tensors[i]._data is a else Tensor._make(a)
            inputs.append((i, hooks.pack_hook(t), a.shape, a.dtype))
            arrays[i] = None
        saved = [(None, hooks.pack_hook(Tensor._make(a)), a.shape, a.dtype)
                 for a in node._saved]
    node._saved = None
    node._versions = []  # the hooks own what was saved: no version check, as eagerly
    return (hooks.unpack_hook, inputs, saved)


def unpack(node):
    """``(arrays, saved)`` for one run of the backward: what ``unpack_hook`` gives back."""
    unpack_hook, inputs, saved = node._hooked
    arrays = list(node._arrays)
    for i, p, shape, dtype in inputs:
        arrays[i] = _array(unpack_hook(p), shape, dtype)
    return arrays, [_array(unpack_hook(p), shape, dtype) for _, p, shape, dtype in saved]


def _array(t, shape, dtype):
    if not isinstance(t, Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(t).__name__}")
    if tuple(t.shape) != tuple(shape):
        raise RuntimeError(f"saved tensor unpack_hook returned a tensor of shape "
                           f"{tuple(t.shape)}; the compiled backward saved one of shape "
                           f"{tuple(shape)}")
    d = t._data
    return d if d.dtype == dtype else d.astype(dtype)

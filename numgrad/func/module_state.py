"""func.module_state: calling a Module with other parameters (``functional_call``) and
stacking the states of an ensemble (``stack_module_state``).

Room: func. ``functional_call`` swaps the tensors into the module's parameter and buffer
tables for the duration of the call (and puts the originals back, even on error), so
``grad``/``vmap`` can take the parameters as arguments: per-sample gradients, ensembles.
"""
from __future__ import annotations

import contextlib


def _owner(module, name):
    """``(submodule, attribute)`` for a dotted name, PyTorch's error for a bad path."""
    path, _, attr = name.rpartition(".")
    return module.get_submodule(path), attr


@contextlib.contextmanager
def _swapped(module, tensors, strict):
    saved = []
    try:
        for name, value in tensors.items():
            m, attr = _owner(module, name)
            table = ("_parameters" if attr in m._parameters else
                     "_buffers" if attr in m._buffers else None)
            if table is None:
                if strict:
                    raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}"
                                       f":\n\tUnexpected key(s): '{name}'.")
                saved.append((m.__dict__, attr, m.__dict__.get(attr, _MISSING)))
                m.__dict__[attr] = value
                continue
            d = getattr(m, table)
            saved.append((d, attr, d[attr]))
            d[attr] = value
        yield
    finally:
        for d, attr, old in reversed(saved):
            if old is _MISSING:
                d.pop(attr, None)
            else:
                d[attr] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict by dotted name, or a tuple of dicts)
    (``torch.func.functional_call``). Missing names keep the module's own tensors.

    >>> lin = ng.nn.Linear(2, 1)
    >>> p = {"weight": ng.ones(1, 2), "bias": ng.zeros(1)}
    >>> ng.func.functional_call(lin, p, (ng.tensor([1., 2.]),))
    tensor([3.])
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        merged = dict(dicts)
    elif isinstance(dicts, (tuple, list)) and all(isinstance(d, dict) for d in dicts):
        merged = {}
        for d in dicts:
            for k in d:
                if k in merged:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                     "functional call is ambiguous")
            merged.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(dicts)}")
    if strict:
        known = {n for n, _ in module.named_parameters()} | {n for n, _ in
                                                             module.named_buffers()}
        missing = sorted(known - merged.keys())
        unexpected = sorted(merged.keys() - known)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected)
                             + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(parts))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, merged, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """``(params, buffers)``: each name's tensors from ``models`` stacked on a new leading
    dim, as new leaves (parameters require grad) (``torch.func.stack_module_state``), ready
    for ``vmap(functional_call)`` over an ensemble.

    >>> ms = [ng.nn.Linear(2, 3) for _ in range(4)]
    >>> params, buffers = ng.func.stack_module_state(ms)
    >>> params["weight"].shape
    torch.Size([4, 3, 2])
    """
    from numgrad.ops.layout import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named, grad):
        tables = [dict(named(m)) for m in models]
        out = {}
        for n in tables[0]:
            t = stack([table[n].detach() for table in tables])
            out[n] = t.requires_grad_(True) if grad and t.dtype.is_floating_point else t
        return out

    params = stacked(lambda m: m.named_parameters(), True)
    buffers = stacked(lambda m: m.named_buffers(), False)
    return params, buffers


__all__ = ["functional_call", "stack_module_state"]

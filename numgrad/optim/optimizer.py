"""optim.optimizer: ``Optimizer``, the base of SGD, Adam and AdamW (``torch.optim.Optimizer``).

Room: optim. Builds on tensor, grad_mode and nn. Holds the parameter groups (a list of
dicts, each with its own hyperparameters) and the per-parameter state, and saves both in
PyTorch's ``state_dict`` format: state keyed by the parameter's index across the groups,
groups with ``'params'`` as index lists.
"""
from __future__ import annotations

import copy
import warnings
from collections import defaultdict

import numgrad.tracing_hook as tracing_hook
from numgrad.dtypes import SCALAR_NAMES
from numgrad.errors import TracingError, user_location
from numgrad.grad_mode import enable_grad, no_grad
from numgrad.nn.module import _zero_grad
from numgrad.tensor import Tensor

_UNDER_JIT = (
    "optimizer.{what}() {where} cannot run inside a function traced by @ng.jit: it updates "
    "parameters and optimizer state in place, outside the traced graph. Call "
    "optimizer.zero_grad() and optimizer.step() outside the jitted function; jit the loss "
    "(or ng.value_and_grad of it) and step eagerly:\n"
    "    loss_and_grads = ng.jit(ng.value_and_grad(loss_fn, argnums=...))\n"
    "or, with backward():\n"
    "    loss = jitted_loss(x, y); loss.backward(); optimizer.step()")


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _refuse_under_trace(what):
    if tracing_hook.capture is not None:
        raise TracingError(_UNDER_JIT.format(what=what, where=user_location()))


class Optimizer:
    """Base class: parameter groups, per-parameter ``state``, ``zero_grad``, ``step`` and
    ``state_dict`` (``torch.optim.Optimizer``). Subclasses implement ``_update(group)``.

    Raises ValueError for an empty parameter list or a non-leaf tensor, TypeError for a bare
    tensor instead of an iterable of them.
    """

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_tensor_type(params)}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (``{"params": [...], "lr": ...}``); options it leaves
        out take the optimizer's defaults (``Optimizer.add_param_group``).

        Raises ValueError for a parameter already in another group or a missing required
        option."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", UserWarning, stacklevel=3)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to None (the default) or to zeros
        (``Optimizer.zero_grad``). Raises TracingError inside ``@ng.jit``."""
        _refuse_under_trace("zero_grad")
        for group in self.param_groups:
            for p in group["params"]:
                _zero_grad(p, set_to_none)

    def step(self, closure=None):
        """Update every parameter that has a gradient, in place (``Optimizer.step``).
        ``closure`` (which re-evaluates the loss and calls backward) runs first, with grad
        enabled; its loss is returned. Raises TracingError inside ``@ng.jit``."""
        _refuse_under_trace("step")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update(group)
        return loss

    def _update(self, group):
        raise NotImplementedError

    # -------------------------------------------------------------- state dict
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` in
        PyTorch's format; the state's tensors are the optimizer's own (not copies)."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict()`` returned (copies it; buffers are cast to each
        parameter's dtype and device) (``Optimizer.load_state_dict``).

        Raises ValueError when the groups do not match this optimizer's in number or size."""
        state_dict = _copy_tree(state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"])
               for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {i: p for g, s in zip(self.param_groups, saved_groups)
                    for i, p in zip(s["params"], g["params"])}
        state = defaultdict(dict)
        for i, entry in state_dict["state"].items():
            p = by_index.get(i)
            if p is None:
                state[i] = entry
                continue
            state[p] = {k: _cast_like(v, p) if k != "step" else v for k, v in entry.items()}
        self.state = state
        self.param_groups = [dict(s, params=g["params"])
                             for g, s in zip(self.param_groups, saved_groups)]

    # ---------------------------------------------------------------- helpers
    def _stepping(self, group, buffers=()):
        """``(param, grad, state, kernels)`` for each parameter of ``group`` that has a
        gradient. A parameter's first step creates its state in PyTorch's order: a float32
        0-d ``step``, then each of ``buffers`` (zeros like the parameter; ``mu_product``, a
        float32 one)."""
        from numgrad.optim.kernels import kernels_for, step_state, zeros_state
        for p in group["params"]:
            grad = self._grad_of(p, group)
            if grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = step_state()
                for name in buffers:
                    state[name] = step_state(1.0) if name == "mu_product" else zeros_state(p)
            yield p, grad, state, kernels_for(p)

    @staticmethod
    def _grad_of(p, group):
        g = p._grad
        if g is None:
            return None
        if g.device != p.device or g.dtype is not p.dtype:
            raise RuntimeError(f"the gradient of a parameter ({g.dtype} on {g.device}) does not "
                               f"match the parameter ({p.dtype} on {p.device})")
        return -g if group.get("maximize") else g


def _copy_tree(obj):
    """A deep copy of a state dict whose tensors are cloned on their own devices
    (``copy.deepcopy`` would take CUDA tensors through NumPy)."""
    if isinstance(obj, Tensor):
        from numgrad.ops import clone
        with no_grad():
            return clone(obj.detach())
    if isinstance(obj, dict):
        return type(obj)((k, _copy_tree(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_copy_tree(v) for v in obj)
    return copy.deepcopy(obj)


def _cast_like(v, p):
    if not isinstance(v, Tensor):
        return v
    if v.device != p.device:
        v = v.to(p.device)
    if v.dtype.is_floating_point and v.dtype is not p.dtype:
        v = v.to(p.dtype)
    return v.detach()


def _tensor_type(t):
    return f"numgrad.{SCALAR_NAMES.get(t.dtype.name, '')}Tensor"

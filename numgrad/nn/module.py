"""nn.module: ``Module``, the base class of layers and models (``torch.nn.Module``).

Room: nn. Assigning a ``Parameter``, a ``Module`` or (after ``register_buffer``) a tensor to an
attribute registers it, in assignment order; traversal (``named_parameters``, ``state_dict``,
``modules``...) walks a module's own entries first, then its children's, as PyTorch does, so
names and orders line up with a PyTorch model of the same structure.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from numgrad.grad_mode import is_grad_enabled, no_grad
from numgrad.nn.parameter import Parameter
from numgrad.size import Size
from numgrad.tensor import RemovableHandle, Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and those it did not use."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _type_name(value):
    return "numgrad.Tensor" if isinstance(value, Tensor) else type(value).__name__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of every layer and model (``torch.nn.Module``).

    >>> class Net(ng.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = ng.nn.Linear(2, 1)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> [name for name, _ in Net().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    training: bool
    # For @ng.jit's guards (compiler.guards): the dicts __getattr__ serves attributes from,
    # and those whose key set decides what a call does (a child or hook added later).
    _ng_attr_tables = ("_parameters", "_buffers", "_modules")
    _ng_keyed = ("_modules", "_forward_hooks", "_forward_pre_hooks")

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        """The computation; subclasses override it. Call the module, not ``forward``, so
        hooks run."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        for hook in tuple(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        d = self.__dict__
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            from numgrad.nn.backward_hooks import _Call
            call = _Call(self, len(args)) if is_grad_enabled() else None
            if call is not None and self._backward_hooks:
                args = call.wrap_inputs(args)
        else:
            call = None
        out = self.forward(*args, **kwargs)
        for hook in tuple(self._forward_hooks.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out if call is None else call.wrap_outputs(out)

    # ------------------------------------------------------------ registration
    def _check_name(self, name, kind, table):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (or a None placeholder) under ``name`` (``Module.register_parameter``).

        Raises TypeError for a tensor that is not a Parameter, KeyError for a bad name."""
        self._check_name(name, "parameter", self.__dict__.get("_parameters", ()))
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(numgrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running statistics, masks); it is
        in ``state_dict`` unless ``persistent=False`` (``Module.register_buffer``)."""
        self._check_name(name, "buffer", self.__dict__.get("_buffers", ()))
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(numgrad Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (``Module.add_module``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self.__dict__.get("_modules", ()))
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(numgrad.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            d["_modules"][name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(numgrad.nn.Module or None expected)")
            d["_modules"][name] = None
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(numgrad Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        d = self.__dict__
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            d[key].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            entries = d.get(key)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[key]:
                del self.__dict__[key][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # --------------------------------------------------------------- traversal
    def _named_members(self, get, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in modules:
            for name, value in get(mod):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (mod_prefix + "." if mod_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs, dotted names, each shared parameter once
        (``Module.named_parameters``)."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module and (``recurse``) its descendants, in registration
        order (``Module.parameters``)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(name, buffer)`` pairs, dotted names (``Module.named_buffers``)."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module and (``recurse``) its descendants (``Module.buffers``)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, child)`` for the direct submodules (``Module.named_children``)."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """The direct submodules (``Module.children``)."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for this module (name ``""``) and every descendant, depth first
        (``Module.named_modules``)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, depth first (``Module.modules``)."""
        for _, m in self.named_modules():
            yield m

    def get_submodule(self, target: str) -> Module:
        """The descendant at the dotted path ``target`` (``Module.get_submodule``)."""
        mod = self
        for item in target.split(".") if target else []:
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every descendant, then on this module (``Module.apply``)."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -------------------------------------------------------------- state dict
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """Parameters and persistent buffers by dotted name, detached (sharing storage)
        unless ``keep_vars`` (``Module.state_dict``)."""
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict: dict, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy ``state_dict``'s tensors into this module's parameters and buffers
        (``Module.load_state_dict``); returns ``(missing_keys, unexpected_keys)``.

        With ``strict`` (the default) missing or unexpected keys raise RuntimeError with
        PyTorch's text; a shape mismatch always raises. Nothing is copied when it raises.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = OrderedDict()
        for mod_prefix, mod in self.named_modules():
            p = mod_prefix + "." if mod_prefix else ""
            for name, t in mod._parameters.items():
                if t is not None:
                    own[p + name] = (mod, "_parameters", name, t)
            for name, t in mod._buffers.items():
                if t is not None and name not in mod._non_persistent_buffers_set:
                    own[p + name] = (mod, "_buffers", name, t)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        for key, (_, _, _, t) in own.items():
            if key in state_dict:
                src = state_dict[key]
                if not isinstance(src, Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected '
                                  f"Tensor-like object from checkpoint but received "
                                  f"{type(src)}")
                elif tuple(src.shape) != t.shape:
                    errors.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{Size(src.shape)} from checkpoint, the shape in current "
                                  f"model is {t.shape}.")
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        with no_grad():
            for key, (mod, kind, name, t) in own.items():
                if key not in state_dict:
                    continue
                src = state_dict[key]
                if assign:
                    value = src if kind == "_buffers" or isinstance(src, Parameter) else \
                        Parameter(src, t.requires_grad)
                    getattr(mod, kind)[name] = value
                else:  # into the tensor itself, on its device
                    t.copy_(src if src.device == t.device else src.to(t.device))
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------- modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode here and in every descendant (``Module.train``); returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        """Evaluation mode (``train(False)``): dropout off (``Module.eval``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter (``Module.requires_grad_``)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (the default) or to zeros
        (``Module.zero_grad``)."""
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # ------------------------------------------------------- dtype and device
    def _apply(self, fn):
        # NOTE: as PyTorch, the Parameter objects stay (an optimizer holding them keeps
        # working); only their data (and their grads' data) is replaced.
        for m in self.modules():
            for p in m._parameters.values():
                if p is None:
                    continue
                with no_grad():
                    p.data = fn(p)
                    if p._grad is not None:
                        p._grad = fn(p._grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move (``to("cuda")``) and/or cast floating parameters and buffers
        (``to(ng.float64)``) in place; returns self (``Module.to``)."""
        import numgrad.dtypes as dtypes
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)  # transfers are synchronous here
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, dtypes.dtype):
                dtype = a
            else:
                device = a
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            if device is not None:
                t = t.to(device)
            if dtype is not None and t.dtype.is_floating_point:
                t = t.to(dtype)
            return t
        return self._apply(convert)

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64 (``Module.double``)."""
        import numgrad.dtypes as dtypes
        return self.to(dtypes.float64)

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32 (``Module.float``)."""
        import numgrad.dtypes as dtypes
        return self.to(dtypes.float32)

    def cuda(self, device: int | str | None = None) -> Module:
        """Move parameters and buffers to a CUDA device (``Module.cuda``)."""
        return self.to("cuda" if device is None else
                       device if isinstance(device, str) else f"cuda:{device}")

    def cpu(self) -> Module:
        """Move parameters and buffers to the CPU (``Module.cpu``)."""
        return self.to("cpu")

    # ------------------------------------------------------------------ hooks
    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after every forward; a non-None return
        replaces the output (``Module.register_forward_hook``). Returns a removable
        handle."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, args)`` before every forward; a non-None return replaces
        the arguments (``Module.register_forward_pre_hook``)."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` once the gradients w.r.t. the
        module's positional inputs are computed; a tuple returned replaces ``grad_input``
        (``Module.register_full_backward_hook``).

        >>> lin = ng.nn.Linear(3, 2)
        >>> h = lin.register_full_backward_hook(lambda m, gi, go: print(go[0].shape))
        """
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_full_backward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` before the module's backward; a tuple returned
        replaces ``grad_output`` (``Module.register_full_backward_pre_hook``).

        >>> lin = ng.nn.Linear(3, 2)
        >>> h = lin.register_full_backward_pre_hook(lambda m, go: None)
        """
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr; layers override it."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        if not self._modules:
            return f"{self._get_name()}({extra})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


def _zero_grad(p, set_to_none):
    if p._grad is None:
        return
    if set_to_none:
        p._grad = None
        return
    g = p._grad
    if g.grad_fn is not None:
        g.detach_()
    else:
        g.requires_grad_(False)
    g.zero_()

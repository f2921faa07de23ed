"""Parametrizations (``torch.nn.utils.parametrize``): a module's parameter or buffer computed
from an unconstrained original each time it is read, ``module.weight = f(original)``.

Registering ``f`` on ``module.weight`` moves the tensor to
``module.parametrizations.weight.original``, turns ``weight`` into a property of a new class
``Parametrized<Class>`` and keeps ``f`` in a ``ParametrizationList``; assigning to ``weight``
goes through ``f.right_inverse`` when ``f`` has one.

>>> class Symmetric(nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).transpose(-1, -2)
>>> layer = register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all()), type(layer).__name__
(True, 'ParametrizedLinear')
"""
from __future__ import annotations

import collections.abc
import copy
import copyreg
from contextlib import contextmanager

from numgrad.grad_mode import no_grad
from numgrad.nn.containers import ModuleDict, ModuleList
from numgrad.nn.module import Module
from numgrad.nn.parameter import Parameter
from numgrad.tensor import Tensor

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside, each parametrized tensor is computed once, on its first read
    (``parametrize.cached``).

    >>> with cached():
    ...     pass
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    # PyTorch's dest.set_(src): dest keeps its identity (an optimizer holding it still sees
    # it) and takes src's values.
    dest.data = src


def _check(what, got, want, flag_hint, names):
    """The dtype and shape checks of registration, with PyTorch's messages."""
    for attr in ("dtype", "shape"):
        if getattr(got, attr) != getattr(want, attr):
            raise ValueError(f"{what} may not change the {attr} of the tensor, unless "
                             f"{flag_hint} enabled.\n{names[0]}.{attr}: {getattr(want, attr)}"
                             f"\n{names[1]}.{attr}: {getattr(got, attr)}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or ``original0``,
    ``original1``... when the first ``right_inverse`` returns a sequence)."""

    def __init__(self, modules, original, unsafe: bool = False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            for attr, want in (("dtype", original_dtype), ("shape", original_shape)):
                if getattr(Z, attr) != want:
                    raise ValueError(f"Registering a parametrization may not change the {attr} "
                                     "of the tensor, unless `unsafe` flag is enabled.\n"
                                     f"unparametrized {attr}: {want}\n"
                                     f"parametrized {attr}: {getattr(Z, attr)}")

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) so that the parametrized tensor becomes ``value``, through each
        parametrization's ``right_inverse`` (RuntimeError for one without)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                     f"element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{tensor.dtype} while `original{i}` has dtype "
                                     f"{original_i.dtype}")
                _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _default_deepcopy(self, memo):
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module: Module) -> None:
    # A class of this module's own, so that the properties added below touch no other
    # instance of its class (PyTorch's design).
    cls = module.__class__
    dct = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` read as ``parametrization(original)``; a second one on
    the same tensor is applied after the first (``parametrize.register_parametrization``).

    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> m = register_parametrization(nn.Linear(2, 2), "bias", Double())
    >>> bool((m.bias == 2 * m.parametrizations.bias.original).all())
    True

    Raises ValueError when ``module`` has no parameter or buffer by that name, or (unless
    ``unsafe``) when the parametrization changes the tensor's dtype or shape.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(X).__name__}.")
            _check("Registering a parametrization", X, Y, "the `unsafe` flag is",
                   (f"module.{tensor_name}", f"parametrization(module.{tensor_name})"))
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError("parametrization.right_inverse must return a tensor. "
                                         f"Got: {type(Z).__name__}")
                    for attr in ("dtype", "shape"):
                        if getattr(Z, attr) != getattr(Y, attr):
                            raise ValueError(
                                "The tensor returned by parametrization.right_inverse must "
                                f"have the same {attr} as module.{tensor_name}, unless the "
                                f"`unsafe` flag is enabled.\nmodule.{tensor_name}.{attr}: "
                                f"{getattr(Y, attr)}\nreturned {attr}: {getattr(Z, attr)}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given).

    >>> is_parametrized(nn.Linear(2, 2))
    False
    """
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations of ``tensor_name``: it becomes a plain parameter or buffer
    again, holding the parametrized value (``leave_parametrized``) or the original; the
    module gets its class back once nothing is parametrized.

    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> m = register_parametrization(nn.Linear(2, 2), "bias", Double())
    >>> type(remove_parametrizations(m, "bias")).__name__
    'Linear'

    Raises ValueError when ``tensor_name`` is not parametrized.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered.

    >>> type_before_parametrizations(nn.Linear(2, 2)).__name__
    'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (of ``tensor_name``, or all) on
    ``to_module`` too, sharing its original tensors; a module without parametrizations
    transfers nothing (``parametrize.transfer_parametrizations_and_params``)."""
    if not is_parametrized(from_module):
        return to_module
    names = from_module.parametrizations if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        src = from_module.parametrizations[name]
        for param_func in src:
            register_parametrization(to_module, name, param_func)
        dst = to_module.parametrizations[name]
        if hasattr(src, "original"):
            dst.original = src.original
        else:
            for i in range(src.ntensors):
                setattr(dst, f"original{i}", getattr(src, f"original{i}"))
    return to_module

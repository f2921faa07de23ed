"""func: composable function transforms (``torch.func``; JAX's spellings of the same).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call`` and ``stack_module_state``. Each is written with primitives and the
autograd engine, so each composes with the others and with ``@ng.jit``.

The names load on first use (PEP 562): ``numgrad.func.vmap`` itself needs only autograd and
the ops, so ``ng.autograd.functional.jacobian(..., vectorize=True)`` maps its vjp with it
without loading the compiler that ``grad`` and friends are built on.
"""
import importlib

from numgrad.func.vmap import vmap  # noqa: F401  (the function, not its module, is func.vmap)

_HOME = {"vmap": "vmap", "grad": "transforms", "grad_and_value": "transforms",
         "vjp": "transforms", "jvp": "transforms", "jacrev": "transforms",
         "jacfwd": "transforms", "hessian": "transforms", "functional_call": "module_state",
         "stack_module_state": "module_state"}

__all__ = list(_HOME)


def __getattr__(name):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'numgrad.func' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"numgrad.func.{home}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))

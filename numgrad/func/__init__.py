"""func: composable function transforms (``torch.func``; JAX's spellings of the same).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call`` and ``stack_module_state``. Each is written with primitives and the
autograd engine, so each composes with the others and with ``@ng.jit``.
"""
from numgrad.func.vmap import vmap  # noqa: F401
from numgrad.func.transforms import (grad, grad_and_value, vjp, jvp, jacrev, jacfwd,  # noqa: F401
                                     hessian)
from numgrad.func.module_state import functional_call, stack_module_state  # noqa: F401

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state"]

"""func: composable function transforms (``torch.func``; JAX's spellings of the same).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call`` and ``stack_module_state``. Each is written with primitives and the
autograd engine, so each composes with the others and with ``@ng.jit``.
"""
from numgrad.func.vmap import vmap  # noqa: F401

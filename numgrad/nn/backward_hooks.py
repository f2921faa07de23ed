"""nn.backward_hooks: ``Module.register_full_backward_hook`` / ``..._pre_hook`` at work.

Room: nn. As PyTorch's ``BackwardHook`` does, a call of a module with backward hooks
passes its tensor inputs and its tensor outputs through an identity Function
(``BackwardHookFunction``); a pre-hook on the outputs' node sees ``grad_output`` (and runs
the module's backward pre-hooks), one on the inputs' node sees ``grad_input`` and runs the
full backward hooks with both. Under ``@ng.jit`` these node pre-hooks become ``hook``
equations of the plan (``autograd.traced_hooks``), for any number of inputs and outputs.
"""
from __future__ import annotations

import warnings

from numgrad.autograd.function import Function
from numgrad.tensor import Tensor

_NO_INPUT_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
    "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.")


class BackwardHookFunction(Function):
    """The identity, recorded as a node the module's backward hooks attach to."""

    @staticmethod
    def forward(ctx, *args):
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _replace(result, n, what):
    if result is None:
        return None
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != n:
        raise RuntimeError(f"Backward hook returned an invalid number of {what} (expected {n} "
                           f"but got {len(result)})")
    return result


class _Call:
    """One call of the module: what the output side saw, for the input side."""

    def __init__(self, module, n_args):
        self.module = module
        self.n_args = n_args
        self.positions = []      # argument position of each wrapped input
        self.grad_output = None

    def wrap_inputs(self, args):
        pos = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not pos:
            return args
        self.positions = pos
        wrapped = BackwardHookFunction.apply(*[args[i] for i in pos])
        out = list(args)
        for i, w in zip(pos, wrapped):
            out[i] = w
        wrapped[0].grad_fn.register_prehook(self._on_input_grads)
        return tuple(out)

    def wrap_outputs(self, out):
        single = isinstance(out, Tensor)
        outs = (out,) if single else out
        if not isinstance(outs, tuple):
            return out
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not pos:
            return out
        wrapped = BackwardHookFunction.apply(*[outs[i] for i in pos])
        wrapped[0].grad_fn.register_prehook(self._on_output_grads)
        res = list(outs)
        for i, w in zip(pos, wrapped):
            res[i] = w
        return res[0] if single else tuple(res)

    def _on_output_grads(self, grad_output):
        m = self.module
        for hook in tuple(m._backward_pre_hooks.values()):
            r = _replace(hook(m, grad_output), len(grad_output), "grad_output")
            if r is not None:
                grad_output = r
        self.grad_output = grad_output
        if not self.positions:  # no input needs a gradient: the hooks fire now
            if m._backward_hooks:
                warnings.warn(_NO_INPUT_GRAD, stacklevel=2)
            for hook in tuple(m._backward_hooks.values()):
                hook(m, (None,) * self.n_args, grad_output)
        return grad_output

    def _on_input_grads(self, grads):
        m = self.module
        grad_input = [None] * self.n_args
        for i, g in zip(self.positions, grads):
            grad_input[i] = g
        grad_input = tuple(grad_input)
        for hook in tuple(m._backward_hooks.values()):
            r = _replace(hook(m, grad_input, self.grad_output), self.n_args, "grad_input")
            if r is not None:
                grad_input = r
        return tuple(grad_input[i] for i in self.positions)


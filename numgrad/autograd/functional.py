"""autograd.functional: Jacobians, Hessians and their products (``torch.autograd.functional``).

Room: autograd (high half). Every function here is written with the engine (``engine.grad``)
and numgrad ops, so it runs eagerly and, called inside ``@ng.jit``, traces into the plan.
Output structures follow PyTorch exactly: a tuple where the user gave a tuple, a single
tensor where the user gave one; ``jacobian`` nests as ``[output][input]``. Forward-mode
products (``jvp``, ``hvp``) use the double-backward trick, as PyTorch's do: the vjp is
linear in its cotangent, so differentiating it w.r.t. the cotangent gives J·v.
"""
from __future__ import annotations

import numpy as np

from numgrad.autograd import engine
from numgrad.autograd.forward_ad import transform_detach, zeros_leaf
from numgrad.creation import zeros_like
from numgrad.ops.layout import stack
from numgrad.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from numgrad.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(inp, arg_name=None, fn_name=None):
    """``(was_tuple, tuple_of_tensors)``, checking each is a Tensor (PyTorch's TypeError)."""
    if arg_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) \
            else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = (f"the value at index {i} has type {type(el)}" if is_tuple else
                     f"the given {arg_name} has type {type(el)}")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Unwrap the one-element tuples the user did not ask for (``(outputs, inputs)`` pair
    for nested results)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    # With create_graph, an input that requires grad is viewed (not detached) so that the
    # result stays differentiable w.r.t. the caller's tensors.
    return tuple(inp.view(inp.shape) if create_graph and inp.requires_grad
                 else transform_detach(inp).requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(transform_detach(inp) for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be "
                               f"{el_other.shape} but got {el_v.shape}.")


_INDEPENDENT = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should ensure "
               "that your function is thrice differentiable and that the hessian depends on the "
               "inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when running "
               "in strict mode.",
}


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_INDEPENDENT[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``engine.grad`` over the outputs that require grad (None for unused inputs)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grads = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grads.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    if all(g is None for g in new_grads):
        new_grads = None
    return engine.grad(tuple(new_outputs), inputs, new_grads, allow_unused=True,
                       create_graph=create_graph, retain_graph=retain_graph)


_ZERO_STAGE = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_STAGE[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare_v(v, against, is_tuple, create_graph, fn_name, what):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, against, is_tuple)
        return v
    if len(against) != 1 or against[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if the {what} a single Tensor with a "
                           "single element.")
    return None


def _last_grad(outs, wrt, v, refs, strict, create_graph, stage):
    """The final product: ``v``-weighted gradients of ``outs`` w.r.t. ``wrt``, zeros filled
    in (shaped like ``refs``); a graph is built only under ``create_graph``."""
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outs, wrt, v, create_graph=create_graph)
        return _fill_in_zeros(grad_res, refs, strict, create_graph, stage)


def _results(outputs, is_out, res, is_res, create_graph):
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_out),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_res))


def _single_output(outputs, is_tuple, fn_name):
    if is_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)`` (``torch.autograd.functional.vjp``).

    >>> out, g = ng.autograd.functional.vjp(lambda x: (x * x).sum(), ng.tensor([1., 2.]))
    >>> g
    tensor([2., 4.])
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp",
                       "user-provided function returns")
    res = _last_grad(outputs, inputs, v, inputs, strict, create_graph, "back")
    return _results(outputs, is_outputs_tuple, res, is_inputs_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` (``torch.autograd.functional.jvp``), by the double-backward
    trick.

    >>> out, t = ng.autograd.functional.jvp(lambda x: x * x, ng.tensor([1., 2.]),
    ...                                     ng.tensor([1., 1.]))
    >>> t
    tensor([2., 4.])
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp",
                       "input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(zeros_leaf(out) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    res = _last_grad(grad_inputs, grad_outputs, v, outputs, strict, create_graph, "back_trick")
    return _results(outputs, is_outputs_tuple, res, is_outputs_tuple, create_graph)


def _jacfwd(func, inputs, strict=False, vectorize=False):
    """The forward-mode Jacobian: one jvp per input element (``forward_ad`` duals)."""
    from numgrad.autograd import forward_ad as fwad
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(i.detach() for i in inputs)
    columns = None   # [output][input] -> list of tangents, one per input element
    primals = None
    for j, inp in enumerate(inputs):
        for k in range(inp.numel()):
            with fwad.dual_level():
                duals = tuple(fwad.make_dual(x, _basis(x, k) if i == j else zeros_like(x))
                              for i, x in enumerate(inputs))
                is_outputs_tuple, outs = _as_tuple(func(*duals), "outputs")
                unpacked = [fwad.unpack_dual(o) for o in outs]
            if columns is None:
                columns = [[[] for _ in inputs] for _ in outs]
                primals = [u.primal for u in unpacked]
            for o, u in enumerate(unpacked):
                t = u.tangent if u.tangent is not None else zeros_like(u.primal)
                columns[o][j].append(t)
    # Lists, not tuples: PyTorch's forward-mode jacobian nests lists.
    jac = [[_from_columns(columns[o][j], primals[o].shape, inputs[j].shape)
            for j in range(len(inputs))] for o in range(len(primals))]
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _basis(x, k):
    """The ``k``-th standard basis tensor shaped like ``x``."""
    e = np.zeros(x.numel(), x.dtype.np)
    e[k] = 1
    return Tensor._make(e.reshape(x.shape))


def _from_columns(cols, out_shape, in_shape):
    return stack(cols, dim=-1).reshape(tuple(out_shape) + tuple(in_shape))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (``torch.autograd.functional.jacobian``): a
    Tensor for one input and one output, else tuples indexed ``[output][input]``, each entry
    of shape ``output.shape + input.shape``.

    >>> ng.autograd.functional.jacobian(lambda x: x * x, ng.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` '
                                      'and `strategy="forward-mode"` are not supported together '
                                      '(yet). Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        if vectorize:
            jac = _vectorized_jacobian(outputs, inputs, create_graph)
            jac = _grad_postprocess(jac, create_graph)
            return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for k, (vj_el, inp) in enumerate(zip(vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                f"The jacobian of the user-provided function is independent of "
                                f"input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        rows[k].append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {k}. This is not allowed in strict mode.")
                        rows[k].append(zeros_like(inp))
            jac.append(tuple(
                (stack(r, dim=0) if r else zeros_like(inp).reshape((0,) + inp.shape))
                .reshape(out.shape + inp.shape) for r, inp in zip(rows, inputs)))
        jac = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _vectorized_jacobian(outputs, inputs, create_graph):
    """Every row of the Jacobian in one backward: the vjp mapped by ``vmap`` over the
    standard basis of all the outputs' elements (PyTorch's ``vectorize=True``)."""
    # numgrad.func.vmap needs only autograd and the ops (numgrad.func loads the rest lazily).
    from numgrad.func.vmap import vmap
    sizes = [o.numel() for o in outputs]
    total = sum(sizes)
    basis, start = [], 0
    for o, n in zip(outputs, sizes):  # rows start..start+n of the identity, per output
        e = np.zeros((total, n), o.dtype.np)
        e[np.arange(start, start + n), np.arange(n)] = 1
        t = Tensor._make(e.reshape((total,) + tuple(o.shape)))
        basis.append(t if o.device.type == "cpu" else t.to(o.device))
        start += n

    def vjp(*vs):
        gs = _autograd_grad(outputs, inputs, vs, create_graph=create_graph, retain_graph=True)
        return tuple(zeros_like(x) if g is None else g for g, x in zip(gs, inputs))

    rows = vmap(vjp)(*basis) if total else tuple(
        zeros_like(x).reshape((0,) + tuple(x.shape)) for x in inputs)
    jac, start = [], 0
    for o, n in zip(outputs, sizes):
        jac.append(tuple(r[start:start + n].reshape(tuple(o.shape) + tuple(x.shape))
                         for r, x in zip(rows, inputs)))
        start += n
    return tuple(jac)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` (``torch.autograd.functional.hessian``): a Tensor of
    shape ``input.shape * 2`` for one input, else a tuple of tuples ``[i][j]``.

    >>> ng.autograd.functional.hessian(lambda x: (x ** 3).sum(), ng.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        _single_output(t_out, is_out_tuple, "hessian")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _first_grad(func, inputs, v, create_graph, strict, fn_name):
    """Shared start of vhp/hvp: the inputs, v, outputs and the (differentiable) gradient."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, fn_name,
                   "input to the user-provided function is")
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    _single_output(outputs, is_outputs_tuple, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` of a scalar ``func`` (``torch.autograd.functional.vhp``).

    >>> out, r = ng.autograd.functional.vhp(lambda x: (x ** 3).sum(), ng.tensor([1., 2.]),
    ...                                     ng.tensor([1., 1.]))
    >>> r
    tensor([ 6., 12.])
    """
    with enable_grad():
        is_in, inputs, v, is_out, outputs, jac = _first_grad(func, inputs, v, create_graph,
                                                             strict, "vhp")
    res = _last_grad(jac, inputs, v, inputs, strict, create_graph, "double_back")
    return _results(outputs, is_out, res, is_in, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` of a scalar ``func`` (``torch.autograd.functional.hvp``), by
    the double-backward trick.

    >>> out, r = ng.autograd.functional.hvp(lambda x: (x ** 3).sum(), ng.tensor([1., 2.]),
    ...                                     ng.tensor([1., 1.]))
    >>> r
    tensor([ 6., 12.])
    """
    with enable_grad():
        is_in, inputs, v, is_out, outputs, jac = _first_grad(func, inputs, v, create_graph,
                                                             strict, "hvp")
        grad_jac = tuple(zeros_leaf(inp) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    res = _last_grad(double_back, grad_jac, v, inputs, strict, create_graph,
                     "double_back_trick")
    return _results(outputs, is_out, res, is_in, create_graph)

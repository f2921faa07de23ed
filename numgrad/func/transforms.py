"""func.transforms: ``torch.func``'s differentiating transforms over pytrees of tensors.

Room: func. ``grad``/``grad_and_value`` flatten the differentiated arguments into leaves and
run the compiler's ``value_and_grad`` (``ng.value_and_grad``, JAX's spelling) on them, so
both spellings share their nesting rules; ``vjp`` and ``jacrev`` run the engine,
``jvp``/``jacfwd`` forward mode (``autograd.forward_ad``), and the Jacobians map the
one-row products over a basis with ``vmap``. All are written with primitives, so each
composes with the others and with ``@ng.jit``.
"""
from __future__ import annotations

import functools

import numpy as np

from numgrad.autograd import engine
from numgrad.autograd import forward_ad as fwad
from numgrad.compiler import transforms as _jax
from numgrad.compiler.pytree import flatten, unflatten
from numgrad.creation import zeros_like
from numgrad.grad_mode import enable_grad, is_grad_enabled
from numgrad.func.vmap import vmap
from numgrad.tensor import Tensor


def _argnums(argnums, args):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums:
        nums = argnums
    elif isinstance(argnums, tuple):
        raise RuntimeError("argnums must be non-empty")
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -len(args) <= n < len(args):
            raise RuntimeError(f"Got argnum={n}, but only {len(args)} positional inputs")
    return tuple(n % len(args) for n in nums)


def _primals(argnums, args):
    """The checked ``argnums`` and the arguments they pick."""
    nums = _argnums(argnums, args)
    return nums, tuple(args[n] for n in nums)


def _leaves(tree, what):
    spec, leaves = flatten(tree)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected {what} to be a Tensor or a pytree of Tensors, got "
                               f"{type(x)}")
    return spec, leaves


def grad_and_value(func, argnums=0, has_aux=False):
    """``(grad, value)`` of a scalar ``func`` (``torch.func.grad_and_value``); with
    ``has_aux`` ``func`` returns ``(value, aux)`` and this ``(grad, (value, aux))``. The
    arguments in ``argnums`` may be pytrees (tuples, lists, dicts) of tensors.

    >>> g, v = ng.func.grad_and_value(lambda x: (x * x).sum())(ng.tensor([1., 2.]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func, updated=())
    def wrapped(*args, **kwargs):
        nums = _argnums(argnums, args)
        specs, flat, slots = [], [], []
        for n in nums:
            spec, leaves = _leaves(args[n], "grad_and_value(f)(*args): the differentiated "
                                   "argument")
            specs.append(spec)
            slots.append(range(len(flat), len(flat) + len(leaves)))
            flat.extend(leaves)

        def on_leaves(*leaves):
            rebuilt = list(args)
            for n, spec, slot in zip(nums, specs, slots):
                rebuilt[n] = unflatten(spec, [leaves[i] for i in slot])
            out = func(*rebuilt, **kwargs)
            if has_aux and not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be a "
                                   "tuple: (output, aux) if has_aux is True")
            value = out[0] if has_aux else out
            if not isinstance(value, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(value)}")
            if value.ndim != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {value.ndim} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            return out

        res = _jax.value_and_grad(on_leaves, tuple(range(len(flat))), has_aux)(*flat)
        value, grads = res
        g = tuple(unflatten(spec, [grads[i] for i in slot]) for spec, slot in zip(specs, slots))
        return (g[0] if isinstance(argnums, int) else g), value

    return wrapped


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar ``func`` (``torch.func.grad``): shaped like the argument(s)
    in ``argnums``; ``(grad, aux)`` with ``has_aux``. Composes with ``vmap`` (per-example
    gradients), itself (higher orders) and ``@ng.jit``.

    >>> ng.func.grad(lambda x: (x ** 3).sum())(ng.tensor([1., 2.]))
    tensor([ 3., 12.])
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func, updated=())
    def wrapped(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapped


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` (``torch.func.vjp``): ``vjp_fn(cotangents)`` returns one
    gradient per primal, as a tuple; ``(output, vjp_fn, aux)`` with ``has_aux``.

    >>> out, fn = ng.func.vjp(lambda x: x * x, ng.tensor([1., 2.]))
    >>> fn(ng.tensor([1., 1.]))
    (tensor([2., 4.]),)
    """
    spec_in, leaves = _leaves(primals, "primals")
    # As ng.grad does: inside another transform, or for inputs that require grad under grad
    # mode, the products stay differentiable w.r.t. the caller's tensors.
    attach = getattr(_jax._depth, "n", 0) > 0 or (
        is_grad_enabled() and any(x.requires_grad for x in leaves))
    ins = [x if attach and x.requires_grad else fwad.transform_detach(x).requires_grad_(True)
           for x in leaves]
    _jax._depth.n = getattr(_jax._depth, "n", 0) + 1
    try:
        with enable_grad():
            out = func(*unflatten(spec_in, ins))
    finally:
        _jax._depth.n -= 1
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                               "(output, aux) if has_aux is True")
        out, aux = out
    spec_out, outs = _leaves(out, "outputs")

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        spec_ct, cts = flatten(cotangents)
        if spec_ct != spec_out:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               "structure of outputs to the function. cotangents: "
                               f"{_spec(cotangents)}, primal output: {_spec(out)}")
        for i, (o, c) in enumerate(zip(outs, cts)):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"torch.Size({list(c.shape)}) and output[{i}] has a shape of "
                                   f"torch.Size({list(o.shape)}).")
        cg = attach or getattr(_jax._depth, "n", 0) > 0 if create_graph is None else create_graph
        pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        with enable_grad(), _jax._deriving():
            if pairs:
                grads = engine.grad(tuple(o for o, _ in pairs), tuple(ins),
                                    tuple(c for _, c in pairs), retain_graph=retain_graph,
                                    create_graph=cg, allow_unused=True)
            else:
                grads = (None,) * len(ins)
        grads = [zeros_like(x) if g is None else g for g, x in zip(grads, ins)]
        return unflatten(spec_in, grads)

    result = out if attach else _detach_tree(out)
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def _spec(tree):
    if isinstance(tree, (tuple, list)):
        inner = ", ".join(_spec(t) for t in tree)
        return f"({inner},)" if isinstance(tree, tuple) and len(tree) == 1 else \
            (f"({inner})" if isinstance(tree, tuple) else f"[{inner}]")
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_spec(v)}" for k, v in tree.items()) + "}"
    return "*"


def _detach_tree(tree):
    spec, leaves = flatten(tree)
    return unflatten(spec, [fwad.transform_detach(x) if isinstance(x, Tensor) else x
                               for x in leaves])


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J·tangents)`` by forward mode (``torch.func.jvp``): one pass,
    each primitive's jvp rule (``autograd.forward_ad``).

    >>> ng.func.jvp(lambda x: x.sin(), (ng.tensor([0.]),), (ng.tensor([2.]),))
    (tensor([0.]), tensor([2.]))
    """
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict is not supported yet")
    spec_p, ps = _leaves(primals, "primals")
    spec_t, ts = flatten(tangents)
    if spec_p != spec_t or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be. Got primals with structure "
                           f"{_spec(primals)} and tangents with structure {_spec(tangents)}")
    if getattr(_jax._depth, "n", 0) > 0 or (is_grad_enabled() and any(
            p.requires_grad or t.requires_grad for p, t in zip(ps, ts))):
        # Reverse mode will differentiate the result (grad(jvp(f)), or the caller's graph):
        # forward mode's tangents carry no autograd history, so take J·t by the
        # double-backward trick, which does.
        return _jvp_by_double_vjp(func, spec_p, ps, ts, has_aux)
    level = fwad.Level()
    try:
        duals = [fwad.make_dual(p, t, level=level) for p, t in zip(ps, ts)]
        out = func(*unflatten(spec_p, duals))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a "
                                   "tuple: (output, aux) if has_aux is True")
            out, aux = out
        spec_o, outs = _leaves(out, "outputs")
        pairs = [fwad.unpack_dual(o, level=level) for o in outs]
        if has_aux:  # the aux is a function of the primals alone
            spec_a, auxs = flatten(aux)
            aux = unflatten(spec_a, [fwad.unpack_dual(a, level=level).primal
                                     if isinstance(a, Tensor) else a for a in auxs])
    finally:
        level.closed = True
    primal_out = unflatten(spec_o, [p for p, _ in pairs])
    tangent_out = unflatten(spec_o, [zeros_like(p) if t is None else t for p, t in pairs])
    if has_aux:
        return primal_out, tangent_out, aux
    return primal_out, tangent_out


def _jvp_by_double_vjp(func, spec_p, ps, ts, has_aux):
    """``jvp`` as the vjp of a vjp: ``g -> J^T g`` is linear, its vjp along ``t`` is ``J t``."""
    res = vjp(lambda *leaves: func(*unflatten(spec_p, list(leaves))), *ps, has_aux=has_aux)
    out, fn = res[0], res[1]
    spec_o, outs = flatten(out)
    with enable_grad():
        us = [fwad.zeros_leaf(o) for o in outs]
        gs = fn(unflatten(spec_o, us), create_graph=True)
        pairs = [(g, t) for g, t in zip(gs, ts) if g.requires_grad]
        jt = engine.grad(tuple(g for g, _ in pairs), tuple(us), tuple(t for _, t in pairs),
                         create_graph=True, allow_unused=True) if pairs else (None,) * len(us)
    tangent_out = unflatten(spec_o, [zeros_like(o) if j is None else j
                                     for o, j in zip(outs, jt)])
    return (out, tangent_out, res[2]) if has_aux else (out, tangent_out)


def _basis(n, like):
    return Tensor._make(np.eye(n, dtype=like.dtype.np))


def _at(func, args, nums):
    """``func`` as a function of the arguments in ``nums`` (the others fixed to ``args``)."""
    def f(*ps):
        full = list(args)
        for n, p in zip(nums, ps):
            full[n] = p
        return func(*full)
    return f


def _split(e, likes, sizes):
    """A basis vector ``e`` cut into pieces shaped like ``likes`` (``sizes`` elements each)."""
    parts, at = [], 0
    for x, k in zip(likes, sizes):
        parts.append(e[at:at + k].reshape(x.shape))
        at += k
    return parts


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """The Jacobian by reverse mode (``torch.func.jacrev``): vjps of the rows of the identity,
    mapped with ``vmap``. A single output and an int ``argnums`` give one tensor of shape
    ``output.shape + input.shape``; otherwise the output's structure holding, per output,
    the structure of ``argnums``.

    >>> ng.func.jacrev(lambda x: x * x)(ng.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    @functools.wraps(func, updated=())
    def wrapped(*args):
        nums, primals = _primals(argnums, args)
        res = vjp(_at(func, args, nums), *primals, has_aux=has_aux)
        out, fn = res[0], res[1]
        spec_o, outs = flatten(out)
        sizes = [o.numel() for o in outs]
        total = sum(sizes)
        basis = _basis(total, outs[0])
        spec_i, ins = flatten(primals)

        def row(e):
            return tuple(flatten(fn(unflatten(spec_o, _split(e, outs, sizes))))[1])

        rows = vmap(row, chunk_size=chunk_size)(basis)  # [input] -> (total, *in_shape)
        per_out, at = [], 0
        for o, k in zip(outs, sizes):
            blocks = [r[at:at + k].reshape(tuple(o.shape) + tuple(x.shape))
                      for r, x in zip(rows, ins)]
            tree = unflatten(spec_i, blocks)
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
            at += k
        jac = unflatten(spec_o, per_out)
        return (jac, res[2]) if has_aux else jac

    return wrapped


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian by forward mode (``torch.func.jacfwd``): jvps of the columns of the
    identity, mapped with ``vmap``; the same structure as ``jacrev``.

    >>> ng.func.jacfwd(lambda x: x * x)(ng.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    @functools.wraps(func, updated=())
    def wrapped(*args):
        nums, primals = _primals(argnums, args)
        spec_i, ins = _leaves(primals, "primals")
        sizes = [x.numel() for x in ins]
        total = sum(sizes)
        basis = _basis(total, ins[0])
        aux_box = []
        at_args = _at(func, args, nums)

        def f(*leaves):
            return at_args(*unflatten(spec_i, list(leaves)))

        def column(e):
            res = jvp(f, tuple(ins), tuple(_split(e, ins, sizes)), has_aux=has_aux)
            if has_aux:
                aux_box.append(res[2])
            return res[1]

        cols = vmap(column, out_dims=-1, randomness=randomness)(basis)
        spec_o, outs = flatten(cols)
        per_out = []
        for c in outs:
            blocks, at = [], 0
            for x, k in zip(ins, sizes):
                blocks.append(c[..., at:at + k].reshape(tuple(c.shape[:-1]) + tuple(x.shape)))
                at += k
            tree = unflatten(spec_i, blocks)
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
        jac = unflatten(spec_o, per_out)
        return (jac, aux_box[0]) if has_aux else jac

    return wrapped


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func`` (``torch.func.hessian``): forward over reverse,
    ``jacfwd(jacrev(func))``.

    >>> ng.func.hessian(lambda x: (x ** 3).sum())(ng.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)

"""autograd.gradcheck: check gradients against finite differences
(``torch.autograd.gradcheck`` / ``gradgradcheck``).

Room: autograd. The numerical Jacobian is taken by central differences, perturbing each
input element in place; the analytical one row by row with ``autograd.grad`` (one one-hot
cotangent per output element). ``fast_mode`` compares one random projection ``v^T J u``
instead, and recomputes both Jacobians in full only to describe a failure.
"""
from __future__ import annotations

import warnings

import numpy as np

import numgrad.autograd.engine as engine
from numgrad.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a check fails."""


_FAST_FAIL_SLOW_OK = (
    "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
    "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
    "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n")


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(func, inputs):
    out = func(*inputs)
    return _tuple(out) if isinstance(out, (Tensor, tuple, list)) else (out,)


def _flat(t):
    # A copy: an output may be a view of the input gradcheck perturbs in place next.
    return np.array(t.detach().cpu().numpy(), dtype=np.float64).ravel()


def _numerical(func, inputs, diff, outs, eps, direction=None):
    """Per differentiable input: a (numel_in, numel_out) array per output by central
    differences; with ``direction`` (one vector per input), the directional derivative
    ``J u`` per output instead, summed over inputs."""
    tensor_outs = [k for k, o in enumerate(outs) if isinstance(o, Tensor)]

    def run():  # in grad mode: gradgradcheck's function is itself a backward
        res = _outputs(func, inputs)
        return [_flat(res[k]) for k in tensor_outs]

    jac = {}
    total = [np.zeros(outs[k].numel()) for k in tensor_outs] if direction is not None else None
    for i in diff:
        x = inputs[i]
        a = x.detach().numpy()
        if direction is not None:
            u = direction[i].reshape(a.shape).astype(a.dtype)
            a += eps * u
            plus = run()
            a -= 2 * eps * u
            minus = run()
            a += eps * u
            for k in range(len(tensor_outs)):
                total[k] += (plus[k] - minus[k]) / (2 * eps)
            continue
        rows = [np.zeros((a.size, outs[k].numel())) for k in tensor_outs]
        flat = a.reshape(-1) if a.flags.c_contiguous else None
        for j in range(a.size):
            idx = np.unravel_index(j, a.shape) if flat is None else j
            target = a if flat is None else flat
            orig = target[idx]
            target[idx] = orig + eps
            plus = run()
            target[idx] = orig - eps
            minus = run()
            target[idx] = orig
            for k in range(len(tensor_outs)):
                rows[k][j] = (plus[k] - minus[k]) / (2 * eps)
        for k, r in zip(tensor_outs, rows):
            jac[(k, i)] = r
    if direction is not None:
        return dict(zip(tensor_outs, total))
    return jac


def _vjp(out, wrt, v):
    from numgrad.creation import tensor as make
    g = make(v.reshape(out.shape), dtype=out.dtype)
    gs = engine.grad((out,), [wrt_t for wrt_t in wrt], (g,), retain_graph=True,
                     allow_unused=True)
    return [np.zeros(w.numel()) if r is None else _flat(r) for r, w in zip(gs, wrt)]


def _analytical(outs, inputs, diff, nondet_tol):
    """Per (output, input): the (numel_in, numel_out) Jacobian from one vjp per output
    element, each run twice to check the backward gives the same values again."""
    wrt = [inputs[i] for i in diff]
    jac, reentrant = {}, True
    for k, out in enumerate(outs):
        if not (isinstance(out, Tensor) and out.requires_grad):
            continue
        cols = [np.zeros((w.numel(), out.numel())) for w in wrt]
        for j in range(out.numel()):
            v = np.zeros(out.numel())
            v[j] = 1
            first = _vjp(out, wrt, v)
            again = _vjp(out, wrt, v)
            for c, a, b in zip(cols, first, again):
                c[:, j] = a
                if np.abs(a - b).max(initial=0) > nondet_tol:
                    reentrant = False
        for i, c in zip(diff, cols):
            jac[(k, i)] = c
    return jac, reentrant


def _show(a, like):
    from numgrad.creation import tensor as make
    return repr(make(a, dtype=like.dtype))


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _close(a, n, rtol, atol):
    return np.allclose(a, n, rtol=rtol, atol=atol)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` (those with ``requires_grad``) against
    central finite differences (``torch.autograd.gradcheck``). Returns True, or raises
    ``GradcheckError`` (False with ``raise_exception=False``). Use float64 inputs.

    >>> x = ng.randn(3, dtype=ng.float64, requires_grad=True)
    >>> ng.autograd.gradcheck(ng.sin, (x,))
    True
    """
    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ")
    outs = _outputs(func, inputs)
    if not check_backward_ad:
        return True
    if fast_mode:
        ok = _fast(func, inputs, diff, outs, eps, atol, rtol, raise_exception)
    else:
        ok = _slow(func, inputs, diff, outs, eps, atol, rtol, nondet_tol, raise_exception)
    if ok and check_undefined_grad:
        ok = _undefined_grad(outs, inputs, diff, raise_exception)
    return ok


def _constant_outputs_ok(numerical, outs, raise_exception):
    """An output that does not require grad must not move with the inputs either
    (``numerical`` is keyed by output, or by (output, input))."""
    for key, n in numerical.items():
        k = key[0] if isinstance(key, tuple) else key
        if not outs[k].requires_grad and np.any(n != 0):
            return _fail("Numerical gradient for function expected to be zero",
                         raise_exception)
    return True


def _slow(func, inputs, diff, outs, eps, atol, rtol, nondet_tol, raise_exception):
    numerical = _numerical(func, inputs, diff, outs, eps)
    if not _constant_outputs_ok(numerical, outs, raise_exception):
        return False
    analytical, reentrant = _analytical(outs, inputs, diff, nondet_tol)
    for (k, i), n in numerical.items():
        if not outs[k].requires_grad:
            continue
        a = analytical[(k, i)]
        if not _close(a, n, rtol, atol):
            return _fail(f"Jacobian mismatch for output {k} with respect to input {i},\n"
                         f"numerical:{_show(n, inputs[i])}\nanalytical:{_show(a, inputs[i])}\n",
                         raise_exception)
    if not reentrant:
        return _fail("Backward is not reentrant, i.e., running backward with same input and "
                     "grad_output multiple times gives different values, although analytical "
                     "gradient matches numerical gradient.The tolerance for nondeterminism was "
                     f"{nondet_tol}.", raise_exception)
    return True


def _fast(func, inputs, diff, outs, eps, atol, rtol, raise_exception):
    rng = np.random.default_rng(0)
    u = {i: rng.standard_normal(inputs[i].numel()) for i in diff}
    u = {i: v / max(np.linalg.norm(v), 1e-12) for i, v in u.items()}
    ju = _numerical(func, inputs, diff, outs, eps, direction=u)
    if not _constant_outputs_ok(ju, outs, raise_exception):
        return False
    wrt = [inputs[i] for i in diff]
    for k, n_dir in ju.items():
        out = outs[k]
        if not out.requires_grad:
            continue
        v = rng.standard_normal(out.numel())
        numerical = float(v @ n_dir)
        vj = _vjp(out, wrt, v)
        analytical = float(sum(g @ u[i] for g, i in zip(vj, diff)))
        if _close(analytical, numerical, rtol, atol):
            continue
        # Which input: recompute both Jacobians in full, as PyTorch does, to show them.
        num = _numerical(func, inputs, diff, outs, eps)
        ana, _ = _analytical(outs, inputs, diff, 0.0)
        for i in diff:
            n, a = num[(k, i)], ana[(k, i)]
            if _close(a, n, rtol, atol) and i != diff[-1]:
                continue
            return _fail(f"Jacobian mismatch for output {k} with respect to input {i},\n"
                         f"numerical:{numerical}\nanalytical:{analytical}\n"
                         f"{_FAST_FAIL_SLOW_OK}Numerical:\n {_show(n, inputs[i])}\n"
                         f"Analytical:\n{_show(a, inputs[i])}\n\n"
                         "The max per-element difference (slow mode) is: "
                         f"{np.abs(n - a).max(initial=0)}.\n", raise_exception)
    return True


def _undefined_grad(outs, inputs, diff, raise_exception):
    """A backward given no gradient (zeros) for its outputs must give zeros (or None)."""
    from numgrad.creation import zeros_like
    req = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    if not req:
        return True
    gs = engine.grad(req, [inputs[i] for i in diff], [zeros_like(o) for o in req],
                     retain_graph=True, allow_unused=True)
    if any(g is not None and np.any(_flat(g) != 0) for g in gs):
        return _fail("Expected backward function to handle undefined output grads. Please look "
                     "at \"Notes about undefined output gradients\" in "
                     "\"tools/autograd/derivatives.yaml\"", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False) -> bool:
    """Check the second derivatives of ``func``: ``gradcheck`` of its vjp with respect to
    the inputs and the cotangents (``torch.autograd.gradgradcheck``). ``grad_outputs``
    default to random tensors.

    >>> x = ng.randn(3, dtype=ng.float64, requires_grad=True)
    >>> ng.autograd.gradgradcheck(ng.sin, (x,))
    True
    """
    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        from numgrad.creation import randn
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, requires_grad=True)
                             for o in outs if isinstance(o, Tensor) and o.requires_grad)
    else:
        grad_outputs = _tuple(grad_outputs)
    n_in = len(inputs)

    def vjp_fn(*args):
        xs, gos = args[:n_in], args[n_in:]
        res = [o for o in _outputs(func, xs) if isinstance(o, Tensor) and o.requires_grad]
        gs = engine.grad(res, [xs[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp_fn, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, fast_mode=fast_mode)

"""F.linear as one eager node (ops.linear) against PyTorch: values, gradients, grad_fn names,
double backward, saved-tensor checks, errors, and the composite it decomposes into under
@ng.jit, vmap, forward AD and a gradient taken inside vmap."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import numgrad as ng
import numgrad.nn.functional as F
from numgrad.ops import linear as L

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3))
W = RNG.standard_normal((4, 3))
B = RNG.standard_normal(4)
G = RNG.standard_normal((5, 4))


def _pair(a, grad=True):
    return ng.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_node_values_gradients_and_names_match_torch(bias, dtype):
    (x, tx), (w, tw), (b, tb) = _pair(X.astype(dtype)), _pair(W.astype(dtype)), \
        _pair(B.astype(dtype))
    args, targs = ((x, w, b), (tx, tw, tb)) if bias else ((x, w), (tx, tw))
    out, ref = F.linear(*args), TF.linear(*targs)
    assert out.dtype.name == np.dtype(dtype).name
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _close(out, ref, tol)
    assert out.grad_fn.name() == ref.grad_fn.name() == ("AddmmBackward0" if bias
                                                        else "MmBackward0")
    # One node: its inputs are the leaves themselves (no transpose node in between).
    assert {fn.name() for fn, _ in out.grad_fn.next_functions} == {"AccumulateGrad"}
    g = G.astype(dtype)
    out.backward(ng.tensor(g))
    ref.backward(torch.tensor(g))
    for a, t in zip(args, targs):
        _close(a.grad, t.grad, tol)
        assert a.grad.dtype.name == np.dtype(dtype).name


def test_double_backward_matches_torch():
    (x, tx), (w, tw), (b, tb) = _pair(X), _pair(W), _pair(B)
    s, ts = _pair(G)
    grads = ng.autograd.grad((F.linear(x, w, b).tanh() * s).sum(), (x, w, b), create_graph=True)
    refs = torch.autograd.grad((TF.linear(tx, tw, tb).tanh() * ts).sum(), (tx, tw, tb),
                               create_graph=True)
    for g, r in zip(grads, refs):
        _close(g, r)
    # The gradients' own graphs: through mm_tn / mm_nt and their rules.
    total = sum((g * g).sum() for g in grads)
    rtotal = sum((r * r).sum() for r in refs)
    hs = ng.autograd.grad(total, (x, w, b, s))
    rhs = torch.autograd.grad(rtotal, (tx, tw, tb, ts))
    for h, r in zip(hs, rhs):
        _close(h, r, 1e-9)


def test_transposed_products_and_their_gradients():
    # mm_nt and mm_tn are each other's transposes: third-order check against torch.
    a, ta = _pair(X)
    for f, tf, shape in ((L.mm_tn, lambda p, q: p.T @ q, (5, 4)),
                         (L.mm_nt, lambda p, q: p @ q.T, (2, 3))):
        q, tq = _pair(RNG.standard_normal(shape))
        out, ref = f(a, q), tf(ta, tq)
        _close(out, ref)
        ga = ng.autograd.grad((out * out).sum(), (a, q), create_graph=True)
        ra = torch.autograd.grad((ref * ref).sum(), (ta, tq), create_graph=True)
        for g, r in zip(ga, ra):
            _close(g, r)
        h = ng.autograd.grad(sum(g.sin().sum() for g in ga), (a, q))
        rh = torch.autograd.grad(sum(r.sin().sum() for r in ra), (ta, tq))
        for g, r in zip(h, rh):
            _close(g, r, 1e-9)


def test_other_ranks_and_bias_shapes_take_the_composite_as_torch():
    w, tw = _pair(W)
    for xa, ba in ((X[0], B), (RNG.standard_normal((2, 5, 3)), B), (X, B[:1]),
                   (X, np.array(0.5))):
        (x, tx), (b, tb) = _pair(xa), _pair(ba)
        out, ref = F.linear(x, w, b), TF.linear(tx, tw, tb)
        _close(out, ref)
        out.sum().backward()
        ref.sum().backward()
        _close(x.grad, tx.grad)
        _close(b.grad, tb.grad)


def test_a_contiguous_batch_is_viewed_around_one_node_as_in_torch():
    xa = RNG.standard_normal((2, 5, 3))
    (x, tx), (w, tw), (b, tb) = _pair(xa), _pair(W), _pair(B)
    out, ref = F.linear(x, w, b), TF.linear(tx, tw, tb)
    _close(out, ref)
    names = [out.grad_fn.name(), out.grad_fn.next_functions[0][0].name()]
    assert names == [ref.grad_fn.name(), ref.grad_fn.next_functions[0][0].name()] \
        == ["ViewBackward0", "AddmmBackward0"]
    gs = RNG.standard_normal((2, 5, 4))
    out.backward(ng.tensor(gs))
    ref.backward(torch.tensor(gs))
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad)
    # Another layout: the composite, the values and gradients the same.
    (x2, tx2) = _pair(xa)
    out = F.linear(x2.transpose(0, 1), w)
    ref = TF.linear(tx2.transpose(0, 1), tw)
    _close(out, ref)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    _close(x2.grad, tx2.grad)


def test_errors_match_torch():
    x, w = ng.tensor(X, requires_grad=True), ng.tensor(W)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(5x3 and 4x4\)"):
        F.linear(x, ng.tensor(RNG.standard_normal((4, 4))))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(x, ng.tensor(W.astype(np.float32)))
    with pytest.raises(RuntimeError):
        F.linear(x, w, ng.tensor(B[:3]))


def _raises_inplace(lib, mod, changed):
    """Whether backward through linear(x, w) raises after ``changed`` ('x' or 'w', a
    non-leaf copy) is modified in place; ``mod`` says which input requires grad."""
    a, b = lib.tensor(X, requires_grad=mod == "x"), lib.tensor(W, requires_grad=mod == "w")
    a, b = (a * 1 if changed == "x" else a), (b * 1 if changed == "w" else b)
    out = (TF if lib is torch else F).linear(a, b)
    with lib.no_grad():
        (a if changed == "x" else b).add_(1)
    try:
        out.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return True
    return False


def test_saved_inputs_version_and_retain_graph():
    (x, tx), (w, tw) = _pair(X), _pair(W)
    out = F.linear(x, w)
    out.sum().backward(retain_graph=True)
    first = x.grad.numpy().copy()
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)
    with pytest.raises(RuntimeError, match="second time"):
        out.sum().backward()
    # A node saves what its needed gradients read, as PyTorch's: dx reads w, dW reads x.
    for mod in "xw":
        for changed in "xw":
            assert _raises_inplace(ng, mod, changed) == _raises_inplace(torch, mod, changed)
    with ng.no_grad():
        assert F.linear(x, w).grad_fn is None


@ng.jit
def _jit_linear(x, w, b):
    return F.linear(x, w, b).sum()


def test_decomposes_under_jit_vmap_forward_ad_and_grad_in_vmap():
    (x, tx), (w, tw), (b, tb) = _pair(X), _pair(W), _pair(B)
    out, ref = _jit_linear(x, w, b), TF.linear(tx, tw, tb).sum()
    _close(out, ref)
    out.backward()
    ref.backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, t.grad)
    # vmap over 2-D examples: the payloads are batched, so the composite runs.
    xs = RNG.standard_normal((2, 5, 3))
    got = ng.func.vmap(lambda a: F.linear(a, ng.tensor(W), ng.tensor(B)))(ng.tensor(xs))
    _close(got, torch.func.vmap(lambda a: TF.linear(a, torch.tensor(W), torch.tensor(B)))(
        torch.tensor(xs)))
    # Per-example weight gradients: grad inside vmap.
    gw = ng.func.vmap(ng.func.grad(lambda w_, a: F.linear(a, w_).tanh().sum()),
                      in_dims=(None, 0))(ng.tensor(W), ng.tensor(xs))
    rgw = torch.func.vmap(torch.func.grad(lambda w_, a: TF.linear(a, w_).tanh().sum()),
                          in_dims=(None, 0))(torch.tensor(W), torch.tensor(xs))
    _close(gw, rgw)
    # Forward mode.
    tangent = RNG.standard_normal(W.shape)
    _, jv = ng.func.jvp(lambda w_: F.linear(ng.tensor(X), w_, ng.tensor(B)),
                        (ng.tensor(W),), (ng.tensor(tangent),))
    _, rjv = torch.func.jvp(lambda w_: TF.linear(torch.tensor(X), w_, torch.tensor(B)),
                            (torch.tensor(W),), (torch.tensor(tangent),))
    _close(jv, rjv)


def test_vmap_of_the_gradient_of_an_eager_graph():
    # The node was recorded eagerly; its rules then meet batched cotangents (vmap over
    # grad_outputs), which take the matmul-and-transpose path.
    (x, tx), (w, tw) = _pair(X), _pair(W)
    out, ref = F.linear(x, w), TF.linear(tx, tw)
    gs = RNG.standard_normal((3,) + G.shape)
    got = ng.func.vmap(lambda g: ng.autograd.grad(out, (x, w), g, retain_graph=True))(
        ng.tensor(gs))
    want = [torch.autograd.grad(ref, (tx, tw), torch.tensor(g), retain_graph=True) for g in gs]
    for i in range(2):
        _close(got[i], torch.stack([wi[i] for wi in want]))


def test_func_hessians_match_torch():
    # jacrev over jacrev: the rules of the eager nodes differentiated again; hessian is
    # forward over reverse, so there the composite runs under the jvp level.
    def f(w):
        return F.linear(ng.tensor(X), w, ng.tensor(B)).tanh().sum()

    def tf(w):
        return TF.linear(torch.tensor(X), w, torch.tensor(B)).tanh().sum()

    for name in ("hessian", "jacrev"):
        got = getattr(ng.func, name)(f)(ng.tensor(W))
        want = getattr(torch.func, name)(tf)(torch.tensor(W))
        _close(got, want)
    _close(ng.func.jacrev(ng.func.jacrev(f))(ng.tensor(W)),
           torch.func.jacrev(torch.func.jacrev(tf))(torch.tensor(W)))

"""ng.autograd.Function: the context API, error texts, double backward, and the same
Functions under @ng.jit (CPU, and one small CUDA-simulator test). torch is the oracle:
each Function is written once over a module ``m`` (numgrad or torch)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numgrad as ng  # noqa: E402
from conftest import assert_close  # noqa: E402

X = [0.5, -1.0, 2.0]


def make(m):
    """The same family of Functions, built over numgrad or torch."""
    F = m.autograd.Function
    od = m.autograd.function.once_differentiable

    class Scale(F):  # non-tensor argument, saved tensor, needs_input_grad
        @staticmethod
        def forward(ctx, x, k, w):
            ctx.save_for_backward(x, w)
            ctx.k = k
            ctx.seen = ctx.needs_input_grad
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w * ctx.k, None, (g * x * ctx.k).sum(0, keepdim=True)

    class Exp(F):  # a saved output, differentiable backward (double backward)
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class Cube(F):  # the setup_context style
        @staticmethod
        def forward(x, p=3):
            return x ** p

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, p = inputs
            ctx.save_for_backward(x)
            ctx.p = p

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.p * x ** (ctx.p - 1), None

    class Parts(F):  # several outputs: a non-tensor, a non-differentiable one, materialize
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            return x * 2, x * 3, mask, 7

        @staticmethod
        def backward(ctx, ga, gb, gmask, gint):
            ctx.got = (ga is None, gb is None, gmask is None, gint is None)
            out = 0
            for g, k in ((ga, 2), (gb, 3)):
                if g is not None:
                    out = out + g * k
            return out, None

    class Double(F):  # in place, marked dirty
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Same(F):  # returns its input as is
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Once(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @od
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    return dict(Scale=Scale, Exp=Exp, Cube=Cube, Parts=Parts, Double=Double, Same=Same,
                Once=Once)


NG, TORCH = make(ng), make(torch)


def both(name):
    return NG[name], TORCH[name]


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the class and text are what is compared)
        text = str(e)
        for prefix in ("torch.", "numgrad.", "ng."):  # the library's own name, in either
            text = text.replace(prefix, "")
        return type(e).__name__, text
    return None


def test_forward_backward_needs_input_grad_and_node_name():
    for m, Scale in zip((ng, torch), both("Scale")):
        x = m.tensor([X, X], requires_grad=True)
        w = m.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        y = Scale.apply(x, 2.0, w)
        assert y.grad_fn.name() == "ScaleBackward" == type(y.grad_fn).__name__
        assert len(y.grad_fn.next_functions) == 2  # one edge per tensor input
        assert y.grad_fn.needs_input_grad == (True, False, True)
        y.sum().backward()
        if m is ng:
            got = (y, x.grad, w.grad)
        else:
            for a, b in zip(got, (y, x.grad, w.grad)):
                assert_close(a, b)  # w's gradient was summed down to its shape by the node
    y = NG["Scale"].apply(ng.tensor(X, requires_grad=True), 2.0, ng.tensor(X))
    assert y.grad_fn.needs_input_grad == (True, False, False)


def test_double_backward_through_a_differentiable_backward():
    res = []
    for m, Exp in zip((ng, torch), both("Exp")):
        x = m.tensor(X, requires_grad=True)
        g, = m.autograd.grad(Exp.apply(x * 2).sum(), x, create_graph=True)
        gg, = m.autograd.grad((g * g).sum(), x)
        res.append((g, gg))
    assert_close(res[0][0], res[1][0])
    assert_close(res[0][1], res[1][1])
    x = ng.tensor(X, dtype=ng.float64, requires_grad=True)
    assert ng.autograd.gradgradcheck(NG["Exp"].apply, (x,))


def test_setup_context_style_and_keyword_arguments():
    for m, Cube in zip((ng, torch), both("Cube")):
        x = m.tensor(X, requires_grad=True)
        Cube.apply(x).sum().backward()
        y = Cube.apply(x, p=2)
        y.sum().backward()
        if m is ng:
            got = (y, x.grad)
        else:
            assert_close(got[0], y)
            assert_close(got[1], x.grad)


@pytest.mark.parametrize("materialize", [True, False])
def test_non_tensor_and_non_differentiable_outputs(materialize):
    for m, Parts in zip((ng, torch), both("Parts")):
        x = m.tensor(X, requires_grad=True)
        a, b, mask, k = Parts.apply(x, materialize)
        assert k == 7 and not mask.requires_grad and a.requires_grad
        a.sum().backward()
        if m is ng:
            got = (a.grad_fn.got, x.grad)
        else:
            assert got[0] == a.grad_fn.got
            assert_close(got[1], x.grad)


def test_mark_dirty_and_an_input_returned_as_is():
    for m, (Double, Same) in zip((ng, torch), zip(both("Double"), both("Same"))):
        x = m.tensor(X, requires_grad=True)
        a = x.clone()
        b = Double.apply(a)
        assert b is a and a._version == 2 and type(a.grad_fn).__name__ == "DoubleBackward"
        c = Same.apply(x)
        assert c is not x and c.grad_fn is not None
        (b.sum() + c.sum()).backward()
        if m is ng:
            got = (b, x.grad)
        else:
            assert_close(got[0], b)
            assert_close(got[1], x.grad)
    errs = [raised(lambda: D.apply(m.tensor(X, requires_grad=True)))
            for m, D in zip((ng, torch), both("Double"))]
    assert errs[0] == errs[1] and errs[0][0] == "RuntimeError"


def test_saved_tensor_version_check_and_second_backward():
    def in_place(m, Exp):
        x = m.tensor(X, requires_grad=True)
        y = Exp.apply(x)
        y.add_(1)
        y.sum().backward()

    def twice(m, Exp):
        x = m.tensor(X, requires_grad=True)
        y = Exp.apply(x).sum()
        y.backward()
        y.backward()

    for case in (in_place, twice):
        got, want = (raised(lambda m=m, E=E: case(m, E)) for m, E in zip((ng, torch),
                                                                       both("Exp")))
        assert got == want and got is not None, case.__name__


def test_once_differentiable():
    for m, Once in zip((ng, torch), both("Once")):
        x = m.tensor(X, requires_grad=True)
        g, = m.autograd.grad(Once.apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad  # no gradient flows into its backward: nothing to refuse
        w = m.tensor(X, requires_grad=True)
        g, = m.autograd.grad(Once.apply(x).sum() * w.sum(), x, create_graph=True)
        assert g.requires_grad
        msg = raised(lambda: g.sum().backward())
        assert msg == ("RuntimeError", "trying to differentiate twice a function that was "
                       "marked with @once_differentiable")


def _bad(m, backward, n_in=1):
    class Bad(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=1.0):
            return x * 2

    Bad.backward = staticmethod(backward)
    x = m.tensor(X, requires_grad=True)
    return raised(lambda: Bad.apply(*((x, 1.0) if n_in == 2 else (x,))).sum().backward())


@pytest.mark.parametrize("backward, n_in", [
    (lambda ctx, g: (g, g, g), 2),
    (lambda ctx, g: g, 2),
    (lambda ctx, g: (g, g), 2),
    (lambda ctx, g: g[:2], 1),
    (lambda ctx, g: 3, 1),
], ids=["too-many", "too-few", "grad-for-non-tensor", "bad-shape", "not-a-tensor"])
def test_backward_errors_match_torch(backward, n_in):
    got, want = _bad(ng, backward, n_in), _bad(torch, backward, n_in)
    assert got == want and got is not None


def test_construction_and_ctx_errors_match_torch():
    def save_int(m):
        class S(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(3)
                return x

        S.apply(m.tensor(X, requires_grad=True))

    def no_backward(m):
        class N(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        N.apply(m.tensor(X, requires_grad=True)).sum().backward()

    def legacy_call(m):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.autograd.Function()(m.tensor(X))

    for case in (save_int, no_backward, legacy_call):
        got, want = raised(lambda: case(ng)), raised(lambda: case(torch))
        assert got == want and got is not None, case.__name__


def test_no_grad_and_detach_inside_are_honoured():
    for m in (ng, torch):
        class Mixed(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                with m.no_grad():
                    c = x.cos()  # a constant for the second derivative
                return g * c + g * x.detach() * 0 + g * x * 0

        x = m.tensor(X, requires_grad=True)
        g, = m.autograd.grad(Mixed.apply(x).sum(), x, create_graph=True)
        gg, = m.autograd.grad(g.sum(), x)
        if m is ng:
            got = (g, gg)
        else:
            assert_close(got[0], g)
            assert_close(got[1], gg)


# ------------------------------------------------------------------ under @ng.jit
LOG = []  # what the hook saw (a global: a list argument would be a pytree of the call)


@ng.jit
def jit_exp_hooked(x, w):
    y = NG["Exp"].apply(x * w)
    y.register_hook(lambda g: LOG.append(g.sum().item()) or g * 3)
    return (NG["Scale"].apply(y, 2.0, w) * x).sum()


def eager_exp_hooked(m, names, x, w, log):
    y = names["Exp"].apply(x * w)
    y.register_hook(lambda g: log.append(g.sum().item()) or g * 3)
    return (names["Scale"].apply(y, 2.0, w) * x).sum()


def test_jit_traces_the_forward_and_the_users_backward():
    xs = np.array([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5]], np.float32)
    ws = np.array([[1.0, 2.0, -1.0]], np.float32)
    for _ in range(2):  # the second call runs the cached plan
        LOG.clear()
        x, w = ng.tensor(xs, requires_grad=True), ng.tensor(ws, requires_grad=True)
        jit_exp_hooked(x, w).backward()
        tlog = []
        tx, tw = (torch.tensor(a, requires_grad=True) for a in (xs, ws))
        eager_exp_hooked(torch, TORCH, tx, tw, tlog).backward()
        assert_close(x.grad, tx.grad)
        assert_close(w.grad, tw.grad)
        np.testing.assert_allclose(LOG, tlog, rtol=1e-5)  # the hook ran, at run time
    graph = jit_exp_hooked.trace(x, w)
    assert "hook" in str(graph)


@ng.jit
def jit_exp_sum(x):
    return NG["Exp"].apply(x * 2).sum()


def test_jit_double_backward_through_the_users_backward():
    x = ng.tensor(X, requires_grad=True)
    g, = ng.autograd.grad(jit_exp_sum(x), x, create_graph=True)
    gg, = ng.autograd.grad((g * g).sum(), x)
    tx = torch.tensor(X, requires_grad=True)
    tg, = torch.autograd.grad(TORCH["Exp"].apply(tx * 2).sum(), tx, create_graph=True)
    tgg, = torch.autograd.grad((tg * tg).sum(), tx)
    assert_close(g, tg)
    assert_close(gg, tgg)


def dirty_then_parts(m, names, x):
    b = names["Double"].apply(x * 1)  # in place, marked dirty
    c, _, mask, k = names["Parts"].apply(b, True)
    return (c * c).sum() * k, mask


jit_dirty_then_parts = ng.jit(lambda x: dirty_then_parts(ng, NG, x))


def test_jit_mark_dirty_non_differentiable_outputs_and_gradcheck():
    x = ng.tensor(X, dtype=ng.float64, requires_grad=True)
    loss, mask = jit_dirty_then_parts(x)
    loss.backward()
    tx = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    tloss, tmask = dirty_then_parts(torch, TORCH, tx)
    tloss.backward()
    assert_close(loss, tloss)
    assert mask.tolist() == tmask.tolist() and not mask.requires_grad
    assert_close(x.grad, tx.grad)
    assert ng.autograd.gradcheck(lambda t: jit_dirty_then_parts(t)[0], (x,))


@pytest.mark.skipif(not ng.cuda.is_available(), reason="no CUDA (simulator off)")
def test_jit_function_on_cuda():
    x = ng.tensor(X).cuda().requires_grad_()
    jit_exp_sum(x).backward()
    tx = torch.tensor(X, requires_grad=True)
    TORCH["Exp"].apply(tx * 2).sum().backward()
    assert_close(x.grad.cpu(), tx.grad)

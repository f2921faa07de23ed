"""nn.Module against torch.nn.Module: registration order and names, state_dict keys, repr,
load_state_dict's errors and result, modes, dtype moves, hooks, zero_grad."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import numgrad as ng
from numgrad import nn

torch = pytest.importorskip("torch")


def _build(lib):
    """The same nested model in numgrad or torch (the class names match, so reprs and
    error texts can be compared verbatim)."""
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = lib.nn.LayerNorm(4)
            self.proj = lib.nn.Linear(4, 4, bias=False)
            self.register_buffer("scale", lib.ones(4))
            self.register_buffer("cache", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.proj(self.norm(x)) * self.scale

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(10, 4, padding_idx=0)
            self.blocks = lib.nn.ModuleList([Block(), Block()])
            self.heads = lib.nn.ModuleDict({"cls": lib.nn.Linear(4, 3), "act": lib.nn.GELU()})
            self.mlp = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Dropout(0.1),
                                         lib.nn.Linear(8, 4), lib.nn.Tanh(), lib.nn.Sigmoid())
            self.temperature = lib.nn.Parameter(lib.ones(1))

        def forward(self, idx):
            h = self.embed(idx)
            for b in self.blocks:
                h = b(h)
            return self.heads["cls"](self.heads["act"](self.mlp(h))) * self.temperature

    return Net()


@pytest.fixture(scope="module")
def pair():
    return _build(ng), _build(torch)


def _shapes(pairs):
    return [(k, tuple(v.shape)) for k, v in pairs]


def test_named_parameters_order_names_and_shapes(pair):
    ours, theirs = pair
    assert _shapes(ours.named_parameters()) == _shapes(theirs.named_parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ours.parameters())


def test_buffers_children_modules(pair):
    ours, theirs = pair
    assert _shapes(ours.named_buffers()) == _shapes(theirs.named_buffers())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == \
        [type(m).__name__ for m in theirs.modules()]
    assert len(list(ours.children())) == len(list(theirs.children()))
    assert len(list(ours.buffers())) == len(list(theirs.buffers()))


def test_state_dict_keys_and_values(pair):
    ours, theirs = pair
    sd = ours.state_dict()
    assert list(sd) == list(theirs.state_dict())  # the non-persistent buffer is left out
    assert not any(v.requires_grad for v in sd.values())
    # detached views: they share storage with the parameters
    w = ours.mlp[0].weight
    assert np.shares_memory(sd["mlp.0.weight"].numpy(), w.detach().numpy())


def test_repr_matches_torch(pair):
    ours, theirs = pair
    assert repr(ours) == repr(theirs)


def test_parameter_repr_matches_torch():
    assert repr(nn.Parameter(ng.tensor([1.0, 2.0]))) == \
        repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))


def test_parameter_shares_storage_and_is_a_leaf():
    t = ng.zeros(3)
    p = nn.Parameter(t)
    t.add_(1)
    assert p.tolist() == [1.0, 1.0, 1.0] and p.is_leaf and isinstance(p, ng.Tensor)
    assert type(p * 2) is ng.Tensor  # op results are plain tensors, as in torch
    assert not nn.Parameter(ng.zeros(2), requires_grad=False).requires_grad
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.tolist() == p.tolist()
    assert not np.shares_memory(q.detach().numpy(), p.detach().numpy())


def _torch_message(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def _sd(model, lib):
    return {k: v.clone() if lib is torch else ng.clone(v) for k, v in model.state_dict().items()}


@pytest.mark.parametrize("edit", ["missing", "unexpected", "both"])
def test_load_state_dict_strict_errors_match_torch(pair, edit):
    ours, theirs = pair
    sds = []
    for model, lib in ((ours, ng), (theirs, torch)):
        sd = _sd(model, lib)
        if edit in ("missing", "both"):
            del sd["mlp.0.bias"], sd["blocks.1.scale"]
        if edit in ("unexpected", "both"):
            sd["extra.weight"] = sd["temperature"]
        sds.append(sd)
    before = ours.mlp[0].weight.detach().clone()
    mine = _torch_message(lambda: ours.load_state_dict(sds[0]))
    assert mine == _torch_message(lambda: theirs.load_state_dict(sds[1]))
    assert ours.mlp[0].weight.tolist() == before.tolist()  # a failed load copies nothing
    # strict=False: the same keys reported, the rest loaded
    r_ours, r_theirs = ours.load_state_dict(sds[0], strict=False), \
        theirs.load_state_dict(sds[1], strict=False)
    assert r_ours.missing_keys == r_theirs.missing_keys
    assert r_ours.unexpected_keys == r_theirs.unexpected_keys
    assert repr(r_ours) == repr(r_theirs)


def test_load_state_dict_size_mismatch_matches_torch(pair):
    ours, theirs = pair
    bad_ours, bad_theirs = _sd(ours, ng), _sd(theirs, torch)
    bad_ours["heads.cls.weight"] = ng.zeros(2, 4)
    bad_theirs["heads.cls.weight"] = torch.zeros(2, 4)
    # Shapes print as torch.Size([3, 4]) in both (ng.Size).
    assert _torch_message(lambda: ours.load_state_dict(bad_ours)) == _torch_message(
        lambda: theirs.load_state_dict(bad_theirs))


def test_load_state_dict_round_trip_and_all_matched(pair):
    ours, theirs = pair
    other = _build(ng)
    result = other.load_state_dict(ours.state_dict())
    assert repr(result) == repr(theirs.load_state_dict(theirs.state_dict()))
    for (k, a), (_, b) in zip(other.state_dict().items(), ours.state_dict().items()):
        assert a.tolist() == b.tolist(), k
    # copied, not aliased
    assert not np.shares_memory(other.mlp[0].weight.detach().numpy(),
                                ours.mlp[0].weight.detach().numpy())


def test_forward_matches_torch_after_copying_weights(pair):
    ours, theirs = pair
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()}, strict=False)
    ours.eval(), theirs.eval()
    idx = [[1, 2, 0], [3, 9, 4]]
    got = ours(ng.tensor(idx))
    want = theirs(torch.tensor(idx))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    ours.train(), theirs.train()


def test_train_eval_flags_recurse():
    m = _build(ng)
    assert m.training and m.mlp[2].training
    assert m.eval() is m
    assert not any(sub.training for sub in m.modules())
    m.train()
    assert all(sub.training for sub in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


def test_dropout_is_identity_in_eval():
    d = nn.Dropout(0.5).eval()
    x = ng.ones(100)
    assert d(x) is x
    d.train()
    kept = d(x).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 0 < (kept == 0).sum() < 100


def test_double_float_keep_parameter_objects_and_optimizer():
    m = nn.Linear(3, 2)
    w = m.weight
    opt = ng.optim.SGD(m.parameters(), lr=0.1)
    m(ng.ones(1, 3)).sum().backward()
    assert m.double() is m
    assert m.weight is w and w.dtype is ng.float64 and w.grad.dtype is ng.float64
    before = w.detach().clone()
    opt.step()  # the optimizer holds the same objects, now float64
    assert not np.array_equal(before.numpy(), w.detach().numpy())
    m.float()
    assert w.dtype is ng.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(ng.int64)


def test_zero_grad_set_to_none_or_zeros():
    m = nn.Linear(3, 2)
    m(ng.ones(2, 3)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is not None and not m.weight.grad.numpy().any()
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


def test_forward_hooks_see_and_replace_output():
    m = nn.Linear(2, 2)
    seen = []
    h1 = m.register_forward_pre_hook(lambda mod, args: seen.append(("pre", mod, args[0])))
    h2 = m.register_forward_hook(lambda mod, args, out: seen.append(("post", mod, out)))
    x = ng.ones(1, 2)
    out = m(x)
    assert [s[0] for s in seen] == ["pre", "post"] and seen[0][1] is m and seen[0][2] is x
    assert seen[1][2] is out
    h3 = m.register_forward_hook(lambda mod, args, out: out * 0)
    assert not m(x).detach().numpy().any()
    for h in (h1, h2, h3):
        h.remove()
    seen.clear()
    assert m(x).detach().numpy().any() and not seen


def test_assignment_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'weight'"):
        m.weight = ng.zeros(2, 2)
    m.weight = None
    assert "weight" not in dict(m.named_parameters())
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        m.nope  # noqa: B018
    m.extra = nn.Parameter(ng.zeros(1))
    assert [n for n, _ in m.named_parameters()] == ["bias", "extra"]
    del m.extra
    assert [n for n, _ in m.named_parameters()] == ["bias"]
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ng.zeros(1))


def test_shared_parameter_listed_once_like_torch():
    def build(lib):
        a = lib.nn.Linear(2, 2)
        return lib.nn.Sequential(a, lib.nn.ReLU(), a)
    ours, theirs = build(ng), build(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]


def test_forward_missing_error_matches_torch():
    class Empty(nn.Module):
        pass

    class TEmpty(torch.nn.Module):
        pass
    with pytest.raises(NotImplementedError) as ours:
        Empty()(1)
    with pytest.raises(NotImplementedError) as theirs:
        TEmpty()(1)
    assert str(ours.value).replace("Empty", "X") == str(theirs.value).replace("TEmpty", "X")


def test_jit_loss_reads_module_parameters():
    ng.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    x = ng.randn(5, 3, dtype=ng.float64)
    f = ng.jit(lambda x: (m(x) ** 2).mean())
    eager = (m(x) ** 2).mean()
    eager.backward()
    want = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    got = f(x)
    got.backward()
    assert float(got) == pytest.approx(float(eager), rel=1e-12)
    for p, w in zip(m.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-10)
    with ng.no_grad():
        m[0].weight.mul_(2.0)  # an in-place update between calls is seen, not frozen in
    np.testing.assert_allclose(float(f(x)), float((m(x) ** 2).mean()), rtol=1e-12)


def test_jit_on_forward_method_and_on_a_module():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.drop = nn.Dropout(0.5)

        @ng.jit
        def forward(self, x):
            return self.drop(ng.tanh(self.fc(x)))

    ng.manual_seed(0)
    net = Net().double().eval()  # eval: dropout is the identity, so eager and jit agree
    x = ng.randn(4, 3, dtype=ng.float64)
    eager = ng.tanh(net.fc(x))
    eager.sum().backward()
    want = net.fc.weight.grad.numpy().copy()
    net.zero_grad()
    out = net(x)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(net.fc.weight.grad.numpy(), want, rtol=1e-12)
    # ng.jit(module) compiles its __call__
    seq = nn.Sequential(nn.Linear(3, 4), nn.Tanh()).double()
    compiled = ng.jit(seq)
    np.testing.assert_allclose(compiled(x).detach().numpy(), seq(x).detach().numpy(),
                               rtol=1e-12)

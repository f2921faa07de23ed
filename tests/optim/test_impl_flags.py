"""The optimizers take PyTorch's foreach / capturable / differentiable / fused keywords and show
them in param_groups in PyTorch's order; the update is the same whatever they say."""
import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam"])
def test_param_group_keys_and_values_match_torch(name):
    kw = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {"lr": 0.1}
    got = getattr(ng.optim, name)([ng.nn.Parameter(ng.ones(1))], **kw)
    want = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))], **kw)
    g, w = got.state_dict()["param_groups"][0], want.state_dict()["param_groups"][0]
    assert list(g) == list(w)
    assert {k: v for k, v in g.items()} == {k: v for k, v in w.items()}


@pytest.mark.parametrize("name,flags", [("Adam", {"foreach": True}), ("Adam", {"fused": True}),
                                        ("SGD", {"foreach": False}),
                                        ("RMSprop", {"capturable": True})])
def test_flags_change_no_number(name, flags):
    def run(**kw):
        w = ng.nn.Parameter(ng.tensor([1.0, -2.0]))
        opt = getattr(ng.optim, name)([w], lr=0.1, **kw)
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        return w.detach().numpy()
    np.testing.assert_array_equal(run(**flags), run())


def test_fused_and_foreach_together_is_torchs_error_and_differentiable_is_refused():
    p = [ng.nn.Parameter(ng.ones(1))]
    with pytest.raises(RuntimeError) as want:
        torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1, fused=True, foreach=True)
    with pytest.raises(RuntimeError) as got:
        ng.optim.SGD(p, lr=0.1, fused=True, foreach=True)
    assert str(got.value) == str(want.value)
    with pytest.raises(NotImplementedError):
        ng.optim.Adam(p, differentiable=True)


def test_positional_flags_sit_where_torchs_do():
    # RMSprop's and Adagrad's foreach are positional in PyTorch's signatures.
    g = ng.optim.RMSprop([ng.nn.Parameter(ng.ones(1))], 0.1, 0.9, 1e-8, 0, 0, False, False, True)
    t = torch.optim.RMSprop([torch.nn.Parameter(torch.ones(1))], 0.1, 0.9, 1e-8, 0, 0, False,
                            False, True)
    assert g.param_groups[0]["foreach"] is t.param_groups[0]["foreach"] is True
    g = ng.optim.Adagrad([ng.nn.Parameter(ng.ones(1))], 0.1, 0, 0, 0, 1e-10, True)
    assert g.param_groups[0]["foreach"] is True

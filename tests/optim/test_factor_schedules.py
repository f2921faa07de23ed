"""ConstantLR, MultiplicativeLR and PolynomialLR against PyTorch: the rates of each step (to
the bit, two groups), the closed form of step(epoch), and the constructors' error texts."""
from __future__ import annotations

import warnings

import pytest

import numgrad as ng

torch = pytest.importorskip("torch")

CASES = [("ConstantLR", dict(factor=0.25, total_iters=3)),
         ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9 if e % 2 else 0.7)),
         ("PolynomialLR", dict(total_iters=6, power=1.5))]


def _pair(name, kw):
    scheds = []
    for lib in (ng, torch):
        groups = [{"params": [lib.nn.Parameter(lib.zeros(1))], "lr": 0.3},
                  {"params": [lib.nn.Parameter(lib.zeros(1))], "lr": 0.05}]
        opt = lib.optim.SGD(groups, lr=0.1)
        scheds.append((opt, getattr(lib.optim.lr_scheduler, name)(opt, **kw)))
    return scheds


@pytest.mark.parametrize("name,kw", CASES, ids=[c[0] for c in CASES])
def test_rates_match_torch(name, kw):
    (nopt, ns), (topt, ts) = _pair(name, kw)
    for _ in range(9):
        assert ns.get_last_lr() == ts.get_last_lr()
        nopt.step(), topt.step()
        ns.step(), ts.step()
    if name != "MultiplicativeLR":  # (PyTorch has no closed form for it)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch deprecates step(epoch)
            for epoch in (2, 5, 1):
                ns.step(epoch), ts.step(epoch)
                assert ns.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-15)


def test_errors_match_torch():
    for name, kw, exc in [("ConstantLR", dict(factor=1.5), ValueError),
                          ("MultiplicativeLR", dict(lr_lambda=[lambda e: 1.0]), ValueError),
                          ("MultiplicativeLR", dict(lr_lambda=0.5), TypeError)]:
        texts = []
        for lib in (ng, torch):
            groups = [{"params": [lib.nn.Parameter(lib.zeros(1))]},
                      {"params": [lib.nn.Parameter(lib.zeros(1))]}]
            with pytest.raises(exc) as err:
                getattr(lib.optim.lr_scheduler, name)(lib.optim.SGD(groups, lr=0.1), **kw)
            texts.append(str(err.value))
        assert texts[0] == texts[1]

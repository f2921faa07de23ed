"""LBFGS against PyTorch: the same closure on the same start, with and without the
strong-Wolfe line search, several step() calls (the history carries over), losses and
parameters compared (float64 to 1e-12, float32 to 1e-4), and the state_dict's
keys and tensors PyTorch's."""
from __future__ import annotations

import numpy as np
import pytest

import numgrad as ng

torch = pytest.importorskip("torch")


def _rosenbrock(w, b):
    return (100 * (w[1:] - w[:-1] ** 2) ** 2 + (1 - w[:-1]) ** 2).sum() + ((b - 2) ** 2).sum()


def _run(lib, dtype, kw, steps):
    w = lib.nn.Parameter(lib.tensor(np.array([-1.2, 1.0, 0.5, -0.3], dtype)))
    b = lib.nn.Parameter(lib.tensor(np.array([0.0, 1.0], dtype)))
    opt = lib.optim.LBFGS([w, b], **kw)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(w, b)
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    return losses, [w.detach().numpy().copy(), b.detach().numpy().copy()], opt


@pytest.mark.parametrize("kw", [dict(), dict(line_search_fn="strong_wolfe"),
                                dict(lr=0.5, max_iter=5, history_size=3),
                                dict(max_iter=4, history_size=2, line_search_fn="strong_wolfe")],
                         ids=["plain", "wolfe", "short-history", "short-wolfe"])
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_lbfgs_matches_torch(kw, dtype, rtol):
    atol = rtol * 1e-2 if dtype is np.float64 else rtol
    losses, params, opt = _run(ng, dtype, kw, 3)
    tlosses, tparams, topt = _run(torch, dtype, kw, 3)
    np.testing.assert_allclose(losses, tlosses, rtol=rtol, atol=atol)
    for p, t in zip(params, tparams):
        np.testing.assert_allclose(p, t, rtol=rtol, atol=atol)
    if dtype is np.float64:
        state, tstate = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
        assert list(state) == list(tstate)
        assert state["n_iter"] == tstate["n_iter"]
        assert state["func_evals"] == tstate["func_evals"]
        np.testing.assert_allclose(state["d"].numpy(), tstate["d"].numpy(), rtol=1e-6,
                                   atol=1e-9)
        assert len(state["old_dirs"]) == len(tstate["old_dirs"])


def test_lbfgs_errors_match_torch():
    for lib in (ng, torch):
        p = lib.nn.Parameter(lib.zeros(2))
        with pytest.raises(ValueError, match="Invalid learning rate: -1"):
            lib.optim.LBFGS([p], lr=-1)
        with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
            lib.optim.LBFGS([{"params": [p]}, {"params": [lib.nn.Parameter(lib.zeros(1))]}])
        opt = lib.optim.LBFGS([p], line_search_fn="armijo")

        def closure():
            opt.zero_grad()
            loss = ((p - 1) ** 2).sum()
            loss.backward()
            return loss

        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(closure)

"""The engine runs a chain without its heap (engine._execute): the order nodes run in is
still torch's, for chains, fan-out and fan-in mixed."""
import torch

import numgrad as ng


def _order(lib):
    x = lib.tensor([0.5, 1.5], requires_grad=True)
    a = x.sin().exp()           # a chain
    b, c = a.cos(), a * 3       # fan-out
    d = (b + c).tanh().sum()    # fan-in, then a chain again
    seen = []
    stack = [d.grad_fn]
    nodes = set()
    while stack:
        n = stack.pop()
        if n is None or n in nodes:
            continue
        nodes.add(n)
        n.register_prehook(lambda g, n=n: seen.append(n.name().split("::")[-1]) and None)
        stack.extend(f for f, _ in n.next_functions)
    d.backward()
    return seen, x.grad.tolist()


def test_chain_and_branches_run_in_torchs_order():
    ours, ours_grad = _order(ng)
    theirs, their_grad = _order(torch)
    assert ours == theirs
    assert all(abs(a - b) < 1e-5 for a, b in zip(ours_grad, their_grad))

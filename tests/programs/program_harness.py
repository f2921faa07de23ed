"""Run a PyTorch program twice, as written and with only its import lines rewritten to numgrad,
giving both runs the same initial weights, and return what each printed.

Weights: a module's parameters are drawn from each library's own generator, so the first time
each outermost module is called (before its forward runs) the torch run records its
state_dict and the numgrad run loads that record into its module, in the same order. Data and
noise come from NumPy in the programs themselves, so both runs see the same values.
"""
from __future__ import annotations

import contextlib
import io
import os
import re

import numpy as np

_IMPORT = re.compile(r"^(\s*)(import|from)\s+torch\b(.*)$", re.M)


def to_numgrad(source: str) -> str:
    """``source`` with its torch import lines pointed at numgrad; nothing else changes."""
    def swap(m):
        indent, kind, rest = m.groups()
        if kind == "import" and not rest.strip():
            return f"{indent}import numgrad as torch"
        return f"{indent}{kind} numgrad{rest}"
    return _IMPORT.sub(swap, source)


@contextlib.contextmanager
def _sync_weights(module_cls, to_numpy, load, records):
    """Patch ``module_cls.__call__`` so that each outermost module's first call records
    (``load`` None) or loads (``load`` given) the next state_dict of ``records``."""
    original = module_cls.__call__
    seen, depth, count = {}, [0], [0]  # seen holds the modules so that no id is reused

    def call(self, *args, **kwargs):
        if depth[0] == 0 and id(self) not in seen:
            seen[id(self)] = self
            if load is None:
                records.append({k: to_numpy(v) for k, v in self.state_dict().items()})
            else:
                load(self, records[count[0]])
            count[0] += 1
        depth[0] += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            depth[0] -= 1

    module_cls.__call__ = call
    try:
        yield
    finally:
        module_cls.__call__ = original


def _exec(source, path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, str(path), "exec"), {"__name__": "__main__", "__file__": str(path)})
    return out.getvalue()


def run_both(path, env=None):
    """``(torch_output, numgrad_output)`` of the program at ``path``, with the environment
    variables ``env`` set while both run (a program that runs one of several setups)."""
    if env:
        with _environ(env):
            return run_both(path)
    import torch

    import numgrad as ng
    source = open(path).read()
    records = []
    torch.manual_seed(0)
    with _sync_weights(torch.nn.Module, lambda t: t.detach().cpu().numpy().copy(), None,
                       records):
        want = _exec(source, path)

    def load(module, state):
        module.load_state_dict({k: ng.tensor(v) for k, v in state.items()})

    ng.manual_seed(0)
    with _sync_weights(ng.nn.Module, None, load, records):
        got = _exec(to_numgrad(source), path)
    return want, got


@contextlib.contextmanager
def _environ(env):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def numbers(text: str) -> np.ndarray:
    """Every number printed in ``text``, in order."""
    return np.array([float(s) for s in _NUMBER.findall(text)])

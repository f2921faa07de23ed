"""nn.containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (``torch.nn`` containers).

Room: nn. Children are registered under their index (``"0"``, ``"1"``...) or key, so
parameter names read ``"0.weight"`` as in PyTorch.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Iterator

from numgrad.nn.module import Module, _addindent


def _index(n, idx):
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class Sequential(Module):
    """Modules applied in order, each to the previous one's output (``torch.nn.Sequential``).

    >>> ng.nn.Sequential(ng.nn.Linear(2, 3), ng.nn.ReLU())
    Sequential(
      (0): Linear(in_features=2, out_features=3, bias=True)
      (1): ReLU()
    )
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, m in args[0].items():
                self.add_module(key, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        """Apply each module in turn."""
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(len(self), idx)]

    def __len__(self):
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end (``Sequential.append``)."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules whose parameters the parent sees (``torch.nn.ModuleList``)."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(len(self), idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(len(self), idx)), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __repr__(self):
        # As PyTorch: a run of identical children prints once, as "(0-1): 2 x Block(...)".
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2)
                 for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end (``ModuleList.append``)."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add each of ``modules`` at the end (``ModuleList.extend``)."""
        for m in modules:
            self.append(m)
        return self


class ModuleDict(Module):
    """Modules by name, in insertion order (``torch.nn.ModuleDict``)."""

    def __init__(self, modules: dict | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module):
        self.add_module(key, module)

    def __delitem__(self, key: str):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        """The names (``ModuleDict.keys``)."""
        return self._modules.keys()

    def values(self):
        """The modules (``ModuleDict.values``)."""
        return self._modules.values()

    def items(self):
        """``(name, module)`` pairs (``ModuleDict.items``)."""
        return self._modules.items()

    def update(self, modules) -> None:
        """Add (or replace) modules from a dict or ``(name, module)`` pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for key, m in items:
            self[key] = m

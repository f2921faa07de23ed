"""ops.registry: every primitive is defined once, here, and read by everything else.

Room: ops. Imports NumPy only. Eager mode runs ``impl``; the tracer runs
``abstract``; autograd runs ``vjp``; codegen reads ``lowering``.

Registration format (one ``defop`` call per primitive, like a row of PyTorch's
``derivatives.yaml``)::

    exp = defop("exp", inputs=("x",), impl=np.exp, kind="elementwise",
                node="ExpBackward0", lowering="exp({0})")

    exp.defvjp(lambda g, out: g * out)

- ``inputs``: names of the tensor inputs; ``"*xs"`` for a variadic list (cat).
- ``params``: names of static, non-tensor parameters (``dim``, ``keepdim``...),
  passed to ``impl``/``abstract``/``vjp`` as keywords and baked into compiled code.
- ``impl(*arrays, **params)``: the eager kernel over NumPy arrays.
- ``kind``: ``"elementwise"`` (inputs broadcast, dtypes promoted, the result has
  the promoted dtype), ``"compare"`` (elementwise with a bool result) or
  ``"other"`` (then ``abstract`` is required).
- ``abstract(*avals, **params) -> (shape, numpy dtype)``: the shape/dtype rule.
  ``avals`` have ``.shape`` and ``.dtype``. Elementwise kinds derive it.
- ``node``: the grad_fn name users see, or ``callable(params, shapes) -> name``.
- ``lowering``: for elementwise ops a scalar template over ``{0}``, ``{1}``...
  that reads the same in ``numba.njit`` and ``numba.cuda.jit`` code; otherwise
  the name of a backend lowering (``"reduce"``, ``"matmul"``, ``"layout"``...).
- ``view``: the result may alias the first input's storage (shares its version
  counter, as PyTorch's views do).
- ``floating``: an elementwise op whose result is always floating (exp, tanh...):
  integer and bool operands are promoted to the default float dtype first, as
  PyTorch does (``tanh`` of an int64 tensor is float32, not NumPy's float64).
- ``saves(params) -> names``: params that PyTorch's node keeps as saved tensors (the
  index arrays of an advanced index): a backward without ``retain_graph`` frees them,
  so a second backward raises PyTorch's "backward through the graph a second time".
- ``random``: the impl draws from numgrad's generator on every call, so the compiler
  never folds it at compile time or merges two calls into one.
- ``check(operands)``: for operands PyTorch refuses that NumPy would take (bools in
  ``sub``, ``neg``, ``abs``, ``relu``), returns PyTorch's exception, raised before any
  promotion (so eager mode and the tracer refuse alike); None when the operands are fine.

``defvjp`` takes one rule per input, in order (``None``: no gradient flows to
that input). A rule takes the incoming gradient ``g`` (a Tensor) and asks for
what it needs by parameter name; a node saves what the rules of the inputs that
require grad ask for and nothing more, so "modified by an inplace operation"
errors are as precise as PyTorch's:

- an input's name (``x``): the saved input tensor;
- ``out``: the saved output;
- ``<input>_shape`` / ``<input>_dtype``, ``shapes``: metadata only (not saved);
- a param's name: the param.

A rule returns that input's gradient (``None`` = zero), written in numgrad ops;
a variadic primitive (``cat``) has a single rule returning one gradient per input.
So the same rule gives the eager backward, the traced backward
and every higher order. Unbroadcasting and dtype casting back to the input are
done once, by the node (``ops.dispatch.OpNode``), not in each rule.
"""
from __future__ import annotations

import inspect

from numgrad.ops.dispatch import apply

REGISTRY: dict[str, "Primitive"] = {}


class Primitive:
    __slots__ = ("name", "inputs", "params", "impl", "kind", "abstract", "node", "lowering",
                 "view", "vjps", "needs", "variadic", "floating", "check", "saves",
                 "random")

    def __init__(self, name, inputs, params, impl, kind, abstract, node, lowering, view,
                 floating=False, check=None, saves=None, random=False):
        self.name = name
        self.inputs = tuple(inputs)
        self.variadic = len(self.inputs) == 1 and self.inputs[0].startswith("*")
        self.params = tuple(params)
        self.impl = impl
        self.kind = kind
        self.abstract = abstract
        self.node = node
        self.lowering = lowering
        self.view = view
        self.floating = floating  # int/bool operands computed in the default float dtype
        self.check = check  # check(operands) -> the exception to raise, or None
        self.saves = saves  # saves(params) -> names of params the node saves (and frees)
        self.random = random  # draws random numbers per call: never folded or merged
        self.vjps = None   # one rule per input (a single rule if variadic); None: no grad
        self.needs = ()    # per rule, the names it asks for

    def defvjp(self, *rules):
        """Attach the derivative rules; see the module docstring for their parameters."""
        expected = 1 if self.variadic else len(self.inputs)
        if len(rules) != expected:
            raise TypeError(f"{self.name} takes {expected} vjp rule(s), got {len(rules)}")
        known = set(self.inputs) | set(self.params) | {"out", "shapes", "dtypes"}
        known |= {f"{n}_shape" for n in self.inputs} | {f"{n}_dtype" for n in self.inputs}
        if self.variadic:
            known.add(self.inputs[0][1:])
        needs = []
        for rule in rules:
            if rule is None:
                needs.append(())
                continue
            names = list(inspect.signature(rule).parameters)
            if not names or names[0] != "g":
                raise TypeError(f"vjp rule of {self.name} must take the gradient `g` first")
            unknown = [n for n in names[1:] if n not in known]
            if unknown:
                raise TypeError(f"vjp rule of {self.name} asks for unknown {unknown}")
            needs.append(tuple(names[1:]))
        self.vjps = rules
        self.needs = tuple(needs)
        return self

    @property
    def differentiable(self):
        return self.vjps is not None and any(r is not None for r in self.vjps)

    # Calling a primitive applies it to tensors, ``exp(x)``: see ``ops.dispatch.apply``.
    __call__ = apply

    def node_name(self, params, shapes):
        return self.node(params, shapes) if callable(self.node) else self.node

    def __repr__(self):
        return f"Primitive({self.name})"


def defop(name, *, inputs, impl, params=(), kind="other", abstract=None, node=None,
          lowering=None, view=False, floating=False, check=None, saves=None,
          random=False) -> Primitive:
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} registered twice")
    if kind == "other" and abstract is None:
        raise TypeError(f"primitive {name!r} of kind 'other' needs an abstract (shape) rule")
    node = node or "".join(p.capitalize() for p in name.split("_")) + "Backward0"
    prim = Primitive(name, inputs, params, impl, kind, abstract, node, lowering, view, floating,
                     check, saves, random)
    REGISTRY[name] = prim
    return prim

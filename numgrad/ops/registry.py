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
- ``role``: how a compiler treats it: ``"elementwise"`` (one scalar expression per
  element; the default for elementwise and compare kinds), ``"reduction"`` (folded into
  the loop that makes its input; ``reduce`` says how), ``"layout"`` (a view of the same
  flat data inside a kernel: reshape) or ``"host"`` (runs its impl, or its effect,
  between kernels; the default otherwise).
- ``scalar(args, dtype, params, spell) -> str``: the scalar lowering, an expression over
  the operand expressions ``args`` for an ``dtype`` result; ``spell`` is the backend's
  ``lit(value, dtype)`` / ``cast(expr, dtype)``. Defaults to filling the ``lowering``
  template. It names helpers of ``compiler.backends.cpu.scalar`` and reads the same in
  ``numba.njit`` and ``numba.cuda.jit`` code.
  ``reduce``: a ``Reduction`` (combine, identity, mean).
- ``weight``: rough cost of one element in simple-op units (transcendentals 8), for the
  parallel cut; ``cheap``: recomputing it in the backward beats saving it (default:
  elementwise kinds); ``pairs``: ``(group, slot)`` for ops computed together when both
  read one argument (sin/cos); ``blas``: runs a BLAS call (its threads fight the
  kernels').
- ``effects``: what it does besides computing its output: ``"stop_gradient"`` (detach:
  the identity at run time), ``"calls_user"`` (hook: never folded, merged or dropped).
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


class Reduction:
    """How a reduction folds its elements: ``combine`` (an elementwise Primitive of two
    operands) from ``identity(dtype)``; ``additive``: the combine is ``+`` (chunks can be
    summed in order, a backend may spell it ``+=``); ``mean`` divides by the count at the
    end."""

    __slots__ = ("additive", "combine", "identity", "mean")

    def __init__(self, combine, identity, additive=False, mean=False):
        self.combine = combine
        self.identity = identity
        self.additive = additive
        self.mean = mean


def _template(lowering):
    def scalar(args, dtype, params, spell):
        return lowering.format(*args, **params)
    return scalar


def identity_lowering(args, dtype, params, spell):
    """The scalar lowering of an op that is the identity at run time."""
    return args[0]


class Primitive:
    __slots__ = ("name", "inputs", "params", "impl", "kind", "abstract", "node", "lowering",
                 "view", "vjps", "needs", "variadic", "floating", "check", "saves",
                 "random", "role", "scalar", "weight", "cheap", "pairs", "blas", "reduce",
                 "effects", "broadcasts")

    def __init__(self, name, inputs, params, impl, kind, abstract, node, lowering, view,
                 floating=False, check=None, saves=None, random=False, role=None,
                 scalar=None, weight=1, cheap=None, pairs=None, blas=False, reduce=None,
                 effects=(), broadcasts=False):
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
        ew = kind in ("elementwise", "compare")
        self.role = role or ("elementwise" if ew else "host")
        if scalar is None and self.role == "elementwise" and lowering is not None:
            scalar = _template(lowering)
        self.scalar = scalar    # scalar(args, dtype, params, spell) -> expression
        self.weight = weight    # cost of one element, simple-op units
        self.cheap = ew if cheap is None else cheap  # recompute in the backward
        self.pairs = pairs      # (group, slot): computed together on one argument
        self.blas = blas        # calls BLAS
        self.reduce = reduce    # Reduction, for role "reduction"
        self.effects = tuple(effects)
        self.broadcasts = broadcasts  # output = input broadcast: never folded into a big const
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
          random=False, role=None, scalar=None, weight=1, cheap=None, pairs=None,
          blas=False, reduce=None, effects=(), broadcasts=False) -> Primitive:
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} registered twice")
    if kind == "other" and abstract is None:
        raise TypeError(f"primitive {name!r} of kind 'other' needs an abstract (shape) rule")
    node = node or "".join(p.capitalize() for p in name.split("_")) + "Backward0"
    prim = Primitive(name, inputs, params, impl, kind, abstract, node, lowering, view, floating,
                     check, saves, random, role, scalar, weight, cheap, pairs, blas, reduce,
                     effects, broadcasts)
    REGISTRY[name] = prim
    return prim

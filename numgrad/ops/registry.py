"""ops.registry: every primitive is defined once, here, and read by everything else.

Room: ops. Imports NumPy only. Eager mode runs ``impl``; the tracer runs
``abstract``; autograd runs ``vjp``; the compiler reads ``kind``, ``scalar`` and ``cost``.

Registration format (one ``defop`` call per primitive, like a row of PyTorch's
``derivatives.yaml``)::

    exp = defop("exp", inputs=("x",), impl=np.exp, kind="elementwise",
                node="ExpBackward0", lowering="exp({0})")

    exp.defvjp(lambda g, out: g * out)

- ``inputs``: names of the tensor inputs; ``"*xs"`` for a variadic list (cat).
- ``params``: names of static, non-tensor parameters (``dim``, ``keepdim``...),
  passed to ``impl``/``abstract``/``vjp`` as keywords and baked into compiled code.
- ``impl(*arrays, **params)``: the eager kernel over NumPy arrays.
- ``kind``: what eager dispatch and the compiler do with it, one of

  - ``"elementwise"``: inputs broadcast, dtypes promoted, the result has the promoted
    dtype; the compiler spells it as one scalar expression per element;
  - ``"compare"``: elementwise with a bool result;
  - ``"pointwise"``: one scalar expression per element too, with its own ``abstract``
    rule and no broadcasting or promotion by dispatch (casts, ``where``, ``expand``);
  - ``"reduction"``: folded into the loop that makes its input (``reduce`` says how);
  - ``"layout"``: a view of the same flat data inside a kernel (reshape);
  - ``"host"`` (the default): runs its impl, or its effect, between kernels.

  Every kind but the first two needs ``abstract``. ``Primitive.role`` is the compiler's
  view: ``"elementwise"`` for the three pointwise kinds, else the kind.
- ``abstract(*avals, **params) -> (shape, numpy dtype)``: the shape/dtype rule.
  ``avals`` have ``.shape`` and ``.dtype``. Elementwise kinds derive it.
- ``node``: the grad_fn name users see, or ``callable(params, shapes) -> name``.
- ``lowering``: for the pointwise kinds, a scalar template over ``{0}``, ``{1}``...
  that reads the same in ``numba.njit`` and ``numba.cuda.jit`` code.
- ``jit``: False for the few ops ``@ng.jit`` cannot compile (a TracingError says so).
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
- ``scalar(args, dtype, params, spell) -> str``: the scalar lowering, an expression over
  the operand expressions ``args`` for an ``dtype`` result; ``spell`` is the backend's
  ``lit(value, dtype)`` / ``cast(expr, dtype)``. Defaults to filling the ``lowering``
  template. It calls only the helpers the row carries (``helpers``) and reads the same
  in ``numba.njit`` and ``numba.cuda.jit`` code.
  ``reduce``: a ``Reduction`` (combine, identity, mean).
- ``helpers``: the ``Helper`` rows of the scalar functions its lowering calls (``exp``,
  ``clamp_min``...): each backend builds its kernels' helper namespace from them
  (``numba.njit`` on the CPU, CUDA device functions), so no backend keeps a list.
- ``api``: an ``Api``, how the op is public: the functions ``ng.<name>`` and
  ``ng.ops.<name>`` (generated into ``ops.api`` with a real signature and this docstring),
  the ``Tensor`` method, the in-place ``x.<name>_()`` and ``out=``. None: internal.
- ``cost``: a ``Cost``: ``weight``, rough cost of one element in simple-op units
  (transcendentals 8), for the parallel cut; ``cheap``, recomputing it in the backward
  beats saving it (default: the elementwise and compare kinds); ``pairs``,
  ``(group, slot)`` for ops computed together when both read one argument (sin/cos);
  ``blas``, it runs a BLAS call (its threads fight the kernels').
- ``leading_batch``: the impl maps over the operands' leading dims, broadcasting them
  (the LAPACK rows: matrices in the last two dims); ``ng.func.vmap`` batches it by making
  the vmapped dim one more of them, in one call, where others loop over the examples.
- ``effects``: what it does besides computing its output: ``"stop_gradient"`` (detach:
  the identity at run time), ``"calls_user"`` (hook: never folded, merged or dropped).
- ``check(operands)``: for operands PyTorch refuses that NumPy would take (bools in
  ``sub``, ``neg``, ``abs``, ``relu``), returns PyTorch's exception, raised before any
  promotion (so eager mode and the tracer refuse alike); None when the operands are fine.
- ``python_exact``: on Python floats alone (a float argument ``@ng.jit`` traces as a
  value, with Python numbers) the op gives the bits Python's float arithmetic gives, and
  raises where Python would not: True for the correctly rounded IEEE operations and the
  comparisons, or ``python_exact(operands) -> bool`` (division: by a nonzero Python
  number only, since Python raises ZeroDivisionError). Any other op on such floats keeps
  the argument a constant (``ops.dispatch``).

``register(name, vjp=(...), **fields)`` is ``defop`` plus ``defvjp`` in one call, the
public extension point (``ng.ops.register``); ``unregister(name)`` takes a row back out,
with its public functions, methods and helpers.

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

import ast
import inspect
import re
from dataclasses import dataclass, field, replace

from numgrad.ops.dispatch import apply, forget_fast_path

REGISTRY: dict[str, "Primitive"] = {}
# name -> Helper: every scalar helper some row's lowering calls (rows add theirs).
HELPERS: dict[str, "Helper"] = {}
# Called as fn(prim, added) when a row comes (added=True) or goes: the helper namespaces
# of the backends and the public spellings (ops.exposure) follow the registry this way.
_LISTENERS: list = []


@dataclass(frozen=True, eq=False)
class Helper:
    """A scalar function that lowerings call by ``name``, in ``numba.njit`` and
    ``numba.cuda.jit`` kernels alike.

    ``body``: plain Python over ``math`` (both backends compile it, inlined; None: a Python
    builtin Numba knows, such as ``abs``); ``cpu`` / ``cuda``: the body where a backend's
    differs (a CUDA body reads ``math``, which Numba's simulator swaps for IEEE NumPy);
    ``llvm``: how ``backends.cpu.llvm.body`` writes it in a long loop body: ``"ir"`` (its
    own IR version there), ``"vmath"`` (llvm.vmath's vector polynomial) or ``"numba"`` (on
    purpose: a body that calls it stays a Numba loop). A helper without ``llvm`` is an
    error when a long loop body calls it, not a silent fallback.
    """
    name: str
    body: object
    cpu: object = None
    cuda: object = None
    llvm: str = None

    def __post_init__(self):
        if self.llvm not in (None, "ir", "vmath", "numba"):
            raise ValueError(f"helper {self.name!r}: llvm must be 'ir', 'vmath' or 'numba', "
                             f"not {self.llvm!r}")


@dataclass(frozen=True, kw_only=True)
class Api:
    """How a row is public (``Primitive.api``): ``doc`` is the docstring of its function;
    ``names`` the functions (``ng.<name>``, ``ng.ops.<name>``; default: the row's name,
    the first one canonical, the rest aliases); ``args`` their parameter names (default
    ``input`` or ``input, other``); ``method``: also ``Tensor.<name>`` for each name;
    ``inplace``: also ``Tensor.<name>_`` (writes into the tensor, bumps its version);
    ``out``: ``out=``, as PyTorch's function takes it. ``wrapper``: ``"module:function"``,
    a hand-written function that does real work (keywords such as ``alpha=``, dtype
    handling, one function over two rows), exposed instead of a generated one (its own
    docstring and signature)."""
    doc: str = None
    wrapper: str = None
    names: tuple = ()
    args: tuple = None
    method: bool = True
    inplace: bool = False
    out: bool = True

    def __post_init__(self):
        if (self.doc is None) == (self.wrapper is None):
            raise TypeError("Api takes a doc (for a generated function) or a wrapper, not both")


def subscribe(fn):
    """Call ``fn(prim, added)`` for every row there is and every row to come or go."""
    _LISTENERS.append(fn)
    for prim in list(REGISTRY.values()):
        fn(prim, True)
    return fn


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
    scalar.template = lowering
    return scalar


def _template_of(prim):
    """``prim.scalar`` when it fills the ``lowering`` template, else None."""
    return prim.scalar if getattr(prim.scalar, "template", None) == prim.lowering else None


def identity_lowering(args, dtype, params, spell):
    """The scalar lowering of an op that is the identity at run time."""
    return args[0]


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What the scheduler and autodiff weigh about one element of a primitive."""
    weight: int = 1          # cost in simple-op units (transcendentals 8): the parallel cut
    cheap: bool = None       # recomputing it in the backward beats saving it (None:
    #                          the elementwise and compare kinds)
    pairs: tuple = None      # (group, slot): computed together when both read one argument
    blas: bool = False       # runs a BLAS call (its threads fight the kernels')


POINTWISE = ("elementwise", "compare", "pointwise")   # one scalar expression per element


@dataclass(frozen=True, kw_only=True, eq=False)
class Primitive:
    """One registry row (see the module docstring for each field). Rules are attached once,
    by ``defvjp``, at registration."""
    name: str
    inputs: tuple
    impl: object
    params: tuple = ()
    kind: str = "host"
    abstract: object = None
    node: object = None
    lowering: str = None     # pointwise kinds: the scalar template
    view: bool = False
    floating: bool = False   # int/bool operands computed in the default float dtype
    check: object = None     # check(operands) -> the exception to raise, or None
    python_exact: object = False  # True, or (operands) -> bool: Python's float bits
    saves: object = None     # saves(params) -> names of params the node saves (and frees)
    random: bool = False     # draws random numbers per call: never folded or merged
    scalar: object = None    # scalar(args, dtype, params, spell) -> expression
    cost: Cost = Cost()
    reduce: object = None    # Reduction, for kind "reduction"
    effects: tuple = ()
    broadcasts: bool = False  # output = input broadcast: never folded into a big const
    jit: bool = True         # False: @ng.jit refuses it (a TracingError)
    leading_batch: bool = False  # impl maps over its operands' leading dims (broadcast)
    helpers: tuple = ()      # the Helper rows its lowering calls
    api: Api = None          # how it is public (None: internal)
    variadic: bool = field(init=False)
    vjps: tuple = field(init=False, default=None)  # one rule per input; None: no gradient
    needs: tuple = field(init=False, default=())   # per rule, the names it asks for
    # Its NumPy kernel may meet inf/NaN arithmetic, which NumPy warns about and PyTorch does
    # not: eager mode runs it with NumPy's FP errors ignored (layout and compare kinds never
    # compute, so they skip that cost: ``ops.dispatch.evaluate``).
    quiet: bool = field(init=False, default=True)

    def __post_init__(self):
        if self.kind not in POINTWISE + ("reduction", "layout", "host"):
            raise ValueError(f"primitive {self.name!r}: unknown kind {self.kind!r}")
        set_ = object.__setattr__.__get__(self)
        set_("inputs", tuple(self.inputs))
        set_("params", tuple(self.params))
        set_("effects", tuple(self.effects))
        set_("helpers", tuple(self.helpers))
        if self.api is not None and not self.api.names:
            set_("api", replace(self.api, names=(self.name,)))
        set_("variadic", len(self.inputs) == 1 and self.inputs[0].startswith("*"))
        pointwise = self.kind in POINTWISE
        if self.scalar is None and pointwise and self.lowering is not None:
            set_("scalar", _template(self.lowering))
        if self.cost.cheap is None:
            set_("cost", replace(self.cost, cheap=self.kind in POINTWISE[:2]))
        set_("quiet", self.kind not in ("layout", "compare"))

    @property
    def role(self):
        """How a compiler treats it: ``"elementwise"`` (one scalar expression per element),
        ``"reduction"``, ``"layout"`` or ``"host"``."""
        return "elementwise" if self.kind in POINTWISE else self.kind

    def defvjp(self, *rules):
        """Attach the derivative rules; see the module docstring for their parameters."""
        expected = 1 if self.variadic else len(self.inputs)
        if len(rules) != expected:
            raise TypeError(f"{self.name} takes {expected} vjp rule(s), got {len(rules)}")
        reserved = {"out", "shapes", "dtypes"} & set(self.inputs)
        if reserved:  # a rule's `out` is the saved output: an input so named would be shadowed
            raise ValueError(f"primitive {self.name!r}: input name(s) {sorted(reserved)} are "
                             "reserved for what vjp rules read (the output, all shapes, all "
                             "dtypes); rename the input")
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
        object.__setattr__(self, "vjps", rules)
        object.__setattr__(self, "needs", tuple(needs))
        forget_fast_path(self)  # eager dispatch settled the old rules: settle them again
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


_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _check_template(prim):
    """A lowering template may call only the helpers its row carries: a name no row
    defines would reach a kernel as an undefined global."""
    if prim.lowering is None or prim.kind not in POINTWISE or (
            prim.scalar is not _template_of(prim)):
        return  # a row's own ``scalar`` is checked where a backend builds it
    try:
        tree = ast.parse(_PLACEHOLDER.sub("_", prim.lowering), mode="eval")
    except SyntaxError:
        return  # a tag, not an expression ("cast", "expand"): its ``scalar`` spells it
    carried = {h.name for h in prim.helpers}
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    if called - carried:
        raise ValueError(f"primitive {prim.name!r}: its lowering {prim.lowering!r} calls "
                         f"{sorted(called - carried)}, which it does not carry: give each a "
                         "Helper row (helpers=(Helper(name, body, ...),))")


def defop(name, **fields) -> Primitive:
    """Register the primitive ``name`` (its fields by keyword: see the module docstring)."""
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} registered twice")
    if fields.get("kind", "host") not in POINTWISE[:2] and fields.get("abstract") is None:
        raise TypeError(f"primitive {name!r} of kind {fields.get('kind', 'host')!r} needs an "
                        "abstract (shape) rule")
    if fields.get("node") is None:
        fields["node"] = "".join(p.capitalize() for p in name.split("_")) + "Backward0"
    prim = Primitive(name=name, **fields)
    _check_template(prim)
    for h in prim.helpers:
        if not isinstance(h, Helper):
            raise TypeError(f"primitive {name!r}: helpers must be Helper rows, not {h!r}")
        old = HELPERS.get(h.name)
        if old is not None and old is not h:
            raise ValueError(f"primitive {name!r}: a different helper {h.name!r} is "
                             "registered already")
    for h in prim.helpers:
        HELPERS[h.name] = h
    REGISTRY[name] = prim
    try:
        for fn in _LISTENERS:
            fn(prim, True)
    except Exception:  # (a public name taken already): the registry as it was
        unregister(name)
        raise
    return prim


def register(name, *, vjp=None, **fields) -> Primitive:
    """Define an op in one place: its row (``defop``'s fields by keyword), its derivative
    rules (``vjp``: one per input, as ``defvjp`` takes them) and, with ``api=Api(...)``,
    its public function, ``Tensor`` method and in-place variant. The backends' helper
    namespaces pick up its ``helpers``. Undo with ``unregister(name)``.

    >>> import numgrad as ng
    >>> from numgrad.ops import Api, Helper, register, unregister
    >>> def cube(x):
    ...     return x * x * x
    >>> cube_op = register("cube", inputs=("x",), impl=lambda x: x ** 3, kind="elementwise",
    ...                    lowering="cube({0})", helpers=(Helper("cube", cube, llvm="numba"),),
    ...                    api=Api(doc="x ** 3"), vjp=(lambda g, x: g * 3 * x * x,))
    >>> ng.cube(ng.tensor([2.0]))
    tensor([8.])
    >>> unregister("cube")
    """
    prim = defop(name, **fields)
    if vjp is not None:
        try:
            prim.defvjp(*vjp)
        except Exception:  # a refused rule leaves no half-registered row behind
            unregister(name)
            raise
    return prim


def unregister(name) -> None:
    """Take the row ``name`` out of the registry, with its public spellings and the
    helpers no other row calls (a test's op, registered for the test only)."""
    prim = REGISTRY.pop(name)
    used = {h.name for p in REGISTRY.values() for h in p.helpers}
    for h in prim.helpers:
        if h.name not in used and HELPERS.get(h.name) is h:
            del HELPERS[h.name]
    for fn in reversed(_LISTENERS):  # (a helper still in HELPERS is still called)
        fn(prim, False)

"""compiler.ir: the static graph IR — typed values and a flat list of equations.

Room: compiler. Imports NumPy and the op registry (for the reference evaluator).

A ``Graph`` reads like a jaxpr::

    { lambda a:f32[10]{grad} ; let
        b:f32[10] = pow_scalar[exponent=2] a
        c:f32[] = sum[dim=None, keepdim=False] b
      in (c) }

Annotations sit in braces: ``{grad}`` on values that require grad, ``{weak}`` on a
Python float argument traced as a 0-d input (it promotes as a Python number: ``x_f32 *
lr`` stays float32), ``{no_grad}`` on equations recorded with grad mode off,
``{detach}`` on stop-gradient boundaries and ``{hook}`` on backward hook boundaries.
Inputs keep the names of the function's parameters (``Var.hint``; other values
get letters that skip those names), scalar constants print as their values, and
a joint graph's derived backward starts after a ``# backward`` line.
``Graph.eval`` runs the NumPy impls and is the oracle every pass is tested against.
In Jupyter a Graph draws itself (``numgrad.viz``), the listing folded under it.
"""
from __future__ import annotations

import html

import numpy as np

from numgrad.ops.dispatch import run_impl
from numgrad.viz.svg import html_box

_SHORT = {"float32": "f32", "float64": "f64", "int64": "i64", "int32": "i32", "bool": "bool",
          "int16": "i16", "int8": "i8", "uint8": "u8"}


class Var:
    """A value in the graph: shape and NumPy dtype, known at trace time."""

    __slots__ = ("id", "shape", "dtype", "requires_grad", "_ng_interpreter", "hint",
                 "_ng_standin", "_ng_weak", "from_shape", "__weakref__")

    def __init__(self, id, shape, dtype, interpreter=None, hint=None):
        self.id = id
        self.hint = hint          # the user's parameter name, for inputs (see _Ids)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.requires_grad = False
        self._ng_interpreter = interpreter  # set while tracing: routes ops on this value
        self._ng_standin = None  # strides of eager mode's array, if not C (ops.views)
        # A Python float traced as a 0-d input, or a value computed from such floats and
        # Python numbers alone: type promotion treats it as a Python number (ops.dispatch).
        self._ng_weak = False
        # A constant whose value was computed from shapes (a mean's count: ``Tracer.
        # shape_constant``): a shape-generic plan reads it at run time, not as a literal.
        self.from_shape = False

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def name(self):
        return self.hint or _name(self.id)

    def type_str(self):
        return f"{_SHORT.get(self.dtype.name, self.dtype.name)}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        return f"{self.name}:{self.type_str()}"

    # Concrete access while tracing means Python control flow on a tensor's value.
    def _ng_concrete(self, reason=None):
        if self._ng_interpreter is not None:
            self._ng_interpreter.concrete_access(self, reason)
        raise TypeError("a traced value has no concrete data outside its trace")

    def _ng_repr(self):
        return f"<traced {self.type_str()}>"


def _name(i):
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = letters[r] + s
    return s


class _Ids:
    """Value ids whose letter names avoid the user's parameter names (``reserve``), so an
    input keeps its name ``x`` and no intermediate is also called ``x``."""

    def __init__(self, start, reserved=()):
        self._next = start
        self.reserved = set(reserved)

    def __iter__(self):
        return self

    def __next__(self):
        i = self._next
        while _name(i) in self.reserved:
            i += 1
        self._next = i + 1
        return i


def _literal(a):
    """A size-1 constant's value as a jaxpr literal (``2.0``, ``-1``, ``True``)."""
    x = a.reshape(-1)[0].item()
    return repr(x)


def _const_value(a):
    if a.size <= 6:
        return np.array2string(a.reshape(-1) if a.ndim > 1 else a, separator=", ",
                               precision=4, suppress_small=True).replace("\n", "")
    return f"array[{','.join(map(str, a.shape))}]"


class Eqn:
    """``out = prim[params](*inputs)``, with annotations (grad mode, detach, hook)."""

    __slots__ = ("prim", "inputs", "params", "out", "ann")

    def __init__(self, prim, inputs, params, out, ann=None):
        self.prim = prim          # a registry Primitive
        self.inputs = list(inputs)
        self.params = dict(params)
        self.out = out
        self.ann = dict(ann or {})

    @property
    def name(self):
        return self.prim.name

    def __repr__(self):
        return self.format()

    def annotations(self):
        """The annotations shown in braces: ``["no_grad", "hook"]`` (``bwd`` is the band,
        not an annotation)."""
        ann = [k for k, v in self.ann.items() if v and k not in ("grad", "bwd")]
        # The engine derives every backward equation with grad mode off: marking each
        # {no_grad} would say nothing, so only forward ones are marked.
        no_grad = self.ann.get("grad") is False and not self.ann.get("bwd")
        return (["no_grad"] if no_grad else []) + ann

    def format(self, consts=None):
        """The listing line; ``consts`` (a Graph's) prints size-1 constants as values."""
        params = ", ".join(f"{k}={_short_param(v)}" for k, v in self.params.items()
                           if not k.startswith("_"))
        params = f"[{params}]" if params else ""
        ann = " ".join("{" + k + "}" for k in self.annotations())
        args = " ".join(_literal(consts[v]) if consts and v in consts and consts[v].size == 1
                        else v.name for v in self.inputs)
        return f"{self.out!r} = {self.name}{params} {args}" + (f"  {ann}" if ann else "")


def _short_param(v):
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}"
    if isinstance(v, np.dtype):
        return v.name
    if callable(v):
        return getattr(v, "__name__", "fn")
    return repr(v)


class Graph:
    """Inputs, constants, equations and outputs; see the module docstring."""

    def __init__(self, inputs=(), eqns=(), outputs=(), consts=None, name="fn"):
        self.inputs = list(inputs)
        self.eqns = list(eqns)
        self.outputs = list(outputs)
        self.consts = dict(consts or {})  # Var -> np.ndarray
        self.name = name
        self._ids = _Ids(1 + max([v.id for v in self._all_vars()], default=-1),
                         {v.hint for v in self.inputs if v.hint})
        self.stages = None  # {output Var: "fwd stage 0"}: the fused kernels, set by a plan

    def _all_vars(self):
        yield from self.inputs
        yield from self.consts
        for e in self.eqns:
            yield e.out

    def new_var(self, shape, dtype, hint=None):
        return Var(next(self._ids), shape, dtype, hint=hint)

    def reserve(self, names):
        """Keep these names (the function's parameters) for the inputs that carry them."""
        self._ids.reserved.update(names)

    # ------------------------------------------------------------- display
    def __str__(self):
        ins = " ".join(f"{v!r}" + ("{grad}" if v.requires_grad else "")
                       + ("{weak}" if v._ng_weak else "") for v in self.inputs)
        # Size-1 constants are printed where they are used; larger ones are listed here.
        consts = " ".join(f"{v!r}={_const_value(a)}" for v, a in self.consts.items()
                          if a.size != 1)
        lines = [f"{{ lambda {consts + ' ; ' if consts else ''}{ins} ; let"]
        split = any(not e.ann.get("bwd") for e in self.eqns)
        for e in self.eqns:
            if split and e.ann.get("bwd"):
                lines.append("    # backward (derived by running the eager engine on the trace)")
                split = False
            lines.append(f"    {e.format(self.consts)}")
        outs = " ".join(_literal(self.consts[v]) if v in self.consts and
                        self.consts[v].size == 1 else v.name for v in self.outputs)
        lines.append(f"  in ({outs}) }}")
        return "\n".join(lines)

    __repr__ = __str__

    def picture(self):
        """The graph as a ``numgrad.viz`` picture (an inline SVG, no Graphviz needed)."""
        from numgrad.viz.ir_picture import ir_picture
        return ir_picture(self)

    DRAW_LIMIT = 400  # equations: beyond this a drawing is too wide to read in a notebook

    def _repr_html_(self):
        if len(self.eqns) <= self.DRAW_LIMIT:
            svg = html_box(self.picture().svg())
        else:
            svg = (f"<p>{len(self.eqns)} equations: too many to draw readably "
                   "(<code>g.picture()</code> draws them anyway).</p>")
        return (svg +
                f"<details><summary>IR listing ({len(self.eqns)} equations)</summary>"
                f"<pre>{html.escape(str(self))}</pre></details>")

    def to_dot(self) -> str:
        """Graphviz source: values as ellipses, equations as boxes."""
        out = ["digraph G {", "  rankdir=TB; node [fontname=monospace fontsize=10];"]
        for v in self.inputs:
            out.append(f'  {v.name} [label="{v!r}" shape=ellipse style=filled '
                       f'fillcolor="{"#ffd8a8" if v.requires_grad else "#e9ecef"}"];')
        for v in self.consts:
            out.append(f'  {v.name} [label="{v!r}" shape=ellipse style=dashed];')
        for i, e in enumerate(self.eqns):
            color = "#d0ebff"
            if "calls_user" in e.prim.effects:
                color = "#ffc9c9"
            elif "stop_gradient" in e.prim.effects:
                color = "#e5dbff"
            elif e.ann.get("grad") is False:
                color = "#f1f3f5"
            out.append(f'  e{i} [label="{e.name}" shape=box style=filled fillcolor="{color}"];')
            out.append(f'  {e.out.name} [label="{e.out!r}" shape=plaintext];')
            for v in e.inputs:
                out.append(f"  {v.name} -> e{i};")
            out.append(f"  e{i} -> {e.out.name};")
        for v in self.outputs:
            out.append(f"  {v.name} [peripheries=2];")
        out.append("}")
        return "\n".join(out)

    def graphviz_svg(self):
        """The graph laid out by Graphviz's ``dot`` (an SVG string). Raises RuntimeError
        saying how to get ``dot`` when it is not installed; Jupyter shows ``_repr_html_``,
        numgrad's own drawing, which needs nothing installed."""
        import shutil
        import subprocess
        if shutil.which("dot") is None:
            raise RuntimeError(
                "graphviz_svg() needs Graphviz's `dot` program, which is not on PATH: install "
                "Graphviz (apt install graphviz, brew install graphviz, or conda install "
                "graphviz). Without it, display the graph itself: Jupyter draws it with "
                "numgrad's own layout (g._repr_html_()), and g.to_dot() gives the DOT text.")
        return subprocess.run(["dot", "-Tsvg"], input=self.to_dot(), capture_output=True,
                              text=True, check=False).stdout or None

    # ------------------------------------------------------------ checking
    def verify(self):
        """Every value is defined once, before use; raise AssertionError otherwise."""
        defined = set(self.inputs) | set(self.consts)
        for e in self.eqns:
            for v in e.inputs:
                assert v in defined, f"{v!r} used before definition in {e!r}"
            assert e.out not in defined, f"{e.out!r} defined twice"
            defined.add(e.out)
        for v in self.outputs:
            assert v in defined, f"output {v!r} is not defined"
        return True

    def eval(self, *args, hooks=None):
        """Reference evaluator: run every equation's NumPy impl."""
        env = dict(self.consts)
        for v, a in zip(self.inputs, args):
            env[v] = np.asarray(a)
        for e in self.eqns:
            ins = [env[v] for v in e.inputs]
            env[e.out] = np.asarray(run_impl(e.prim, ins, e.params))
        return [env[v] for v in self.outputs]

    def users(self):
        """For each value, the equations that read it."""
        u = {}
        for e in self.eqns:
            for v in e.inputs:
                u.setdefault(v, []).append(e)
        return u

    def copy(self, eqns=None, inputs=None, outputs=None, consts=None):
        g = Graph(self.inputs if inputs is None else inputs,
                  self.eqns if eqns is None else eqns,
                  self.outputs if outputs is None else outputs,
                  self.consts if consts is None else consts, self.name)
        g._ids = self._ids
        return g

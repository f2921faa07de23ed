"""compiler.autodiff: trace a function and derive its backward with the eager engine.

Room: compiler. There is no second differentiator: the forward is traced on
``Var`` payloads, then the eager engine (``ng.autograd.grad``) runs over the
traced tensors, so the registry's vjp rules record the backward equations into
the same graph (AOTAutograd's approach). ``partition`` then splits the joint
graph into a forward that saves as little as it can and a backward that
recomputes cheap elementwise values instead of loading them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from numgrad.autograd import engine
from numgrad.autograd.graph import Node, paused_saved_hooks
import numgrad.compiler.pytree as pytree
from numgrad.compiler.compiled_node import active_backward_node, defined_cotangents
from numgrad.compiler.ir import Graph
from numgrad.compiler.random_watch import RandomWatch
from numgrad.compiler.tracer import Tracer, TracingError
from numgrad.grad_mode import set_grad_enabled
from numgrad.ops.no_derivative import Refusal
from numgrad.ops.structural import hook_p
from numgrad.ops.views import layout_standin
from numgrad.tensor import Tensor


@dataclass(frozen=True, kw_only=True)
class Effects:
    """What a call of the traced function does besides computing its outputs: the record
    ``plan.Plan.run`` applies after each compiled call, so the caller sees what eager mode
    would have left behind. Positions are those of the tensor inputs (``primals``) and of
    the outputs.

    >>> fx = Effects(writebacks=(), bumps={}, aliases={}, n_visible=1, hidden=(),
    ...              out_fn_names=("SumBackward0",), leaf_hooks=(), probed=frozenset())
    >>> fx.plain
    True
    """
    writebacks: tuple    # (primal position, Var): inputs modified in place; the forward
    #                      also returns each new value, which the call writes into the input
    bumps: dict          # primal position -> in-place ops on it: its version goes up by that
    aliases: dict        # output position -> primal position: an input returned as it is
    n_visible: int       # outputs the function returned; after them come the hidden ones:
    hidden: tuple        # (output position, primal position): the new value of an input
    #                      modified in place that requires grad; its history the caller's
    #                      tensor takes over (grad_fn, output_nr)
    out_fn_names: tuple  # per output: the grad_fn name eager mode would give it (errors)
    leaf_hooks: tuple    # (primal position, [hooks]) registered on inputs inside the function
    probed: frozenset    # backward slots whose tensor hooks run inside the backward program

    @property
    def plain(self):
        """Nothing to apply but the outputs themselves: no input written, aliased or hooked
        (the usual call, which ``Plan.run`` takes a short path for)."""
        return not (self.writebacks or self.aliases or self.leaf_hooks)


@dataclass(frozen=True, kw_only=True)
class Traced:
    graph: Graph                 # joint graph: inputs = primals + cotangents
    n_primals: int
    n_fwd_eqns: int
    outputs: list                # forward output Vars
    out_tree: object
    out_requires_grad: list
    grads: list                  # per primal: grad Var or None (only where it requires grad)
    cotangent_of: list           # output positions that receive a cotangent input
    effects: Effects             # what a call does besides its outputs (Plan.run applies it)
    captures: list = field(default_factory=list)     # tensors lifted from outside the arguments
    #                                                  (inputs after the arguments' tensors)
    device_constants: list = field(default_factory=list)  # tensors made on a device inside
    constants: list = field(default_factory=list)    # (tensor, version) baked in as constants
    grad_reads: list = field(default_factory=list)   # (owner, .grad tensor) read while tracing
    executed: object = None                          # code objects that ran (None: unknown)


def trace(fn, args, kwargs, grad_enabled, name=None, reachable=None, weak=frozenset()):
    """Trace ``fn``; ``reachable`` (id -> tensor) names the tensors outside the arguments
    that the guard scan found, which become implicit inputs when the function reads them;
    ``weak``: positions of the leaves (0-d float64 tensors) that stand for Python floats,
    traced as values that promote as Python numbers (``{weak}`` inputs)."""
    tree, leaves = pytree.flatten((tuple(args), dict(kwargs)))
    tracer = Tracer(name or getattr(fn, "__name__", "fn"))
    tracer.reachable = reachable or {}
    # Read by callers that trace a host-only primitive on the CPU and a composite elsewhere.
    # (Captured tensors count: a function of no tensor argument that reads a CUDA
    # parameter runs on CUDA.)
    tracer.on_device = any(isinstance(x, Tensor) and x.device.type != "cpu"
                           for x in (*leaves, *tracer.reachable.values()))
    # Inputs are named after the function's parameters in listings and pictures.
    hints = pytree.leaf_names(fn, args, kwargs)
    tracer.graph.reserve(h for h, x in zip(hints, leaves) if h and isinstance(x, Tensor))
    inputs, wrt, originals = [], [], []

    def enter(leaf, hint=None, is_weak=False):
        v = tracer.new_input(leaf.shape, leaf._data.dtype)
        v._ng_weak = is_weak
        # Eager mode decides view-or-copy (reshape) from the caller's layout: trace with it.
        v._ng_standin = layout_standin(leaf._data)
        v.hint = hint
        v.requires_grad = leaf.requires_grad
        t = Tensor._make(v)
        t._requires_grad = leaf.requires_grad
        if leaf.grad_fn is not None:
            # A non-leaf input stays a non-leaf inside, so in-place ops on it are allowed
            # as in eager mode; gradients are taken at this entry edge (kept in `wrt`
            # even if an in-place op moves `t` on).
            t.grad_fn = TracedInput()
        inputs.append(t)
        wrt.append(Tensor._make(v, t.grad_fn, t._vc) if t.grad_fn is not None else t)
        originals.append(v)
        return t

    new_leaves = [enter(leaf, h, i in weak) if isinstance(leaf, Tensor) else leaf
                  for i, (leaf, h) in enumerate(zip(leaves, hints))]
    tracer.lift = enter      # captured tensors enter the same way, after the arguments
    a, k = pytree.unflatten(tree, new_leaves)
    try:
        with set_grad_enabled(grad_enabled), tracer, paused_saved_hooks(), \
                RandomWatch() as watch:
            result = fn(*a, **k)
            out_tree, out_leaves = pytree.flatten(result)
            # A captured tensor returned as it is: the caller gets that very tensor back.
            out_leaves = [tracer.capture(x) if isinstance(x, Tensor)
                          and type(x._data) is np.ndarray else x for x in out_leaves]
        outs, out_req, aliases, out_names = [], [], {}, []
        for j, leaf in enumerate(out_leaves):
            if not isinstance(leaf, Tensor):
                raise TracingError(f"@ng.jit functions must return tensors (or tuples, lists and "
                                   f"dicts of them); output {j} is a {type(leaf).__name__}")
            for i, t in enumerate(inputs):
                if leaf is t:
                    aliases[j] = i
            outs.append(tracer.var_of(leaf._data))
            out_req.append(leaf.requires_grad)
            out_names.append(leaf.grad_fn.name() if leaf.grad_fn is not None else None)
        graph = tracer.graph
        n_primals = len(graph.inputs)
        writebacks = [(i, t._data) for i, t in enumerate(inputs) if t._data is not originals[i]]
        n_visible, hidden = len(out_leaves), []
        if grad_enabled:
            for i, _ in writebacks:
                t = inputs[i]
                if t.requires_grad and t.grad_fn is not None:
                    hidden.append((len(out_leaves), i))
                    out_leaves.append(t)
                    outs.append(tracer.var_of(t._data))
                    out_req.append(True)
                    out_names.append(t.grad_fn.name())
        # NOTE: an input replaced without an in-place op (``x.data = ...``) is still
        # written back, and counts as one.
        bumps = {i: inputs[i]._vc.value or 1 for i, _ in writebacks}
        leaf_hooks = []
        for i, t in enumerate(inputs):
            if t._hooks:
                leaf_hooks.append((i, list(t._hooks.values())))
                t._hooks = None  # run by the real engine on the real input, not in the trace
        n_fwd = len(graph.eqns)
        grads, cot_of, probed = [None] * n_primals, [], set()
        if grad_enabled:
            req_out = [j for j, leaf in enumerate(out_leaves) if leaf.requires_grad]
            req_in = [i for i, t in enumerate(inputs) if t.requires_grad]
            if req_out and req_in:
                probed = _probe_outputs_used_inside(graph, n_fwd, outs, out_leaves, req_out)
                cts = [Tensor._make(tracer.new_input(outs[j].shape, outs[j].dtype))
                       for j in req_out]
                _name_cotangents(graph, [c._data for c in cts])
                tracer.lift = None  # the backward adds no captures (it may not add inputs)
                with tracer, paused_saved_hooks():  # hooks may read captures: known now
                    gs = engine.grad([out_leaves[j] for j in req_out],
                                     [wrt[i] for i in req_in], grad_outputs=cts,
                                     retain_graph=True, allow_unused=True)
                for i, g in zip(req_in, gs):
                    grads[i] = None if g is None else tracer.var_of(g._data)
                gate_refusals(graph, n_fwd, [c._data for c in cts])
                cot_of = req_out
                for e in graph.eqns[n_fwd:]:  # the backward band of trace()'s listing/picture
                    e.ann["bwd"] = True
    finally:
        tracer.active = False
    _narrow_weak_inputs(graph, n_primals)
    constants = [(t, t._vc.value) for t in tracer.constants.values()]
    effects = Effects(writebacks=tuple(writebacks), bumps=bumps, aliases=aliases,
                      n_visible=n_visible, hidden=tuple(hidden), out_fn_names=tuple(out_names),
                      leaf_hooks=tuple(leaf_hooks), probed=frozenset(probed))
    return Traced(graph=graph, n_primals=n_primals, n_fwd_eqns=n_fwd, outputs=outs,
                  out_tree=out_tree, out_requires_grad=out_req, grads=grads,
                  cotangent_of=cot_of, effects=effects, captures=list(tracer.captures),
                  device_constants=list(tracer.device_constants),
                  constants=constants, grad_reads=list(tracer.grad_reads),
                  executed=watch.executed)


def _narrow_weak_inputs(graph, n_primals):
    """A traced Python float that every use casts to one dtype (a float32 model's ``x *
    lr``) enters in that dtype: the caller rounds it as eager mode's ``np.asarray(lr,
    float32)`` does (``plan.Plan``), and the kernels read one dtype (the casts left
    behind are the identity), which keeps them on the llvmlite path."""
    from numgrad.ops.dispatch import to_dtype_prim  # the cast type promotion inserts
    cast = to_dtype_prim()
    users = graph.users()
    for v in graph.inputs[:n_primals]:
        us = users.get(v)
        if not v._ng_weak or not us or v in graph.outputs:
            continue
        want = {np.dtype(e.params["dtype"]) if e.prim is cast else None for e in us}
        if len(want) == 1 and None not in want:
            v.dtype = want.pop()


def _name_cotangents(graph, cts):
    """Call the incoming gradients ``ct`` (``ct0, ct1, ...`` for several) in listings,
    unless the function has a parameter of that name."""
    names = ["ct"] if len(cts) == 1 else [f"ct{k}" for k in range(len(cts))]
    taken = {v.name for v in graph._all_vars()}
    for v, n in zip(cts, names):
        if n not in taken:
            v.hint = n
            graph.reserve([n])  # values made later (by passes) skip the name


def gate_refusals(graph, n_fwd, cts):
    """A missing derivative's rule (``ops.no_derivative``) recorded a hook that raises its
    error when the backward runs; eager mode raises only where a gradient reaches that node,
    so each such hook raises only when a cotangent it depends on came (the compiled node
    passes zeros for the others): ``x // 2, x * 3`` differentiated through ``x * 3`` alone
    runs, as eagerly."""
    slot = {v: k for k, v in enumerate(cts)}
    made = {e.out: e for e in graph.eqns[n_fwd:]}
    for e in graph.eqns[n_fwd:]:
        fn = e.params.get("fn") if e.prim is hook_p else None
        if not isinstance(fn, Refusal):
            continue
        deps, todo, seen = set(), list(e.inputs), set()
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in slot:
                deps.add(slot[v])
            elif v in made:
                todo.extend(made[v].inputs)
        fn.needed = _needed(frozenset(deps))


def _needed(deps):
    def needed():
        defined = defined_cotangents()
        return defined is None or any(defined[k] for k in deps)
    return needed


class TracedInput(Node):
    """Where a non-leaf input enters a trace: the backward stops here (the compiled node's
    own edges lead on to the input's real history)."""

    def name(self):
        return "TracedInput"

    def apply(self, grads):
        return []


class OutputHooks:
    """Runs, inside the compiled backward, the hooks and ``retain_grad`` that the caller put
    on an output the function also used itself: only there is its whole gradient (the
    caller's cotangent plus what flows back from the function's own uses) known."""

    __name__ = "output_hooks"

    def __init__(self, slot):
        self.slot = slot

    def __call__(self, g):
        node = active_backward_node()
        if node is None:
            return None
        return engine.run_tensor_hooks(node, self.slot, g, inside=True)


def _probe_outputs_used_inside(graph, n_fwd, outs, out_leaves, req_out):
    read = {v for e in graph.eqns[:n_fwd] for v in e.inputs}
    probed = set()
    for k, j in enumerate(req_out):
        t = out_leaves[j]
        if outs[j] in read and t.grad_fn is not None:
            t.register_hook(OutputHooks(k))
            probed.add(k)
    return probed


def _cheap(e):
    return e.prim.cost.cheap  # the registry's: elementwise, and the views and casts


def partition(tr: Traced, remat=True):
    """Split the joint graph: ``(forward, backward, n_saved)``.

    forward:  primals -> outputs + saved values
    backward: primals + saved + cotangents -> grads (of the primals that require grad)
    A forward value the backward needs is recomputed there when it is a cheap
    elementwise function of the primals (no reductions or matmuls on the way),
    which moves fewer bytes than storing and reloading it.
    """
    g = tr.graph
    fwd_eqns, bwd_eqns = g.eqns[:tr.n_fwd_eqns], g.eqns[tr.n_fwd_eqns:]
    primals, cts = g.inputs[:tr.n_primals], g.inputs[tr.n_primals:]
    base = set(primals) | set(g.consts)
    produced = {e.out: e for e in fwd_eqns}
    cheap = set()
    if remat:
        for e in fwd_eqns:
            if _cheap(e) and all(v in base or v in cheap for v in e.inputs):
                cheap.add(e.out)
    grad_vars = [v for v in tr.grads if v is not None]
    wanted = {v for e in bwd_eqns for v in e.inputs if v in produced}
    wanted |= {v for v in grad_vars if v in produced}
    saved = [v for v in _ordered(fwd_eqns, wanted) if v not in cheap]
    # Recompute chain: every cheap value the backward reaches, directly or through others.
    need = {v for v in wanted if v in cheap}
    for e in reversed(fwd_eqns):
        if e.out in need:
            need.update(v for v in e.inputs if v in cheap)
    recompute = [e for e in fwd_eqns if e.out in need]
    forward = g.copy(eqns=fwd_eqns, inputs=primals, outputs=list(tr.outputs) + saved)
    backward = g.copy(eqns=recompute + bwd_eqns, inputs=list(primals) + saved + list(cts),
                      outputs=grad_vars)
    return forward, backward, len(saved)


def _ordered(eqns, wanted):
    return [e.out for e in eqns if e.out in wanted]


def forward_only(tr: Traced):
    g = tr.graph
    return g.copy(eqns=g.eqns[:tr.n_fwd_eqns], inputs=g.inputs[:tr.n_primals],
                  outputs=list(tr.outputs))


def joint(tr: Traced):
    """One graph for value-and-grad: primals + cotangents -> outputs + grads."""
    g = tr.graph
    return g.copy(outputs=list(tr.outputs) + [v for v in tr.grads if v is not None])

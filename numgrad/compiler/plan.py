"""compiler.plan: ``Plan``, everything compiled for one signature of a jitted function.

Room: compiler. ``jit_function.CompiledFunction`` builds a Plan per signature: it lowers
the function (``pipeline.lower``: trace, autodiff, passes, compile) and keeps the programs
and what a call needs from the trace. ``Plan.run`` runs the forward program, then applies
the call's ``autodiff.Effects`` (write-backs into inputs modified in place and their
version bumps, outputs that are inputs, hidden outputs whose history an input takes over,
hooks registered on inputs), and records a ``compiled_node.CompiledFunctionBackward`` as
the outputs' ``grad_fn``.
"""
from __future__ import annotations

import time

import numpy as np

import numgrad.devices as devices
from numgrad.autograd import anomaly
from numgrad.autograd import engine
import numgrad.compiler.autodiff as autodiff
import numgrad.compiler.pipeline as pipeline
import numgrad.compiler.progress as progress
import numgrad.compiler.pytree as pytree
from numgrad.compiler.backends import get_backend
from numgrad.compiler.compiled_node import CompiledFunctionBackward
from numgrad.compiler.passes import optimize
from numgrad.compiler.speculate import Speculation
from numgrad.compiler.tracer import current_tracer
from numgrad.creation import zeros
from numgrad.ops.views import store_shared
from numgrad.tensor import Tensor
from numgrad.tensor import device as _device
from numgrad.viz.source import SourceText

_ndarray = np.ndarray


def _contiguous(a):
    # NOTE: np.ascontiguousarray turns a 0-d array into shape (1,); keep 0-d as 0-d.
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


class Plan:
    """Everything compiled for one signature: forward (+ backward) programs and metadata."""

    def __init__(self, owner, args, kwargs, tree, leaves, grad, generic=False,
                 weak=frozenset()):
        t0 = time.perf_counter()
        self.owner = owner
        # Non-tensor leaves only: holding the first call's tensors would keep them alive
        # as long as the plan (the double backward puts the call's tensors in their place).
        self.tree = tree
        self.leaves_template = [None if isinstance(x, Tensor) else x for x in leaves]
        self.tensor_pos = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
        # Leaf positions of the Python floats traced as 0-d inputs (the call passes floats
        # there; ``run`` makes them 0-d arrays of their input's dtype: ``_run_floats``).
        self.weak = weak
        name = getattr(owner.fn, "__name__", "fn")
        self.opts = owner.options.but(name=name, generic=generic)  # generic: runtime extents
        # (the floats of a double backward's call come as 0-d host tensors: on no device)
        tensors = [leaves[i] for i in self.tensor_pos
                   if i not in weak and i not in owner._weak_leaves]
        chosen = []

        def backend_for(captures):  # the floats are on no device: the tensors choose
            chosen.append(_backend_for(owner, tensors + list(captures)))
            return get_backend(chosen[-1])

        low = pipeline.lower(owner.fn, args, kwargs, grad_mode=grad, remat=owner.remat,
                             options=self.opts, backend_for=backend_for,
                             weak=weak | owner._weak_leaves)
        owner.stats.traces += 1
        if weak:
            # Each float enters in its input's dtype (float64, or the one every use casts
            # it to: autodiff._narrow_weak_inputs), rounded here as eager mode rounds it.
            ins = low.traced.graph.inputs
            self._float_dtypes = [(i, ins[k].dtype) for k, i in enumerate(self.tensor_pos)
                                  if i in weak]
            # On CUDA the floats stay host numbers: the kernels take them by value
            # (backends.cuda.renderer.by_value). Uploaded only where they alone would say
            # the plan runs on a device other than cuda:0 (no tensor argument says it).
            self._scalar_device = None
            if chosen[-1] == "cuda" and not any(
                    t.device.type == "cuda" for t in tensors + list(low.traced.captures)):
                want = devices.target(owner.device or "cuda")
                self._scalar_device = want if want.index else None
            self.run = self._run_floats
        self._adopt(low)
        self._count(owner.stats)
        # Compiles the programs make later are shown and counted as this plan's.
        for p in self.programs:
            p.late = self.late
        if self.spec is not None:
            self.spec.late = self.late
        if owner.verbose:
            print(f"[numgrad.jit] {name}: traced and compiled {len(self.programs)} "
                  f"program(s), {owner.stats.kernels} kernel(s) in "
                  f"{time.perf_counter() - t0:.2f}s")

    def _adopt(self, low):
        """What a call needs from the lowered programs: which inputs and outputs the
        backward reads, and whether ``run`` may take its one-output path."""
        tr = self.traced = low.traced
        fx = self.effects = tr.effects
        self.guard = low.guard
        self.captured = tr.captures
        self.out_tree = tr.out_tree
        self.n_out = len(tr.outputs)
        self.grad = low.grad
        self.fwd_graph, self.bwd_graph, self.n_saved = low.fwd_graph, low.bwd_graph, low.n_saved
        self.fwd, self.bwd = low.fwd, low.bwd
        self.check_inputs, self.check_outputs, self.saves = [], [], False
        if self.grad:
            prim_set = set(tr.graph.inputs[:tr.n_primals])
            read = {v for e in self.bwd_graph.eqns for v in e.inputs}
            self.check_inputs = [i for i, v in enumerate(tr.graph.inputs[:tr.n_primals])
                                 if v in read or v in self.bwd_graph.outputs]
            wanted = {v for e in tr.graph.eqns[tr.n_fwd_eqns:] for v in e.inputs}
            self.check_outputs = [j for j, v in enumerate(tr.outputs)
                                  if v in wanted and v not in prim_set]
            self.grad_pos = [i for i, v in enumerate(tr.grads) if v is not None]
            self.cot_vars = [tr.outputs[j] for j in tr.cotangent_of]
            # A backward that reads no input and no saved value frees nothing: a second
            # backward through it works, as through eager `b + 1` (AddBackward saves nothing).
            self.saves = bool(low.n_saved or self.check_inputs or self.check_outputs
                              or _saves_params(tr))
        self.programs = [self.fwd, self.bwd] if self.grad else [self.fwd]
        self._joint = None
        self._bwd_fn = None
        # Per output: the input it is (if the function returned an input) and its slot
        # among the backward node's outputs (if it receives a cotangent).
        slot = {j: k for k, j in enumerate(tr.cotangent_of)}
        self._out_alias = [fx.aliases.get(j) for j in range(self.n_out)]
        self._out_slot = [slot.get(j) for j in range(self.n_out)]
        # Slot of the single output when run() may take its short path, else None.
        self._one_output = None
        if (self.out_tree is pytree.LEAF and self.n_out == 1 and fx.plain
                and not self.check_outputs and (not self.grad or self._out_slot[0] is not None)):
            self._one_output = self._out_slot[0] if self.grad else 0
        # loss = f(x); loss.backward(): the call may compute the gradients (speculate.py).
        self.spec = (Speculation.maybe(tr, self.owner.remat, low.backend, self.opts)
                     if self.grad and self._one_output is not None else None)

    def _count(self, stats):
        stats.compiles += self.owner._plans.new_code(self.programs)
        stats.kernels = sum(p.kernels for p in self.programs)
        stats.disk_hits += sum(1 for p in self.programs if getattr(p, "disk_hit", False))

    def guard_ok(self):
        return self.guard is None or self.guard()

    def late(self, what, build, program=None):
        """``build()``, a compile one of this plan's programs makes after the plan was built
        (its multi-threaded tier at the second call; the one-pass program of the habit
        path, which ``build`` returns): under the progress line, naming the function and
        ``what``, and counted in the owner's ``stats`` (``compiles`` if it compiled code
        this function had not used)."""
        stats = self.owner.stats
        before = getattr(program, "modules", None)
        t0 = time.perf_counter()
        with progress.compiling(self.opts.name, what):
            out = build()
        stats.compile_seconds += time.perf_counter() - t0
        if program is None:           # a new program: new code unless its modules are known
            stats.compiles += self.owner._plans.new_code([out])
        elif program.modules != before:   # the tier moved to modules of its own
            stats.compiles += self.owner._plans.new_code([program])
        return out

    @property
    def joint_graph(self):
        """The forward and derived backward in one graph (for ``trace``), built when asked:
        the programs are compiled from the partitioned graphs, not from this one."""
        if self._joint is None:
            self._joint = optimize(autodiff.joint(self.traced)) if self.grad else self.fwd_graph
            self._joint.stages = self.stage_labels()
        return self._joint

    def stage_labels(self):
        """``{value: "forward kernel 0"}`` for the values each fused kernel computes, so
        the trace's picture can box them (a value recomputed later keeps its first box)."""
        labels = {}
        for role, prog in zip(("forward", "backward"), self.programs):
            for kind, st in getattr(prog, "steps", ()):
                if kind == "kernel":
                    for e in st.eqns:
                        labels.setdefault(e.out, f"{role} kernel {st.index}")
        return labels

    def schedule(self):
        import numgrad.compiler.schedule as _schedule
        graphs = (self.fwd_graph, self.bwd_graph) if self.grad else (self.fwd_graph,)
        out = []
        for role, prog, graph in zip(("fwd", "bwd"), self.programs, graphs):
            # The CPU backend keeps the schedule it rendered; others get one built here
            # (it does not depend on the backend).
            s = getattr(prog, "schedule", None)
            out.append(s if s is not None else _schedule.build(graph, self.opts.but(role=role)))
        return _schedule.Schedules(out)

    def source(self):
        roles = ("forward", "backward") if self.grad else ("forward",)
        return SourceText([(f"{r} program ({p.kernels} kernel{'s' if p.kernels != 1 else ''})",
                            p.source) for r, p in zip(roles, self.programs)])

    def _run_floats(self, leaves):
        """``run`` for a plan with traced floats: each becomes a 0-d input of its dtype (a
        host array, which CUDA kernels take by value; uploaded only to run the plan on a
        device other than cuda:0 that no tensor argument names)."""
        leaves = list(leaves)
        dev = self._scalar_device
        for i, dtype in self._float_dtypes:
            a = np.array(leaves[i], dtype)
            leaves[i] = Tensor._make(a if dev is None else devices.upload(a, dev))
        return Plan.run(self, leaves)

    def run(self, leaves):
        if self._one_output is not None:
            # The usual shape of a call: tensors in, one tensor out, nothing written back.
            tensors = [leaves[i] for i in self.tensor_pos]
            if self.captured:
                tensors += self.captured
            arrays = [_contiguous(t._data) for t in tensors]
            spec = self.spec
            if spec is not None and spec.on:
                res, grads = spec.run(arrays)
            else:
                res, grads = self.fwd(arrays), None
            if not self.grad:
                return Tensor._make(res[0])
            node = CompiledFunctionBackward(self, tensors, arrays, res[1:1 + self.n_saved])
            node._spec = grads
            if anomaly.enabled:
                anomaly.record(node)
            return Tensor._make(res[0], node, None, self._one_output)
        tensors = [leaves[i] for i in self.tensor_pos] + self.captured
        arrays = [_contiguous(t._data) for t in tensors]
        res = self.fwd(arrays)
        n_out, n_saved = self.n_out, self.n_saved
        if self.effects.writebacks:
            self._write_back(tensors, arrays, res[n_out + n_saved:])
        node = None
        if self.grad:  # (after the write-backs: it reads the versions they left)
            node = CompiledFunctionBackward(self, tensors, arrays, res[n_out:n_out + n_saved])
        return self._outputs(tensors, res[:n_out], node)

    def _write_back(self, tensors, arrays, values):
        """The effects' write-backs: in-place ops on inputs write back now, as eager wrote
        them during the call; the backward keeps the values it was computed from, and the
        versions go up by the in-place ops each input saw."""
        bumps = self.effects.bumps
        for (i, _), arr in zip(self.effects.writebacks, values):
            t = tensors[i]
            if self.grad and arrays[i] is t._data:
                arrays[i] = arrays[i].copy()
            if type(t._data) is _ndarray:
                t._data[...] = arr
            else:  # a device payload: into its memory, its base's and its views' (on CUDA
                store_shared(t, arr)  # those are copies, but reshapes), as the CPU shares
            t._vc.value += bumps[i]

    def _outputs(self, tensors, outs, node):
        """The call's result from the output arrays, with the rest of the effects: outputs
        that are inputs, inputs that take over the history of their in-place result (the
        hidden outputs), the outputs the backward must find unchanged, the inputs' hooks."""
        fx = self.effects
        out_tensors = []
        for arr, alias, k in zip(outs[:fx.n_visible], self._out_alias, self._out_slot):
            if alias is not None:
                out_tensors.append(tensors[alias])
            elif node is not None and k is not None:
                out_tensors.append(Tensor._make(arr, node, None, k))
            else:
                out_tensors.append(Tensor._make(arr))
        for j, i in fx.hidden:
            # The caller's tensor now holds the in-place result: it takes over that history.
            t = tensors[i]
            t.grad_fn, t._output_nr, t._requires_grad = node, self._out_slot[j], True
            out_tensors.append(t)
        if node is not None and self.check_outputs:
            node.watch_outputs([(out_tensors[j], fx.out_fn_names[j]) for j in self.check_outputs])
        for i, hooks in fx.leaf_hooks:
            for h in hooks:
                tensors[i].register_hook(h)
        if self.out_tree is pytree.LEAF:
            return out_tensors[0]
        return pytree.unflatten(self.out_tree, out_tensors[:fx.n_visible])

    # ------------------------------------------------- create_graph support
    def differentiable_backward(self, tensors, grads):
        """The backward as a compiled, differentiable function (double backward)."""
        if self._bwd_fn is None:
            self._bwd_fn = self.owner.sibling(self._make_bwd_fn())
            # The traced floats come in as 0-d tensors: they still promote as numbers.
            self._bwd_fn._weak_leaves = frozenset(
                k for k, i in enumerate(self.tensor_pos)
                if i in self.weak or i in self.owner._weak_leaves)
        cts = []
        for k, j in enumerate(self.traced.cotangent_of):
            g = grads[k]
            if g is None:
                shape = self.traced.outputs[j].shape
                g = zeros(shape, dtype=self.traced.outputs[j].dtype, device=tensors[0].device)
            cts.append(g)
        return self._bwd_fn(*tensors, *cts)

    def _make_bwd_fn(self):
        fn, tree, template = self.owner.fn, self.tree, list(self.leaves_template)
        pos, n_args = self.tensor_pos, len(self.tensor_pos)
        n_t = n_args + len(self.captured)
        captured = list(self.captured)
        cot_of, grad_pos, hidden = self.traced.cotangent_of, self.grad_pos, self.effects.hidden

        def backward_of(*ts_and_cts):
            ts, cts = ts_and_cts[:n_t], ts_and_cts[n_t:]
            # The captured tensors come in as arguments: fn, which reads them from outside,
            # must see these stand-ins, so that the grads w.r.t. them are taken.
            tracer = current_tracer()
            if tracer is not None:
                for c, t in zip(captured, ts[n_args:]):
                    tracer.alias_capture(c, t)
            # Gradients are taken where the inputs enter, even if fn modifies them in place.
            wrt = [Tensor._make(t._data, t.grad_fn, t._vc, t._output_nr)
                   if t.grad_fn is not None else t for t in ts]
            leaves = list(template)
            for p, t in zip(pos, ts):
                leaves[p] = t
            a, k = pytree.unflatten(tree, leaves)
            _, out_leaves = pytree.flatten(fn(*a, **k))
            out_leaves = list(out_leaves) + [ts[i] for _, i in hidden]
            return tuple(engine.grad([out_leaves[j] for j in cot_of], [wrt[i] for i in grad_pos],
                                     grad_outputs=list(cts), create_graph=True,
                                     materialize_grads=True))
        backward_of.__name__ = f"{getattr(fn, '__name__', 'fn')}_backward"
        return backward_of


def _backend_for(owner, tensors):
    """The backend of a plan: the function's own unless its tensors live on a CUDA device
    (then "cuda"); tensors on two devices raise PyTorch's error naming both."""
    devices = []
    for t in tensors:
        d = t.device
        if d not in devices:
            devices.append(d)
    want = owner.device
    if want is not None and str(want) != "cpu":
        want = _device(want)
        if want.index is None:
            want = _device("cuda", 0)
        if want not in devices:
            devices.insert(0, want)
    if len(devices) > 1:
        from numgrad.cuda.eager import mismatch
        cuda = [d for d in devices if d.type == "cuda"]
        other = [d for d in devices if d is not cuda[0]]
        raise mismatch(cuda[0], other[0])
    if devices and devices[0].type == "cuda":
        if owner.backend not in ("cpu", "cuda"):
            raise RuntimeError(f"ng.jit(backend={owner.backend!r}) runs on the CPU only; call "
                               "it with CPU tensors, or leave backend unset for CUDA tensors")
        from numgrad.cuda import device as cuda_device
        cuda_device.check(devices[0].index or 0)
        return "cuda"
    return owner.backend


def _saves_params(tr):
    # Eager nodes of these equations keep index arrays as saved tensors (PyTorch's
    # IndexBackward0 / CopySlices do): a second backward must fail there too.
    return any(e.prim.saves is not None and e.prim.saves(e.params)
               for e in tr.graph.eqns[:tr.n_fwd_eqns] if e.ann.get("grad"))


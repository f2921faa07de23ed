"""backends.cpu.program: runs a compiled graph's steps (fused kernels and NumPy steps).

Room: compiler. ``backends.cpu.renderer`` emits and compiles the kernels; a ``Program`` holds
them with the equations that run on NumPy between them, and is what a plan calls
with its input arrays. Kernels see 0-d values as 1-element arrays (``cshape``).
"""
from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from numgrad.compiler.schedule import cshape  # noqa: F401 (cpu.py imports it from here)
from numgrad.ops.dispatch import run_impl
from numgrad.profiler import recorder

_TIER_LOCK = threading.Lock()


def first_line(exc):
    """The first line of an exception's message, for a one-line warning."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Program:
    """Runs the steps of one compiled graph; called with the input arrays."""

    def __init__(self, graph, steps, module, source, disk_hit, upgrade=None):
        self.graph = graph
        self.steps = steps
        self.source = source
        self.kernels = sum(1 for k, _ in steps if k == "kernel")
        self.disk_hit = disk_hit
        self.module = module
        self._inputs = graph.inputs
        self._outputs = [(v, v.shape) for v in graph.outputs]
        # Kernels are compiled for writeable C arrays; a constant may be a read-only
        # array (the engine's cached ones), so copy those once here.
        self._consts = [(v, _ready(np.ascontiguousarray(a.reshape(cshape(a.shape)))))
                        for v, a in graph.consts.items()]
        # upgrade(program): the backend's switch to its multi-threaded kernels, made at
        # the second call (backends.cpu.build.prange_tier, backends.cpu.llvm.kernel.threads_tier).
        self._upgrade = upgrade
        self._calls = 0
        # late(what, build, program) -> build(): how a compile after the plan was built (the
        # tier) is shown and counted; set by the plan that owns this program (plan.Plan).
        self.late = None
        self.modules = ()  # names of the kernel modules it runs (set by backends.cpu.renderer)
        self._bind()

    def _bind(self):
        steps, graph = self.steps, self.graph
        self._drops = _last_uses(steps, graph.outputs)
        # Fast path: one kernel whose inputs are exactly graph inputs and consts.
        self._single = None
        self._direct = None
        if len(steps) == 1 and steps[0][0] == "kernel":
            st = steps[0][1]
            pos = {v: i for i, v in enumerate(graph.inputs)}
            cmap = dict(self._consts)
            plan = []
            for v in st.inputs:
                plan.append(("in", pos[v], v.ndim == 0) if v in pos else ("const", cmap[v], 0))
            outpos = {v: i for i, v in enumerate(st.outputs)}
            if all(v in outpos for v in graph.outputs):
                self._single = (st.fn, plan, [(outpos[v], v.shape) for v in graph.outputs])
                # Fastest case: the kernel takes the graph's inputs in order (no 0-d, no
                # consts but a generic plan's shape constants, which the schedule puts
                # first and which are bound here, once) and returns exactly its outputs,
                # none 0-d.
                n = len(st.inputs) - len(graph.inputs)
                if (n >= 0 and list(st.inputs[n:]) == list(graph.inputs)
                        and all(v in cmap for v in st.inputs[:n])
                        and all(v.ndim > 0 for v in graph.inputs)
                        and list(st.outputs) == list(graph.outputs)
                        and all(v.ndim > 0 for v in graph.outputs)):
                    self._direct = (functools.partial(st.fn, *[cmap[v] for v in st.inputs[:n]])
                                    if n else st.fn)

    @property
    def tier(self):
        """"serial" while the prange tier is still to be compiled, else "final"."""
        return "serial" if self._upgrade is not None else "final"

    def _tier_up(self):
        self._calls += 1
        if self._calls < 2:
            return
        with _TIER_LOCK:
            if self._upgrade is None:
                return
            upgrade, self._upgrade = self._upgrade, None
            try:
                late_compile(self, "multi-threaded tier", lambda: upgrade(self))
            except Exception as exc:  # keep the serial kernels, which work
                warnings.warn(f"numgrad could not compile the multi-threaded kernels "
                              f"({first_line(exc)}); "
                              "staying with the serial ones", RuntimeWarning, stacklevel=4)
                return
            self._bind()

    def __call__(self, arrays):
        if self._upgrade is not None:
            self._tier_up()
        if recorder.active is not None:
            return self._run_profiled(arrays)
        if self._direct is not None:
            for a in arrays:
                if not a.flags.c_contiguous or not a.flags.writeable:
                    break
            else:
                return list(self._direct(*arrays))
        if self._single is not None:
            fn, plan, outs = self._single
            args = [(_canon(arrays[a]) if b else _ready(arrays[a])) if k == "in" else a
                    for k, a, b in plan]
            res = fn(*args)
            return [res[i] if shape else res[i].reshape(shape) for i, shape in outs]
        return self._run_steps(arrays)

    def _run_profiled(self, arrays):
        """The general path, each step an event in ng.profiler's record."""
        t0 = recorder.now()
        try:
            return self._run_steps(arrays, profiled=True)
        finally:
            recorder.add(f"jit::program ({self.kernels} kernel"
                         f"{'s' if self.kernels != 1 else ''})", "jit", t0)

    def _run_steps(self, arrays, profiled=False):
        env = dict(self._consts)
        for v, a in zip(self._inputs, arrays):
            env[v] = a
        for (kind, obj), drops in zip(self.steps, self._drops):
            if profiled:
                t0 = recorder.now()
            if kind == "kernel":
                res = obj.fn(*[_canon(env[v]) if v.ndim == 0 else _ready(env[v])
                               for v in obj.inputs])
                for v, r in zip(obj.outputs, res):
                    env[v] = r
            else:
                # NumPy steps keep their results as NumPy returns them (a transpose stays a
                # view for the matmul after it); kernels get contiguous copies if needed.
                e = obj
                ins = [env[v].reshape(v.shape) for v in e.inputs]
                env[e.out] = np.asarray(run_impl(e.prim, ins, e.params))
            if profiled:
                recorder.add(_step_name(kind, obj), "kernel", t0)
            for v in drops:  # past its last use: its memory can go (a backward that
                env.pop(v, None)  # recomputes a checkpointed region holds one block at once)
        return [_ready(env[v]).reshape(shape) if not shape else _shaped(env[v], shape)
                for v, shape in self._outputs]


def _last_uses(steps, outputs):
    """Per step, the values no later step reads and the program does not return."""
    last = {}
    for k, (kind, obj) in enumerate(steps):
        for v in obj.inputs:
            last[v] = k
        for v in (obj.outputs if kind == "kernel" else (obj.out,)):
            last.setdefault(v, k)  # made and never read: dropped at once
    keep = set(outputs)
    drops = [[] for _ in steps]
    for v, k in last.items():
        if v not in keep:
            drops[k].append(v)
    return drops


def _step_name(kind, obj):
    if kind == "kernel":
        return "kernel " + getattr(obj.fn, "__name__", "?")
    return "numgrad::" + obj.prim.name   # a NumPy step between kernels


def late_compile(program, what, build):
    """``build()``, a compile ``program`` makes after its plan was built, through the
    owner's hook (``program.late``: progress line, ``stats``), or under a progress line of
    its own for a program no plan owns."""
    if program.late is not None:
        return program.late(what, build, program)
    import numgrad.compiler.progress as progress
    with progress.compiling(program.graph.name, what):
        return build()


def _shaped(a, shape):
    # Not a view when the shape is right already: the engine then takes a gradient output
    # as ``.grad`` without copying it (it copies a view, whose base another may hold).
    return a if a.shape == shape else a.reshape(shape)


def _ready(a):
    if not a.flags.c_contiguous or not a.flags.writeable:
        a = np.array(a, order="C")
    return a


def _canon(a):
    return _ready(a).reshape(1)

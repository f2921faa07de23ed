"""compiler.speculate: the PyTorch habit ``loss = f(x); loss.backward()`` in one pass.

Room: compiler. A plan whose function returns one scalar that requires grad usually
sees its backward seeded with 1 (``loss.backward()``). Once a backward of the plan has
been seeded with exactly 1, its later calls run the joint program instead of the
forward one: outputs, the gradients for a cotangent of 1 and the values the ordinary
backward would need, in one fused pass over the data (what ``jit(value_and_grad)``
runs). When that call's backward comes with a cotangent of 1, the node hands these
gradients out (they are the backward program's bits for that cotangent: the same
equations on the same values); with any other cotangent, a second backward
(``retain_graph``), or ``create_graph``, it runs the ordinary backward as before.

On a device (CUDA) the cotangent is never read: reading it would wait for the device.
The backward the engine seeds itself (``loss.backward()``: ``gradient=None`` on a
scalar) gets a seed made once per shape, dtype and device
(``autograd.engine.is_implicit_seed``), which tells it apart from any other cotangent
by identity; an explicit ``gradient=`` takes the ordinary backward there. The joint
program's own seed is a device array made once per plan, so a call allocates and
copies nothing more than the forward would.

Hooks inside the function (they must run during the backward, not the call), random
ops and output hooks keep the ordinary path. A plan whose speculative calls are not
followed by their backward (evaluation with grad enabled) stops speculating, so the
gradients it computed for nothing cost at most ``MAX_PENDING`` calls. (What it saves:
docs/design-notes.md, "Speculation".)
"""
from __future__ import annotations

import threading

import numpy as np

import numgrad.config as config
from numgrad.autograd.engine import is_implicit_seed
import numgrad.compiler.pipeline as pipeline

# Speculative calls whose backward has not come yet; over this the plan stops.
MAX_PENDING = 4
# NUMGRAD_SPECULATE=0 turns the one-pass program off (read at each plan).


class Speculation:
    """Per plan: the joint program (built when first wanted) and when to use it."""

    __slots__ = ("_build", "_lock", "_seed", "ct_dtype", "ct_shape", "joint", "late", "n_grads",
                 "off", "on", "pending")

    def __init__(self, build, n_grads, ct_shape, ct_dtype):
        self._build = build
        self._lock = threading.Lock()
        self.joint = None
        self.n_grads = n_grads
        self.on = False        # the next calls run the joint program
        self.off = False       # given up for this plan
        self.pending = 0
        self.late = None       # the owning plan's hook for compiles after its build (runtime)
        self.ct_dtype = np.dtype(ct_dtype)
        self.ct_shape = tuple(ct_shape)
        self._seed = None  # the joint program's cotangent, 1, where its inputs live

    @classmethod
    def maybe(cls, tr, remat, backend, opts):
        """A Speculation for an eligible trace (one scalar output with a cotangent, no
        user hooks or random ops inside), else None."""
        enabled = config.get("NUMGRAD_SPECULATE")
        if not enabled or len(tr.cotangent_of) != 1 or tr.effects.probed or len(tr.outputs) != 1:
            return None
        ct = tr.graph.inputs[tr.n_primals]
        if int(np.prod(ct.shape)) != 1:
            return None
        for e in tr.graph.eqns:
            if e.prim.random or "calls_user" in e.prim.effects or "checkpoint" in e.ann:
                return None  # (a checkpointed region is recomputed in the backward only)
        grads = [v for v in tr.grads if v is not None]

        def build():
            import numgrad.compiler.autodiff as autodiff
            from numgrad.compiler.passes import optimize
            fwd, _, n_saved = autodiff.partition(tr, remat=remat)
            saved = fwd.outputs[len(tr.outputs):len(tr.outputs) + n_saved]
            graph = optimize(tr.graph.copy(outputs=list(tr.outputs) + grads + list(saved)))
            # Its final tier at once: the plan's first call already ran the serial one,
            # and a serial joint tier would cost one more compile on the way. A
            # shape-generic plan keeps "auto": its loops decide at run time, and where
            # none would thread at its shapes the serial tier is final (a prange compile
            # for nothing costs more than the rest of the program).
            par = True if opts.parallel == "auto" and not opts.generic else opts.parallel
            return pipeline.compile_graph(graph, backend, opts.but(role="joint", parallel=par))
        return cls(build, len(grads), ct.shape, ct.dtype)

    def is_one(self, g):
        """Is the cotangent payload ``g`` exactly 1 in the backward's dtype? A host array
        is read; a device payload never is (that would wait for the device): it is 1 when
        it is the seed ``backward()`` made itself."""
        if g.dtype != self.ct_dtype:
            return False
        if type(g) is np.ndarray:
            return g.size == 1 and g.item() == 1
        return is_implicit_seed(g)

    def _make_seed(self, arrays):
        one = np.ones(self.ct_shape, self.ct_dtype)  # kernels never write an input
        for a in arrays:
            device = getattr(a, "_ng_device", None)
            if device is not None:  # once per plan: a call neither allocates nor copies it
                from numgrad.devices import upload
                return upload(one, device)
        return one

    def run(self, arrays):
        """``(outputs + saved, grads)`` from the joint program."""
        if self.joint is None:
            # One compile however many threads want it at once: the others wait here for
            # it, and only the thread that compiles adds it to the plan's stats.
            with self._lock:
                if self.joint is None:
                    self.joint = (self._build() if self.late is None else
                                  self.late("forward and backward in one pass", self._build))
        self.pending += 1
        if self.pending > MAX_PENDING:  # calls without their backward: stop after this one
            self.on, self.off = False, True
        seed = self._seed
        if seed is None:
            seed = self._seed = self._make_seed(arrays)
        res = self.joint(list(arrays) + [seed])
        k = self.n_grads
        return [res[0]] + list(res[1 + k:]), list(res[1:1 + k])

    def saw_backward(self, g):
        """An ordinary backward of this plan ran with cotangent array ``g``."""
        if not self.off and self.is_one(g):
            self.on = True

"""utils.checkpoint: trade compute for memory (``torch.utils.checkpoint``).

Room: utils. ``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping none of the
tensors its backward nodes save (a ``saved_tensors_hooks`` context packs each as its index);
the first time the backward unpacks one, ``fn`` runs again, with the random state it saw
the first time, and the recomputed tensors are handed out by index. Under ``@ng.jit`` that
recomputation happens while the backward is traced, so its equations land in the plan's
backward: the region's values are recomputed inside the backward kernels instead of being
saved by the forward (the partitioner sees nothing of the region to save).
"""
from __future__ import annotations

import contextlib
import copy
import warnings

import numgrad.creation as creation
from numgrad.autograd import engine
from numgrad.autograd.function import Function
from numgrad.autograd.graph import trace_time_hooks
from numgrad.grad_mode import enable_grad, is_grad_enabled, no_grad
from numgrad.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]

_WARN_CHECKPOINT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
_WARN_SEQUENTIAL = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
_REENTRANT_GRAD = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument.")


def noop_context_fn():
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, saving nothing for the backward: the values its
    backward needs are recomputed then (``torch.utils.checkpoint.checkpoint``).
    ``preserve_rng_state`` (default True) replays the random draws the forward made.

    >>> lin = ng.nn.Linear(4, 4)
    >>> x = ng.ones(2, 4, requires_grad=True)
    >>> y = checkpoint(lambda t: lin(t).tanh(), x, use_reentrant=False)
    >>> y.sum().backward()
    """
    if use_reentrant is None:
        warnings.warn(_WARN_CHECKPOINT, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if not _traced(args):
            return _Reentrant.apply(function, preserve, *args)
        # Under @ng.jit the inner backward cannot run (it would write .grad): the
        # non-reentrant form gives the same gradients.
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    return _non_reentrant(function, args, kwargs, preserve, context_fn,
                          determinism_check == "default")


def _traced(args):
    import numgrad.tracing_hook as tracing_hook
    return any(isinstance(a, Tensor) and not tracing_hook.concrete(a._data) for a in args)


class _RngState:
    """The random generator as the forward found it, to replay its draws."""

    def __init__(self, preserve):
        self.state = copy.deepcopy(creation._rng) if preserve else None

    @contextlib.contextmanager
    def replay(self):
        if self.state is None:
            yield
            return
        saved = creation._rng
        creation._rng = copy.deepcopy(self.state)
        try:
            yield
        finally:
            creation._rng = saved


def _non_reentrant(function, args, kwargs, preserve, context_fn, check):
    rng = _RngState(preserve)
    shapes = []          # (shape, dtype) of each tensor the forward saved, by index
    recomputed = []      # what the recomputation saved, by index; emptied as it is used

    def pack(t):
        shapes.append((t.shape, t.dtype))
        return len(shapes) - 1

    def unpack(i):
        if i >= len(recomputed) or recomputed[i] is None:
            recompute()
        t = recomputed[i]
        recomputed[i] = None  # hand each out once: memory goes as the backward goes
        return t

    def recompute():
        got = []

        def keep(t):
            # Detached (as PyTorch): the recomputed graph itself is dropped at once, and
            # no cycle through its nodes keeps the recomputed values alive.
            got.append(t.detach())
            return None

        _, recompute_ctx = context_fn()
        with rng.replay(), enable_grad(), recompute_ctx, \
                trace_time_hooks(keep, _never_unpacked), _annotated():
            function(*args, **kwargs)
        if check:
            _check_same(shapes, got)
        recomputed[:] = got

    forward_ctx, _ = context_fn()
    with forward_ctx, trace_time_hooks(pack, unpack):
        return function(*args, **kwargs)


@contextlib.contextmanager
def _annotated():
    """Under ``@ng.jit``: mark the equations the recomputation traces ``{checkpoint}``, so
    the plan keeps them in its backward (no joint forward-and-backward program, which
    would merge them with the forward's and keep every value alive)."""
    from numgrad.compiler.tracer import current_tracer
    tracer = current_tracer()
    start = len(tracer.graph.eqns) if tracer is not None else 0
    try:
        yield
    finally:
        if tracer is not None:
            for e in tracer.graph.eqns[start:]:
                e.ann["checkpoint"] = True


def _never_unpacked(_):
    raise RuntimeError("torch.utils.checkpoint: the recomputation's own graph was used")


def _check_same(shapes, got):
    if len(got) < len(shapes):
        raise RuntimeError(
            "torch.utils.checkpoint: A different number of tensors was saved during the original "
            "forward and recomputation.\n"
            f"Number of tensors saved during forward: {len(shapes)}\n"
            f"Number of tensors saved during recomputation: {len(got)}")
    bad = [i for i, (s, t) in enumerate(zip(shapes, got)) if s != (t.shape, t.dtype)]
    if bad:
        lines = "".join(f"tensor at position {i}:\nsaved metadata: {shapes[i]}\n"
                        f"recomputed metadata: {(got[i].shape, got[i].dtype)}\n" for i in bad)
        raise RuntimeError("torch.utils.checkpoint: Recomputed values for the following tensors "
                           "have different metadata than during the forward pass.\n" + lines)


class _Reentrant(Function):
    """``use_reentrant=True``: the forward runs under no_grad; the backward recomputes it
    with grad on and runs an inner backward from its outputs."""

    @staticmethod
    def forward(ctx, function, preserve, *args):
        ctx.function = function
        ctx.rng = _RngState(preserve)
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[a if isinstance(a, Tensor) else None for a in args])
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")
        with no_grad():
            return function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not engine.is_checkpoint_valid():
            raise RuntimeError(_REENTRANT_GRAD)
        inputs = [a if t is None else t.detach().requires_grad_(t.requires_grad)
                  for a, t in zip(ctx.inputs, ctx.saved_tensors)]
        with ctx.rng.replay(), enable_grad():
            outputs = ctx.function(*inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            engine.backward([o for o, _ in pairs], [g for _, g in pairs],
                            create_graph=is_grad_enabled())
        return (None, None) + tuple(t.grad if isinstance(t, Tensor) else None for t in inputs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list or ``nn.Sequential``) in ``segments`` pieces, each but the
    last checkpointed (``torch.utils.checkpoint.checkpoint_sequential``).

    >>> net = ng.nn.Sequential(ng.nn.Linear(4, 4), ng.nn.Tanh(), ng.nn.Linear(4, 1))
    >>> y = checkpoint_sequential(net, 2, ng.ones(3, 4), use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(_WARN_SEQUENTIAL, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from numgrad.nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)

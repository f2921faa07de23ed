"""autograd.engine: runs the backward graph (``backward`` and ``grad``).

Room: autograd. Imports tensor, grad_mode, autograd.graph, and ops (for
gradient accumulation, which must itself be differentiable under
``create_graph``).

The engine walks from the roots, counts each node's incoming edges, and runs a
node once all of them have delivered (Kahn's algorithm; among ready nodes the
most recently created runs first, as in PyTorch). Before a gradient is used it
passes through the tensor hooks registered for it; ``retain_grad`` and
``autograd.grad``'s captures see it after the hooks.
"""
from __future__ import annotations

import heapq
import sys

import numpy as np

import numgrad.ops as _ops
import numgrad.tracing_hook as tracing_hook

import numgrad.autograd.anomaly as anomaly
import numgrad.autograd.node_hooks as node_hooks
from numgrad.profiler import recorder
from numgrad.autograd.graph import AccumulateGrad, edge_of
from numgrad.ops import views as _views
from numgrad.grad_mode import is_grad_enabled, no_grad, _set_enabled
from numgrad.tensor import Tensor



def _observed(node, buf):
    """``node.apply(buf)`` with what watches the backward on: anomaly mode's checks, and the
    profiler's timing (``autograd::engine::evaluate_function: MulBackward0``, PyTorch's
    name for it)."""
    t0 = recorder.now()
    try:
        return node.apply(buf) if not anomaly.enabled else anomaly.run(node, buf)
    finally:
        recorder.add(f"autograd::engine::evaluate_function: {node.name()}", "backward", t0)

def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, create_graph):
    grads = []
    for i, out in enumerate(outputs):
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if out._requires_grad and out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = Tensor._make(_implicit_seed(out))
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"gradient must be a Tensor or None, not {type(g).__name__}")
            if g.shape != out.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{tuple(g.shape)} and output[{i}] has a shape of "
                                   f"{tuple(out.shape)}.")  # API.md spells them as tuples
            if out.dtype.is_floating_point and g.dtype is not out.dtype:
                if not g.dtype.is_floating_point:
                    raise RuntimeError(f"For complex Tensors, both grad_output and output are "
                                       f"required to have the same dtype. Mismatch in dtype: "
                                       f"grad_output[{i}] has a dtype of {g.dtype} and "
                                       f"output[{i}] has a dtype of {out.dtype}.")
            g = _on_device_of(out, g, i)
            if not create_graph:
                g = g.detach()
        grads.append(g)
    return grads


def _on_device_of(out, g, i):
    """The gradient ``g`` given for output ``out`` (number ``i``), on ``out``'s device:
    as PyTorch's engine checks a root gradient, a 0-d one is moved there, any other on
    another device is an error. Traced values are on no device: not checked."""
    gd, od = g._data, out._data
    if not (tracing_hook.concrete(gd) and tracing_hook.concrete(od)):
        return g
    want, got = out.device, g.device
    if got == want:
        return g
    if g.ndim == 0:
        return g.to(want)
    raise RuntimeError(f"invalid gradient at index {i} - expected device {want} but got {got}")


# The implicit root gradients: per (shape, dtype) on the host, per (shape, dtype, device)
# for a device payload's one-element outputs. Shared and never written to (an in-place op
# on a tensor holding a device seed rebinds it: ``CudaArray._ng_write`` refuses the seed,
# as a host seed is read-only): the cache's own reference makes
# AccumulateGrad copy rather than steal one, and a compiled backward can tell the seed
# ``backward()`` made from any other gradient by identity (``is_implicit_seed``), without
# reading device memory.
_ONES = {}


def _ones(shape, dtype):
    key = (shape, dtype)
    a = _ONES.get(key)
    if a is None:
        a = _ONES[key] = np.ones(shape, dtype)
        a.flags.writeable = False
    return a


def _implicit_seed(out):
    """The payload of ``out``'s implicit gradient (ones): for a device payload of one
    element, made once per (shape, dtype, device), so a loop's ``loss.backward()`` neither
    allocates nor copies nor launches anything to seed the engine."""
    d = out._data
    if type(d) is np.ndarray:
        return _ones(d.shape, d.dtype)
    device = getattr(d, "_ng_device", None)
    if device is None or out.numel() != 1:  # a traced value (made by the trace), or large
        return _ones_like_payload(out)
    key = (d.shape, d.dtype, device)
    a = _ONES.get(key)
    if a is None:
        a = _ONES[key] = _ones_like_payload(out)
    return a


def is_implicit_seed(data) -> bool:
    """Whether the payload ``data`` is the gradient ``backward()`` made itself for a
    scalar output (``gradient=None``): exactly 1, known without reading it."""
    device = getattr(data, "_ng_device", None)
    key = (data.shape, data.dtype) if device is None else (data.shape, data.dtype, device)
    return _ONES.get(key) is data


def _ones_like_payload(out):
    from numgrad.creation import ones_like
    return ones_like(out)._data


def _roots(outputs):
    roots = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"backward: expected Tensors, got {type(out).__name__} at {i}")
        node, nr = edge_of(out)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        roots.append((node, nr))
    return roots


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (``torch.autograd.backward``).

    Raises RuntimeError for an output that does not require grad, or a non-scalar output
    without ``grad_tensors``.

    >>> x = ng.ones(3, requires_grad=True)
    >>> ng.autograd.backward((x * 2).sum()); x.grad
    tensor([2., 2., 2.])
    """
    tensors = _as_tuple(tensors)
    for t in tensors:
        interp = getattr(getattr(t, "_data", None), "_ng_interpreter", None)
        if interp is not None:  # inside @ng.jit: accumulating into .grad is a side effect
            interp.refuse_backward()
    grad_tensors = _as_tuple(grad_tensors)
    if grad_tensors is not None and len(grad_tensors) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs: got "
                           f"{len(grad_tensors)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(tensors)
    grads = _make_grads(tensors, grad_tensors, create_graph)
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        targets = {}
        for t in inputs:
            node, nr = edge_of(t)
            if node is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets[(node, nr)] = t
    captured = _execute(roots, grads, retain_graph, create_graph, targets, accumulate=True)
    for (node, nr), t in (targets or {}).items():
        g = captured.get((node, nr))
        if g is not None and not isinstance(node, AccumulateGrad):
            _accumulate_into(t, g, create_graph)


def backward_scalar(t, retain_graph=None):
    """``t.backward()`` with no arguments: the common call, with less bookkeeping."""
    node = t.grad_fn
    d = t._data
    if node is None or not tracing_hook.concrete(d) or d.size != 1:
        return backward((t,), None, retain_graph, False, None)
    if _one_step(node):
        _execute_one_step((node, t._output_nr), Tensor._make(_implicit_seed(t)),
                          bool(retain_graph), False, True)
    elif (anomaly.enabled or recorder.active or not _execute_plain(
            (node, t._output_nr), Tensor._make(_implicit_seed(t)), bool(retain_graph))):
        backward((t,), None, retain_graph, False, None)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False) -> tuple:
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned (not accumulated into ``.grad``)
    (``torch.autograd.grad``). Raises RuntimeError for an unused input unless
    ``allow_unused``, and as ``backward`` does.

    >>> x = ng.tensor([1., 2.], requires_grad=True)
    >>> ng.autograd.grad((x ** 3).sum(), x)
    (tensor([ 3., 12.]),)
    """
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    if grad_outputs is not None and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"for {len(outputs)} outputs")
    roots = _roots(outputs)
    grads = _make_grads(outputs, grad_outputs, create_graph)
    targets = {}
    for t in inputs_t:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(t).__name__}")
        node, nr = edge_of(t)
        if node is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        targets[(node, nr)] = t
    captured = _execute(roots, grads, retain_graph, create_graph, targets, accumulate=False)
    result = []
    for i, t in enumerate(inputs_t):
        g = captured.get(edge_of(t))
        if g is None:
            if materialize_grads:
                from numgrad.creation import zeros_like
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        result.append(g)
    return tuple(result)


def _add(a, b):
    if a is None:
        return b
    if type(a._data) is not np.ndarray or type(b._data) is not np.ndarray:
        a, b = _settled(a, b)
    return _ops.elementwise.add(a, b)  # differentiable under create_graph


# References to a buffered gradient nothing else holds inside _added_in_place: the buffer
# list, the local `a`, getrefcount's argument; to its payload: the tensor's slot, the local `ad`
# and the argument.
_BUFFERED_REFS, _PAYLOAD_REFS = 3, 3


def _added_in_place(buf, i, g):
    """``buf[i] += g`` in the buffered gradient's own memory, when that is safe: no graph is
    being built (the caller checks), both are host arrays of one shape and dtype, and the
    buffered one is a fresh array that nothing but the buffer refers to (a vjp that hands the
    same gradient to two inputs, a hook that kept it, a view or the shared seed all keep it
    out). Saves the allocation and the dispatch of an ``add`` where gradients meet."""
    a = buf[i]
    ad, gd = a._data, g._data
    if (type(ad) is not np.ndarray or type(gd) is not np.ndarray or ad.shape != gd.shape
            or ad.dtype != gd.dtype or ad.base is not None or not ad.flags.writeable
            or sys.getrefcount(a) > _BUFFERED_REFS or sys.getrefcount(a._data) > _PAYLOAD_REFS):
        return False
    np.add(ad, gd, out=ad)
    return True


def _settle_level(g):
    interp = getattr(g._data, "_ng_interpreter", None)
    return getattr(interp, "_ng_depth", 0) if hasattr(interp, "settle_grad") else 0, interp


def _settled(a, b):
    """``a`` and ``b`` ready to add: where ``ng.func.vmap`` batched one of them more deeply
    and has since returned, that one's examples are summed first (their contributions to a
    tensor from outside that vmap), not broadcast against the other."""
    while True:
        (da, ia), (db, ib) = _settle_level(a), _settle_level(b)
        if ia is ib or da == db:
            return a, b
        g = a if da > db else b
        settled = (ia if da > db else ib).settle_grad(g)
        if settled is g:  # that vmap is still running: its examples stay apart
            return a, b
        a, b = (settled, b) if da > db else (a, settled)


def _needed(roots, targets):
    """Nodes from which a target can be reached (None: every node is needed)."""
    if targets is None:
        return None
    target_nodes = {n for n, _ in targets}
    needed = {}
    # Iterative post-order DFS: a node is needed if it is a target or any child is.
    for root, _ in roots:
        if root in needed:
            continue
        stack = [(root, iter(root.next_functions))]
        needed[root] = root in target_nodes
        while stack:
            node, it = stack[-1]
            advanced = False
            for child, _ in it:
                if child is None:
                    continue
                if child not in needed:
                    needed[child] = child in target_nodes
                    stack.append((child, iter(child.next_functions)))
                    advanced = True
                    break
                if needed[child]:
                    needed[node] = True
            if not advanced:
                stack.pop()
                if stack and needed[node]:
                    needed[stack[-1][0]] = True
    return {n for n, v in needed.items() if v}


def _execute(roots, grads, retain_graph, create_graph, targets, accumulate):
    if targets is None and len(roots) == 1:
        if _one_step(roots[0][0]):
            return _execute_one_step(roots[0], grads[0], retain_graph, create_graph, accumulate)
        if (accumulate and not create_graph and not anomaly.enabled and not recorder.active
                and type(roots[0][0]) is not AccumulateGrad and _execute_plain(roots[0], grads[0], retain_graph)):
            return {}
    needed = _needed(roots, targets)
    # Count incoming edges among the nodes we will run.
    deps = {}
    stack = []
    for node, _ in roots:
        if node not in deps and (needed is None or node in needed):
            deps[node] = 0
            stack.append(node)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is None or (needed is not None and child not in needed):
                continue
            if child in deps:
                deps[child] += 1
            else:
                deps[child] = 1
                stack.append(child)

    buffers = {}  # node -> list of gradients, one per output
    for (node, nr), g in zip(roots, grads):
        if node in deps:
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node.num_outputs
            buf[nr] = _add(buf[nr], g)
    ready = [(_priority(n), n._seq, n) for n in buffers if deps[n] == 0]
    heapq.heapify(ready)

    captured = {}
    prev = is_grad_enabled()
    _set_enabled(create_graph)
    push, pop = heapq.heappush, heapq.heappop
    _with_inputs.append(targets is not None)
    # A chain (one node ready after another, nothing else waiting) skips the heap: the one
    # node made ready while none waits is the one the heap would give next.
    chained = None
    try:
        while True:
            if chained is not None:
                node, chained = chained, None
            elif ready:
                node = pop(ready)[2]
            else:
                break
            buf = buffers.pop(node, None) or [None] * node.num_outputs
            if type(node) is AccumulateGrad:
                g = buf[0]
                if g is None:
                    continue
                if node.variable._hooks or node._retained is not None:
                    g = _run_hooks(node, 0, g)
                if node._pre_hooks is not None:
                    g = node_hooks.pre(node, [g])[0]
                if targets is not None:
                    if (node, 0) in targets:
                        captured[(node, 0)] = (g if type(g._data) is np.ndarray else
                                               _shared(g, node.variable))
                        if accumulate:
                            _accumulate_into(node.variable, g, create_graph)
                elif accumulate:
                    _accumulate_into(node.variable, g, create_graph)
                if node._pre_hooks is not None:
                    node_hooks.after_accumulate(node, g, accumulate)
                continue
            if node._pre_hooks is not None or node._retained is not None:
                for nr, g in enumerate(buf):
                    if g is not None:
                        buf[nr] = _run_hooks(node, nr, g)
                if node._pre_hooks is not None:
                    buf = node_hooks.pre(node, buf)
            if targets is not None:
                for nr, g in enumerate(buf):
                    if (node, nr) in targets:
                        captured[(node, nr)] = (g if g is None or type(g._data) is np.ndarray
                                                else _shared(g, targets[(node, nr)]))
            if targets is not None and not any(
                    c in needed for c, _ in node.next_functions if c is not None):
                continue  # only captured here; nothing below leads to a target
            for g in buf:
                if g is not None:
                    outs = (node.apply(buf) if not (anomaly.enabled or recorder.active)
                            else _observed(node, buf))
                    if not retain_graph:
                        node._release()
                    if node._pre_hooks is not None:
                        outs = node_hooks.post(node, outs, buf)
                    break
            else:
                outs = [None] * len(node.next_functions)
            for (child, cnr), g in zip(node.next_functions, outs):
                if child is None:
                    continue
                left = deps.get(child)
                if left is None:
                    continue  # not on a path to a target
                if g is not None:
                    cbuf = buffers.get(child)
                    if cbuf is None:
                        cbuf = buffers[child] = [None] * child.num_outputs
                    if cbuf[cnr] is None:
                        cbuf[cnr] = g
                    elif create_graph or not _added_in_place(cbuf, cnr, g):
                        cbuf[cnr] = _add(cbuf[cnr], g)
                deps[child] = left - 1
                if left == 1:
                    if chained is None and not ready:
                        chained = child
                        continue
                    if chained is not None:
                        push(ready, (_priority(chained), chained._seq, chained))
                        chained = None
                    seq = child._seq
                    push(ready, (_ACC_FIRST if type(child) is AccumulateGrad else -seq, seq, child))
    finally:
        _with_inputs.pop()
        _set_enabled(prev)
    return captured


def _plain_deps(root):
    """Each node's count of incoming edges below ``root``, or None where any node has a
    tensor hook, a node hook or a ``retain_grad`` (the general loop runs those)."""
    deps = {root: 0}
    stack = [root]
    acc = AccumulateGrad
    while stack:
        node = stack.pop()
        if node._pre_hooks is not None or node._retained is not None or (
                type(node) is acc and node.variable._hooks):
            return None
        for child, _ in node.next_functions:
            if child is None:
                continue
            left = deps.get(child)
            if left is None:
                deps[child] = 1
                stack.append(child)
            else:
                deps[child] = left + 1
    return deps


def _execute_plain(root, g, retain_graph):
    """``backward()``'s common case, with the decisions taken once: one root, every leaf
    accumulated, no graph built, no hook anywhere below the root, no anomaly mode and no
    profiler. Returns False (having done nothing) where a hook is found: the general loop
    runs then. Runs the nodes in the general loop's order; a leaf's accumulation, which
    nothing can observe here, happens as soon as its last gradient arrives."""
    node, nr = root
    deps = _plain_deps(node)
    if deps is None:
        return False
    buf = [None] * node.num_outputs
    buf[nr] = g
    buffers = {}
    ready = []
    push, pop = heapq.heappush, heapq.heappop
    acc = AccumulateGrad
    prev = is_grad_enabled()
    _set_enabled(False)
    _with_inputs.append(False)
    try:
        while True:
            for g in buf:
                if g is not None:
                    break
            else:
                g = None
            if g is not None:
                outs = node.apply(buf)
                if not retain_graph:
                    node._release()
            else:
                outs = (None,) * len(node.next_functions)
            chained = None
            for (child, cnr), g in zip(node.next_functions, outs):
                if child is None:
                    continue
                left = deps[child] - 1
                deps[child] = left
                if g is not None:
                    cbuf = buffers.get(child)
                    if cbuf is None:
                        if left == 0 and type(child) is acc:
                            _accumulate_into(child.variable, g, False)
                            continue
                        cbuf = buffers[child] = [None] * child.num_outputs
                    if cbuf[cnr] is None:
                        cbuf[cnr] = g
                    elif not _added_in_place(cbuf, cnr, g):
                        cbuf[cnr] = _add(cbuf[cnr], g)
                if left == 0:
                    if type(child) is acc:
                        cbuf = buffers.pop(child, None)
                        if cbuf is not None:
                            _accumulate_into(child.variable, cbuf[0], False)
                    elif chained is None and not ready:
                        chained = child
                    else:
                        if chained is not None:
                            push(ready, (-chained._seq, chained))
                            chained = None
                        push(ready, (-child._seq, child))
            if chained is not None:
                node = chained
            elif ready:
                node = pop(ready)[1]
            else:
                break
            buf = buffers.pop(node, None) or [None] * node.num_outputs
    finally:
        _with_inputs.pop()
        _set_enabled(prev)
    return True


# Per running backward, innermost last: whether it computes gradients of chosen inputs only
# (``grad``, ``backward(inputs=...)``), which a reentrant checkpoint cannot serve.
_with_inputs = []


def is_checkpoint_valid() -> bool:
    """Whether the backward running now accumulates into every leaf (so a reentrant
    checkpoint's inner ``backward`` is what it asked for)."""
    return not (_with_inputs and _with_inputs[-1])


def _one_step(node):
    """A root whose inputs are all distinct leaves (a compiled call's usual shape)."""
    if type(node) is AccumulateGrad:
        return False
    nf = node.next_functions
    if len(nf) == 1:
        return nf[0][0] is None or type(nf[0][0]) is AccumulateGrad
    seen = set()
    for child, _ in node.next_functions:
        if child is None:
            continue
        if type(child) is not AccumulateGrad or child in seen:
            return False
        seen.add(child)
    return True


def _execute_one_step(root, g, retain_graph, create_graph, accumulate):
    # Same semantics as the general loop, without the scheduling: the root runs, then
    # each leaf's hooks and accumulation (leaves are sinks, so their order is free).
    node, nr = root
    buf = [None] * node.num_outputs
    buf[nr] = g
    prev = is_grad_enabled()
    _set_enabled(create_graph)
    try:
        if node._pre_hooks is not None or node._retained is not None:
            buf[nr] = _run_hooks(node, nr, g)
            if node._pre_hooks is not None:
                buf = node_hooks.pre(node, buf)
        outs = (node.apply(buf) if not (anomaly.enabled or recorder.active)
                else _observed(node, buf))
        if not retain_graph:
            node._release()
        if node._pre_hooks is not None:
            outs = node_hooks.post(node, outs, buf)
        for (child, _), cg in zip(node.next_functions, outs):
            if child is None or cg is None:
                continue
            if child.variable._hooks or child._retained is not None:
                cg = _run_hooks(child, 0, cg)
            if child._pre_hooks is not None:
                cg = node_hooks.pre(child, [cg])[0]
            if accumulate:
                _accumulate_into(child.variable, cg, create_graph)
            if child._pre_hooks is not None:
                node_hooks.after_accumulate(child, cg, accumulate)
    finally:
        _set_enabled(prev)
    return {}


# AccumulateGrad runs first (PyTorch gives it the highest sequence number), then newest first.
_ACC_FIRST = -(1 << 62)


def _priority(node):
    return _ACC_FIRST if type(node) is AccumulateGrad else -node._seq


def run_tensor_hooks(node, nr, g, inside=False):
    """The tensor hooks (then ``retain_grad``) on output ``nr`` of ``node``, applied to ``g``.

    The engine's pass leaves them to a node that runs them itself (``Node._runs_own_hooks``);
    that node's ``apply`` calls this with ``inside=True``.
    """
    if not inside and node._runs_own_hooks(nr):
        return g
    hooks = node._hooks_for(nr)
    if hooks:
        if type(g._data) is np.ndarray and is_implicit_seed(g._data):
            # A hook may write its gradient in place (``g.mul_(3)``), as PyTorch allows: the
            # shared, read-only host seed is handed out as a copy of its own.
            g = Tensor._make(g._data.copy())
        for hook in list(hooks.values()):
            r = hook(g)
            if r is not None:
                if not isinstance(r, Tensor):
                    raise TypeError(f"hook returned {type(r).__name__}; a hook must return a "
                                    "Tensor or None")
                if r.shape != g.shape:
                    raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has changed "
                                       f"the size of value: expected {g.shape}, got {r.shape}")
                g = r
    if node._retained is not None:
        t = node._retained_for(nr)
        if t is not None:
            _accumulate_into(t, g, is_grad_enabled())
    return g


_run_hooks = run_tensor_hooks


# References to an unshared gradient array inside _accumulate_into: g._data, the local
# `gd`, and getrefcount's own argument.
_STEAL_REFS = 3


def _shared(g, t):
    """``g`` for ``t``: a gradient that ``ng.func.vmap`` batched, reaching a tensor made
    outside that vmap (a captured parameter), is summed over the examples there."""
    reduce = getattr(getattr(g._data, "_ng_interpreter", None), "reduce_grad", None)
    return g if reduce is None else reduce(g, t)


def _accumulate_into(t, g, create_graph):
    """``t.grad += g``, in place when no graph is being built (as PyTorch does)."""
    if type(g._data) is not np.ndarray:
        g = _shared(g, t)
    gd, td = g._data, t._data
    if gd.dtype != td.dtype or gd.shape != td.shape:
        if gd.dtype != td.dtype:
            g = g.to(t.dtype)
        if g.shape != t.shape:
            g = _ops.sum_to(g, t.shape)
        gd = g._data
    cur = t._grad
    if cur is None:
        if create_graph:
            t._grad = g
        elif type(gd) is np.ndarray:
            # Steal the buffer when nothing else can see it (PyTorch does the same); copy
            # otherwise, so .grad never aliases a user's array or another tensor.
            if not isinstance(gd.base, np.ndarray) and sys.getrefcount(gd) <= _STEAL_REFS:
                t._grad = Tensor._make(gd)
            else:
                t._grad = Tensor._make(gd.copy())
        elif sys.getrefcount(gd) <= _STEAL_REFS and _exclusive(gd):
            # A device payload, stolen on the same terms: nothing else refers to it or to
            # the memory under it (a compiled backward's fresh result).
            t._grad = Tensor._make(gd)
        else:
            with no_grad():
                t._grad = _ops.clone(g.detach())
    elif create_graph or type(cur._data) is not np.ndarray or type(g._data) is not np.ndarray:
        total = _ops.elementwise.add(cur, g)
        # A device .grad takes the sum in its own memory, so a reference the user holds
        # (and DLPack consumers of it) see the accumulation, as on the CPU; a traced one,
        # or one building a graph, is rebound.
        if not create_graph and _views.write_into(cur, total._data):
            cur._vc.value += 1
        else:
            t._grad = total
    else:
        cur._data += g._data
        cur._vc.value += 1


def _exclusive(d):
    sole = getattr(d, "_ng_exclusive", None)  # (device payloads say; see cuda.array)
    return sole is not None and sole()

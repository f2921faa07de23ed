"""autograd.graph: the backward graph's nodes and the tensors they save.

Room: autograd (low half). Imports ``numgrad.tensor`` and ``autograd.anomaly``; the op dispatcher
builds these nodes and the engine (``autograd.engine``) runs them.

A node is one backward step. ``next_functions`` holds one ``(node, output_nr)``
edge per forward input (``(None, 0)`` for inputs that need no gradient). Tensor
hooks on a node's outputs are kept on the node itself, so they outlive the
Python tensor object, as in PyTorch.
"""
from __future__ import annotations

import contextlib
import itertools
import weakref
from collections import OrderedDict

import numgrad.dtypes as dtypes
import numgrad.autograd.anomaly as anomaly
from numgrad.tensor import Tensor


def inplace_hint() -> str:
    """The last sentence of "modified by an inplace operation", as PyTorch words it: how to
    find the op, or, with anomaly detection already on, where the warning above points."""
    if anomaly.enabled:
        return ("Hint: the backtrace further above shows the operation that failed to compute "
                "its gradient. The variable in question was changed in there or anywhere "
                "later. Good luck!")
    return ("Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with ng.autograd.set_detect_anomaly(True, check_nan=False).")

_sequence = itertools.count()

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")

_TYPE_NAMES = {k: v + "Tensor" for k, v in dtypes.SCALAR_NAMES.items()}


class Node:
    """Base of every backward step; subclasses define ``apply(grads) -> grads per input``."""

    __slots__ = ("next_functions", "_seq", "_pre_hooks", "_retained", "__weakref__")

    def __init__(self, next_functions=()):
        # Two hot constructors write these fields out instead of calling this one (one call
        # per recorded op measured): AccumulateGrad.__init__ and ops.dispatch.record. A
        # field added here goes there too.
        self.next_functions = next_functions
        self._seq = next(_sequence)
        self._pre_hooks = None   # {output_nr: OrderedDict of tensor hooks}
        self._retained = None    # {output_nr: weakref to the tensor that called retain_grad}

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    def _repr_html_(self):
        # `t.grad_fn` alone in a Jupyter cell draws the graph behind it (numgrad.viz).
        from numgrad.viz import graph
        return f'<div style="overflow-x:auto">{graph(self).svg()}</div>'

    def apply(self, grads):
        raise NotImplementedError

    @staticmethod
    def _as_saved(entry):
        """An entry of ``_saved`` as a ``SavedTensor`` (``as_saved_tensor``; for pictures)."""
        return as_saved_tensor(entry)

    def __call__(self, *grads):
        n = self.num_outputs
        if len(grads) != n:
            raise TypeError(f"expected {n} arguments, got {len(grads)} instead")
        return self.apply(list(grads))

    num_outputs = 1  # a class attribute, not a property: the engine reads it per node

    def _release(self):
        """Free saved tensors after a backward without ``retain_graph``."""

    def _tensor_pre_hooks(self, output_nr):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return self._pre_hooks.setdefault(output_nr, OrderedDict())

    def _hooks_for(self, output_nr):
        return None if self._pre_hooks is None else self._pre_hooks.get(output_nr)

    def _retained_for(self, output_nr):
        ref = None if self._retained is None else self._retained.get(output_nr)
        return None if ref is None else ref()

    def _runs_own_hooks(self, output_nr) -> bool:
        """Whether ``apply`` runs the tensor hooks and ``retain_grad`` of output
        ``output_nr`` itself, so the engine must not (a compiled backward does for an output
        its function also used). The engine asks every node; eager nodes never do."""
        return False

    def _retain_grad(self, tensor):
        if self._retained is None:
            self._retained = {}
        self._retained[tensor._output_nr] = weakref.ref(tensor)

    # Node hooks live in ``_pre_hooks`` under string keys (tensor hooks use output
    # numbers): one slot, and the engine's "any hooks here?" test covers both.
    def _node_hooks(self, kind):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return self._pre_hooks.setdefault(kind, OrderedDict())

    def register_prehook(self, fn):
        """Call ``fn(grad_outputs)`` before this node runs; a tuple returned replaces the
        gradients (``torch.autograd.graph.Node.register_prehook``).

        >>> y = ng.ones(2, requires_grad=True) * 2
        >>> h = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        """
        return _add_hook(self._node_hooks(NODE_PRE), fn)

    def register_hook(self, fn):
        """Call ``fn(grad_inputs, grad_outputs)`` after this node ran; a tuple returned
        replaces ``grad_inputs`` (``torch.autograd.graph.Node.register_hook``).

        >>> y = ng.ones(2, requires_grad=True) * 2
        >>> h = y.grad_fn.register_hook(lambda gi, go: print(gi, go))
        """
        return _add_hook(self._node_hooks(NODE_POST), fn)


NODE_PRE, NODE_POST, POST_ACCUMULATE = "node_pre", "node_post", "post_accumulate"


def _add_hook(hooks, fn):
    from numgrad.tensor import RemovableHandle
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        # Node.__init__ spelled out: a leaf's accumulator is cached weakly (as PyTorch's), so
        # a training loop makes one per parameter per step.
        self.next_functions = ()
        self._seq = next(_sequence)
        self._pre_hooks = None
        self._retained = None
        self.variable = variable

    def _hooks_for(self, output_nr):
        return self.variable._hooks

    def _tensor_pre_hooks(self, output_nr):
        return self.variable._tensor_hooks_dict()


def accumulator_of(t: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, made once and cached weakly as PyTorch does."""
    acc = t._accumulator() if t._accumulator is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._accumulator = weakref.ref(acc)
    return acc


def edge_of(t: Tensor):
    """The ``(node, output_nr)`` a gradient for ``t`` flows into, or ``(None, 0)``."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        return (accumulator_of(t), 0)
    return (None, 0)


def describe(data, dtype_name) -> str:
    shape = ", ".join(str(s) for s in data.shape)
    where = "cuda." if getattr(data, "_ng_device", None) is not None else ""  # as torch.cuda.*
    return f"[numgrad.{where}{_TYPE_NAMES.get(dtype_name, 'Tensor')} [{shape}]]"


def version_error(what, producer, now, expected) -> RuntimeError:
    """PyTorch's error for a value the backward needs that an in-place op has changed since:
    ``what`` describes it (``describe``), ``producer`` (a node, its name, or None) made it."""
    if producer is not None:
        name = producer if isinstance(producer, str) else producer.name()
        for suffix in ("Backward0", "Backward1", "Backward2", "Backward"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        what += f", which is output 0 of {name},"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} is at version {now}; expected version {expected} "
        f"instead. {inplace_hint()}")


class SavedTensor:
    """A tensor a node needs in its backward, with the version it had when saved.

    Saving a node's own output keeps only its payload (a tensor holding its
    grad_fn would be a reference cycle); unpacking rebuilds it with the node as
    grad_fn, so the saved output stays differentiable under ``create_graph``.
    """

    __slots__ = ("_tensor", "_data", "_vc", "_version", "_output_nr", "_freed",
                 "_requires_grad", "_packed", "_was")

    def __init__(self, t: Tensor, is_output: bool = False):
        self._vc = t._vc
        self._version = t._vc.value
        self._freed = False
        self._packed = None
        self._was = None  # once freed: a weak reference to the saved input, for pictures
        if _SAVED_HOOKS:  # saved_tensors_hooks: keep what the pack hook made, not the tensor
            _refuse_inside_jit()
            self._tensor = self._data = None
            self._output_nr = t._output_nr
            self._requires_grad = t._requires_grad
            pack, unpack = _SAVED_HOOKS[-1].pack_hook, _SAVED_HOOKS[-1].unpack_hook
            with hooks_off():  # what the pack hook itself computes saves plainly
                self._packed = (pack(t), unpack, is_output)
            return
        if is_output:
            self._tensor = None
            self._data = t._data
            self._output_nr = t._output_nr
            self._requires_grad = t._requires_grad
        else:
            self._tensor = t
            self._data = None

    def unpack(self, node: Node) -> Tensor:
        if self._freed:
            raise RuntimeError(_FREED)
        if self._packed is not None:
            return self._unpack_hooked(node)
        if self._vc.value != self._version:
            data = self._data if self._tensor is None else self._tensor._data
            what = describe(data, dtypes.from_numpy_dtype(data.dtype).name)
            # PyTorch names the node a saved output belongs to, and for a saved input the
            # tensor's grad_fn now (after the in-place op that bumped it), not at saving.
            producer = node if self._tensor is None else self._tensor.grad_fn
            raise version_error(what, producer, self._vc.value, self._version)
        if self._tensor is not None:
            return self._tensor
        return Tensor._make(self._data, node if self._requires_grad else None, self._vc,
                            self._output_nr)

    def _unpack_hooked(self, node):
        # As PyTorch: no version check (the hooks own what was saved); a saved output
        # gets its node back as grad_fn, so create_graph can go through it.
        packed, unpack, is_output = self._packed
        t = unpack(packed)
        if not isinstance(t, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        if is_output and self._requires_grad and t.grad_fn is not node:
            return Tensor._make(t._data, node, t._vc, self._output_nr)
        return t

    def rebase(self, t: Tensor):
        """After an in-place op, the saved output is the modified tensor itself."""
        self._data = t._data
        self._vc = t._vc
        self._version = t._vc.value

    def free(self):
        self._freed = True
        if self._tensor is not None:  # a picture still names what was saved (viz.graph)
            self._was = weakref.ref(self._tensor)
        self._tensor = None
        self._data = None
        self._packed = None


def as_saved_tensor(s):
    """``s``, an entry of an eager node's ``_saved``, as a ``SavedTensor`` (for pictures):
    ``ops.dispatch.record`` keeps a saved input as ``(tensor, version)`` and, once freed, a
    weak reference to it."""
    if type(s) is tuple:
        t, version = s
        out = object.__new__(SavedTensor)
        out._tensor, out._data, out._vc, out._version = t, None, t._vc, version
        out._freed, out._packed, out._was = False, None, None
        return out
    if type(s) is weakref.ReferenceType:
        out = object.__new__(SavedTensor)
        out._tensor = out._data = out._vc = out._packed = None
        out._freed, out._was = True, s
        return out
    return s


class SavedParam:
    """A static param that PyTorch's node keeps as a saved tensor (an index array).

    It is freed with the node's saved tensors, so using it after a backward without
    ``retain_graph`` raises the same "second time" error as PyTorch.
    """

    __slots__ = ("_value", "_freed")

    def __init__(self, value):
        self._value = value
        self._freed = False

    def unpack(self, node: Node):
        if self._freed:
            raise RuntimeError(_FREED)
        return self._value

    def free(self):
        self._freed = True


# The pack/unpack pairs of the ``saved_tensors_hooks`` contexts open now, innermost last.
_SAVED_HOOKS = []


class saved_tensors_hooks:
    """Within this context, every tensor a backward node saves goes through
    ``pack_hook(tensor) -> anything`` and is read back by ``unpack_hook(that) -> tensor``
    (``torch.autograd.graph.saved_tensors_hooks``). Saved tensors are then not checked
    against in-place changes (the hooks own them).

    >>> x = ng.ones(3, requires_grad=True)
    >>> with ng.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
    ...     y = (x * x).sum()
    >>> y.backward(); x.grad
    tensor([2., 2., 2.])
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _SAVED_HOOKS.append(self)
        return self

    def __exit__(self, *exc):
        _SAVED_HOOKS.pop()


class trace_time_hooks(saved_tensors_hooks):
    """``saved_tensors_hooks`` that are part of the program: under ``@ng.jit`` they run while
    the function is traced, on traced tensors, and their effect is compiled into the plan
    (``utils.checkpoint`` packs each saved tensor as an index and recomputes it). Eagerly
    they are ``saved_tensors_hooks``.

    >>> x = ng.ones(2, requires_grad=True)
    >>> with ng.autograd.graph.trace_time_hooks(lambda t: t * 2, lambda t: t):
    ...     y = (x * x).sum()
    >>> y.backward(); x.grad
    tensor([4., 4.])
    """

    trace_time = True


def _refuse_inside_jit():
    # While a trace runs, the hooks opened around it are paused: whatever is on the stack
    # was opened inside the traced function.
    if not _paused or getattr(_SAVED_HOOKS[-1], "trace_time", False):
        return
    from numgrad.errors import TracingError, user_location
    raise TracingError(
        f"saved_tensors_hooks opened inside an @ng.jit function {user_location()}: the plan "
        "saves other tensors than eager mode does, so the hooks cannot see the tensors they "
        "would see eagerly. Open the context around the call instead: the hooks then pack "
        "each tensor the plan saves for its backward, at every call, and unpack it when the "
        "backward runs")


@contextlib.contextmanager
def hooks_off():
    """No ``saved_tensors_hooks`` context applies inside (a pack hook's own work, a trace);
    the open ones are back on exit."""
    outer = _SAVED_HOOKS[:]
    _SAVED_HOOKS.clear()
    try:
        yield
    finally:
        _SAVED_HOOKS[:] = outer


@contextlib.contextmanager
def paused_saved_hooks():
    """While a function is traced for ``@ng.jit``, the hooks opened around the call do not
    see the traced tensors (``torch.compile`` pauses them alike): they run at every call,
    on the tensors the plan saves (``compiler.saved_hooks``)."""
    global _paused
    with hooks_off():
        _paused += 1
        try:
            yield
        finally:
            _paused -= 1


_paused = 0  # how many traces have paused the hooks (paused_saved_hooks)


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept in host memory and moved back to their device when the
    backward needs them (``torch.autograd.graph.save_on_cpu``); ``pin_memory`` is
    accepted. On CPU tensors it changes nothing.

    >>> x = ng.ones(3, requires_grad=True)
    >>> with ng.autograd.graph.save_on_cpu():
    ...     y = (x * x).sum()
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            if t.device.type == "cpu" or not _holds_values(t):
                return (None, t)
            return (t.device, t.detach().cpu())

        def unpack(packed):
            device, t = packed
            return t if device is None else t.to(device)

        super().__init__(pack, unpack)


def _holds_values(t):
    import numgrad.tracing_hook as tracing_hook
    return tracing_hook.concrete(t._data)

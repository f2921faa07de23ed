"""autograd.function: user-defined differentiable operations (``torch.autograd.Function``).

Room: autograd. A subclass gives a static ``forward`` and ``backward``; ``apply`` runs the
forward with grad mode off and records one node, ``<Class>Backward``, which is also the
``ctx`` both methods see (as in PyTorch). The node's ``apply`` calls the user's backward in
the engine's grad mode, so a backward written in numgrad ops is differentiable again
(double backward), and under ``@ng.jit`` it is traced into the plan's backward like any
registry rule: the compiler needs nothing of its own for custom Functions.
"""
from __future__ import annotations

import functools
from typing import Callable

import numgrad.tracing_hook as tracing_hook
from numgrad.autograd.graph import Node, SavedTensor, _sequence, edge_of
from numgrad.grad_mode import is_grad_enabled, no_grad
from numgrad.tensor import Tensor


class FunctionCtx:
    """What ``forward``/``setup_context`` and ``backward`` share: saved tensors and flags."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``; read them back as ``saved_tensors``,
        which checks that none was modified in place since."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        """Accepted for PyTorch compatibility (forward-mode AD reads them); kept as given."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Declare inputs that ``forward`` modified in place (and returns)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Declare outputs that get no gradient (their ``requires_grad`` is False)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool):
        """False: ``backward`` receives None, not zeros, for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one ``Function.apply``: the ``ctx`` and the backward step in one."""

    _forward_cls = None
    num_outputs = 1

    def __init__(self):
        Node.__init__(self)
        self.to_save = None
        self.dirty_tensors = None
        self.non_differentiable = None
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved = None
        self._out_meta = ()
        self._in_meta = ()

    def name(self):
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked against in-place changes."""
        if self._saved is None:
            return tuple(self.to_save or ())
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    def _release(self):
        for s in self._saved or ():
            if s is not None:
                s.free()

    def apply(self, grads):
        cls = self._forward_cls
        grads = list(grads)
        if self.materialize_grads:
            from numgrad.creation import zeros
            for k, (g, meta) in enumerate(zip(grads, self._out_meta)):
                if g is None and meta is not None:
                    grads[k] = _zeros(zeros, meta)
        if cls.backward is Function.backward and cls.vjp is Function.vjp:
            raise NotImplementedError(
                "You must implement either the backward or vjp method for your custom "
                "autograd.Function to use it with backward mode AD.")
        bw = cls.vjp if cls.backward is Function.backward else cls.backward
        result = bw(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        return self._check_grads(result)

    def _check_grads(self, result):
        n = len(self._in_meta)
        name = self.name()
        if len(result) != n:
            extra = result[n:]
            if len(result) < n or any(r is not None for r in extra):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(result)})")
            result = result[:n]
        out = []
        for i, (g, meta) in enumerate(zip(result, self._in_meta)):
            if g is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            if meta is None:
                raise RuntimeError(f"function {name} returned a gradient different than None at "
                                   f"position {i + 1}, but the corresponding forward input was "
                                   "not a Variable")
            shape, dtype = meta
            if g.shape != shape:
                if not _expandable(shape, g.shape):
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index "
                                       f"{i} - got {list(g.shape)} but expected shape compatible "
                                       f"with {list(shape)}")
                from numgrad.ops.dispatch import sum_to
                g = sum_to(g, shape)
            if g._data.dtype != dtype:
                g = g.to(_dtype_of(dtype))
            out.append(g)
        return [g for g, meta in zip(out, self._in_meta) if meta is not None]


def _zeros(zeros, meta):
    shape, dtype = meta
    return zeros(shape, dtype=_dtype_of(dtype))


def _dtype_of(np_dtype):
    import numgrad.dtypes as dtypes
    return dtypes.from_numpy_dtype(np_dtype)


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to`` (the gradient is then summed back down)."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


class _FunctionMeta(type):
    """Gives every Function subclass its node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__module__ = cls.__module__
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations (``torch.autograd.Function``).

    >>> class Exp(ng.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp()
    ...         ctx.save_for_backward(y)
    ...         return y
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         y, = ctx.saved_tensors
    ...         return g * y
    >>> x = ng.zeros(2, requires_grad=True)
    >>> Exp.apply(x).sum().backward(); x.grad
    tensor([1., 1.])
    """

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        """Compute the outputs; with ``setup_context`` defined, takes no ``ctx``."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Fill ``ctx`` from the inputs and the output (the style that keeps forward pure)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient per output in, one per ``forward`` input out (None: no gradient)."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """An alias of ``backward``."""
        return Function.backward(ctx, *grad_outputs)

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` and record ``<Class>Backward`` when an input needs a
        gradient and grad mode is on."""
        if tracing_hook.capture is not None:  # tracing: captured tensors become inputs
            capture = tracing_hook.capture
            args = tuple(capture(a) if isinstance(a, Tensor) else a for a in args)
        ctx = cls._backward_cls()
        is_tensor = [isinstance(a, Tensor) for a in args]
        ctx.needs_input_grad = tuple(t and a._requires_grad for t, a in zip(is_tensor, args))
        record = is_grad_enabled() and any(ctx.needs_input_grad)
        custom_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            if custom_setup:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, _bound(cls, args, kwargs), output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        return _wrap_outputs(ctx, args, output, record)


def _bound(cls, args, kwargs):
    """The inputs ``setup_context`` sees: keyword arguments and defaults bound into place."""
    import inspect
    bound = inspect.signature(cls.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _wrap_outputs(ctx, args, output, record):
    single = not isinstance(output, tuple)
    outs = (output,) if single else output
    dirty = {id(t) for t in (ctx.dirty_tensors or ())}
    non_diff = {id(t) for t in (ctx.non_differentiable or ())}
    inputs = {id(a): a for a in args if isinstance(a, Tensor)}
    if record:
        # One edge per tensor input, as PyTorch (non-tensor arguments have none).
        ctx.next_functions = tuple(edge_of(a) if a._requires_grad else (None, 0)
                                   for a in args if isinstance(a, Tensor))
        ctx._seq = next(_sequence)  # after the forward's own ops: it runs before them
        ctx._in_meta = tuple((a.shape, a._data.dtype) if isinstance(a, Tensor) else None
                             for a in args)
        ctx.num_outputs = len(outs)
    wrapped, raw_to_wrapped, out_meta = [], {}, []
    for nr, o in enumerate(outs):
        if not isinstance(o, Tensor):
            wrapped.append(o)
            out_meta.append(None)
            continue
        out_meta.append((o.shape, o._data.dtype))
        diff = record and id(o) not in non_diff and o.dtype.is_floating_point
        if id(o) in dirty:
            if o.grad_fn is None and o._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            o._vc.value += 1  # PyTorch counts mark_dirty as the in-place write
            w = o
            if diff:
                w.grad_fn, w._output_nr, w._requires_grad = ctx, nr, True
        elif id(o) in inputs:
            # An input returned as is: a new tensor over the same storage (PyTorch's view).
            w = Tensor._make(o._data, ctx if diff else None, o._vc, nr)
        else:
            w = o
            if diff:
                w.grad_fn, w._output_nr, w._requires_grad = ctx, nr, True
            elif id(o) in non_diff:
                w._requires_grad = False
        raw_to_wrapped[id(o)] = w
        wrapped.append(w)
    ctx._out_meta = tuple(out_meta)
    if record:  # (else saved_tensors hands the tensors back as given)
        ctx._saved = _save(ctx, raw_to_wrapped)
    return wrapped[0] if single else tuple(wrapped)


def _save(ctx, raw_to_wrapped):
    saved = []
    for t in ctx.to_save or ():
        if t is None:
            saved.append(None)
            continue
        w = raw_to_wrapped.get(id(t))
        if w is not None and w.grad_fn is ctx:
            saved.append(SavedTensor(w, is_output=True))  # no cycle through the node
        else:
            saved.append(SavedTensor(t))
    return saved


class _DelayedError(Node):
    """Stands behind the results of a ``once_differentiable`` backward under create_graph:
    differentiating them raises."""

    def __init__(self, msg, next_functions):
        super().__init__(next_functions)
        self._msg = msg

    def name(self):
        return "DelayedError"

    def apply(self, grads):
        raise RuntimeError(self._msg)


def once_differentiable(fn) -> Callable:
    """Decorate a ``backward`` that is not itself differentiable: it runs under no_grad,
    and differentiating its results (double backward) raises.

    >>> class Sq(ng.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x); return x * x
    ...     @staticmethod
    ...     @ng.autograd.function.once_differentiable
    ...     def backward(ctx, g):
    ...         x, = ctx.saved_tensors; return 2 * x * g
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        requires = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
        if not requires:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        edges = tuple(edge_of(a) for a in requires)
        node = _DelayedError("trying to differentiate twice a function that was marked with "
                             "@once_differentiable", edges)
        wrapped = tuple(Tensor._make(o._data, node, o._vc) if isinstance(o, Tensor) else o
                        for o in outs)
        return wrapped[0] if single else wrapped

    return wrapper

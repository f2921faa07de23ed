"""tensor: the Tensor, its device and its version counter.

Room: core. Imports dtypes, size, device_type and tracing_hook, nothing above it: the
modules above that some methods run (the autograd engine for ``backward``, printing,
creation, DLPack) enter themselves into ``Tensor``'s slots when imported. Operator
methods (``__add__``, ``exp``, ...) are bound onto ``Tensor`` by ``numgrad.ops.methods``
so that each op is defined once.

A Tensor's payload ``_data`` is a NumPy array in eager mode. While ``@ng.jit``
traces, the payload is an IR value with the same ``shape``/``dtype``/``ndim``
attributes, and the op dispatcher hands such payloads to the tracer.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np

import numgrad.dtypes as _dt
import numgrad.tracing_hook as tracing_hook
from numgrad.size import Size
from numgrad.device_type import device


_CPU = device("cpu")


_new = object.__new__


class _VersionCounter:
    """Shared by a tensor, its views and its detached aliases; bumped by every in-place op."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` takes the hook out again."""

    _next_id = 0

    def __init__(self, hooks_dict):
        self._hooks = hooks_dict
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")




class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    >>> import numgrad as ng
    >>> x = ng.ones(3, requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 2., 2.])
    """

    # The payload slots, which ``_make`` sets, then those set only when needed: ``_views``
    # (when a traced view is made) and ``_ng_dynamic`` (dims an ``@ng.jit`` plan should read
    # at run time from its first call: the batch dim of a DataLoader whose last batch is
    # smaller, as ``torch._dynamo.mark_dynamic`` marks it).
    __slots__ = ("_data", "_vc", "_requires_grad", "_grad", "grad_fn", "_output_nr", "_hooks",
                 "_retains_grad", "_base", "_accumulator", "_view_chain", "_views",
                 "_ng_dynamic", "__weakref__")
    _PAYLOAD_SLOTS = __slots__[:-3]

    # Make NumPy defer to our reflected operators (ndarray * Tensor -> Tensor.__rmul__).
    __array_priority__ = 1000

    # The modules above this one that some methods run, entered by each of them when it is
    # imported (they import this module, so it cannot import them; ``import numgrad`` loads
    # them all before a tensor is used): ``numgrad.autograd`` the engine and its node hooks,
    # ``numgrad.creation`` the conversion of data, ``numgrad.printing`` the repr,
    # ``numgrad.dlpack`` the capsules.
    _ng_engine = _ng_node_hooks = _ng_creation = _ng_printing = _ng_dlpack = None

    def __init__(self, data, dtype=None, requires_grad=False):
        fresh = Tensor._make(Tensor._ng_creation._to_array(data, dtype))  # sets up the slots
        for name in Tensor._PAYLOAD_SLOTS:
            setattr(self, name, getattr(fresh, name))
        if requires_grad:
            self._set_requires_grad(True)

    @staticmethod
    def _make(data, grad_fn=None, vc=None, output_nr=0):
        """Wrap a payload without copying or checking: the fast path for op results."""
        t = _new(Tensor)
        t._data = data
        t._vc = vc if vc is not None else _VersionCounter()
        t._requires_grad = grad_fn is not None
        t._grad = None
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        t._hooks = None
        t._retains_grad = False
        t._base = None
        t._accumulator = None
        t._view_chain = None  # for views: how they were made from _base (ops.views)
        return t

    # ----------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        """The size of each dim, an ``ng.Size`` (a tuple; ``torch.Tensor.shape``)."""
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        """The number of dims (``torch.Tensor.ndim``)."""
        return self._data.ndim

    @property
    def dtype(self) -> _dt.dtype:
        """The element type: ``ng.float32``, ``ng.float64``, ``ng.int64`` or ``ng.bool``."""
        return _dt.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        """Where the data lives: ``device(type='cpu')`` unless moved (``torch.Tensor.device``)."""
        return getattr(self._data, "_ng_device", _CPU)

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface (v3) of a CUDA tensor's memory, for zero-copy exchange
        with CuPy, PyTorch, Numba; AttributeError on a CPU tensor (as in PyTorch)."""
        cai = getattr(self._data, "__cuda_array_interface__", None)
        if cai is None or isinstance(self._data, np.ndarray):
            raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                                 f"{self.dtype}; use .cuda() first")
        if self._requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires "
                               "grad. If gradients aren't required, use var.detach() to get "
                               "Variable that doesn't require grad.")
        return cai

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device (``torch.Tensor.is_cuda``)."""
        return self.device.type == "cuda"

    @property
    def _version(self):
        return self._vc.value

    def _bump_version(self):
        self._vc.value += 1

    def size(self, dim=None) -> Size | int:
        """The shape, or the size of one ``dim`` (``torch.Tensor.size``). Raises IndexError for a
        dim out of range.
        """
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        """The number of dims (``torch.Tensor.dim``)."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements (``torch.Tensor.numel``)."""
        return int(self._data.size)

    def element_size(self) -> int:
        """The bytes of one element (``torch.Tensor.element_size``): ``ng.ones(2).element_size()``
        is 4."""
        return self.dtype.np.itemsize

    @property
    def itemsize(self) -> int:
        """The bytes of one element, as ``element_size()`` (``torch.Tensor.itemsize``)."""
        return self.dtype.np.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes of the elements, ``numel() * itemsize``, however the storage is shared
        (``torch.Tensor.nbytes``: an expanded tensor counts every element)."""
        return self.numel() * self.dtype.np.itemsize

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def is_floating_point(self) -> bool:
        """Whether the dtype is float32 or float64 (``torch.Tensor.is_floating_point``)."""
        return self.dtype.is_floating_point

    # ---------------------------------------------------------------- autograd
    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded for autograd; settable on leaves
        (``torch.Tensor.requires_grad``). Setting it raises RuntimeError on a non-leaf, or for an
        integer or bool tensor.
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._set_requires_grad(value)

    @requires_grad.deleter
    def requires_grad(self):
        raise RuntimeError("requires_grad must be a bool")  # PyTorch's text for `del`

    def requires_grad_(self, requires_grad=True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor (``torch.Tensor.requires_grad_``).

        Raises RuntimeError as setting ``requires_grad`` does.
        """
        self._set_requires_grad(requires_grad)
        self._vc.value += 1  # API.md: every in-place method bumps the version
        return self

    def _set_requires_grad(self, requires_grad):
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use "
                    "a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients "
                               f"(got {self.dtype}); convert first with .float() or .double()")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors no recorded operation produced (``grad_fn is None``)
        (``torch.Tensor.is_leaf``).
        """
        return self.grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward()`` (leaves, or tensors that called
        ``retain_grad``) (``torch.Tensor.grad``). ``del x.grad`` sets it to None; assigning raises
        RuntimeError for a wrong shape or dtype. Reading it on a non-leaf warns, as PyTorch does.
        """
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        if tracing_hook.capture is not None and self._grad is not None:
            return tracing_hook.capture(self._grad, owner=self)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"{type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype {value.dtype} to "
                                   f"a tensor with dtype {self.dtype}. Please ensure that the "
                                   "gradient and the tensor have the same dtype")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None  # `del x.grad`, as in PyTorch

    def _tensor_hooks_dict(self):
        if self._hooks is None:
            self._hooks = OrderedDict()
        return self._hooks

    def retain_grad(self):
        """Keep ``.grad`` on a non-leaf tensor after backward (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None and not self._retains_grad:
            self.grad_fn._retain_grad(self)
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this non-leaf (``torch.Tensor.retains_grad``)."""
        return self._retains_grad

    def register_hook(self, hook):
        """Call ``hook(grad)`` whenever the gradient w.r.t. this tensor is computed.

        Returning a tensor replaces the gradient; returning ``None`` keeps it.

        >>> v = ng.tensor([0., 0., 0.], requires_grad=True)
        >>> h = v.register_hook(lambda g: g * 2)
        >>> v.backward(ng.tensor([1., 2., 3.])); v.grad
        tensor([2., 4., 6.])
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        lifted = tracing_hook.standin(self)
        if lifted is not None:
            return lifted.register_hook(hook)
        if self.grad_fn is not None:
            interp = getattr(self._data, "_ng_interpreter", None)
            if interp is not None:  # traced: the hook becomes a boundary in the backward graph
                hook = interp.wrap_hook(self, hook)
            hooks = self.grad_fn._tensor_pre_hooks(self._output_nr)
        else:
            hooks = self._tensor_hooks_dict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` on this leaf after a backward accumulated into its
        ``.grad`` (an optimizer step per parameter, as the gradient arrives).

        >>> w = ng.ones(2, requires_grad=True)
        >>> h = w.register_post_accumulate_grad_hook(lambda t: print(t.grad))
        """
        return Tensor._ng_node_hooks.register_post_accumulate_grad_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``; see ``ng.autograd.backward``."""
        engine = Tensor._ng_engine
        if gradient is None and inputs is None and not create_graph:
            engine.backward_scalar(self, retain_graph)
        else:
            engine.backward((self,), None if gradient is None else (gradient,), retain_graph,
                            create_graph, inputs)

    def detach(self):
        """A tensor sharing storage and version counter, outside the graph
        (``torch.Tensor.detach``, ``jax.lax.stop_gradient``)."""
        data = self._data
        if type(data) is np.ndarray:
            lifted = tracing_hook.standin(self)
            if lifted is not None:
                return lifted.detach()
        elif getattr(data, "_ng_interpreter", None) is not None:
            interp = data._ng_interpreter  # traced: a stop-gradient annotation, and an alias
            out = Tensor._make(interp.detach(data), None, self._vc)
            interp.detached(self, out)
            return out
        return Tensor._make(data, None, self._vc)

    def detach_(self) -> Tensor:
        """Take this tensor out of the graph in place (``torch.Tensor.detach_``).

        Raises RuntimeError on a view of a tensor that requires grad.
        """
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        self._vc.value += 1  # API.md: every in-place method bumps the version
        return self

    @property
    def data(self) -> Tensor:
        """The same storage with its own version counter, outside the graph
        (``torch.Tensor.data``; prefer ``detach()``, which in-place checks can see).
        """
        # Like PyTorch: same storage, but its own version counter (that is what makes
        # `.data` unsafe and `detach()` the safe spelling).
        lifted = tracing_hook.standin(self)
        if lifted is not None:
            return lifted.data
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._data = value._data

    @data.deleter
    def data(self):
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    # -------------------------------------------------------------- conversion
    def numpy(self, *, force=False) -> np.ndarray:
        """The data as a NumPy array sharing memory (``torch.Tensor.numpy``).

        Raises RuntimeError if the tensor requires grad (use ``detach()``, or ``force=True``),
        TypeError for a CUDA tensor.
        """
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            raise TypeError("can't convert cuda tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        return self._concrete(".numpy()")

    def _concrete(self, reason=None):
        data = self._data
        if type(data) is not np.ndarray:
            conc = getattr(data, "_ng_concrete", None)
            if conc is None:
                raise TypeError("a tensor without concrete data cannot be converted")
            return conc(reason)
        lifted = tracing_hook.standin(self)
        if lifted is not None:  # the value of a captured tensor would be frozen in
            return lifted._concrete(reason)
        return data

    def __array__(self, dtype=None, copy=None):
        # np.asarray(t.detach()) shares memory, as numpy() does; a tensor that requires
        # grad is refused with numpy()'s error, as PyTorch refuses it (after the tracer's
        # own error for a traced value, which says more).
        a = self._concrete("array")
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid copy while converting a {self.dtype} tensor "
                                 f"to {np.dtype(dtype)}; use copy=None or copy=True")
            return a.astype(dtype)
        return a.copy() if copy else a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this tensor's memory (the consumer side is
        ``torch.from_dlpack(t)``, ``np.from_dlpack(t)``, ``jax.dlpack.from_dlpack(t)``):
        zero-copy on the CPU and on CUDA (``max_version >= (1, 0)`` gets a versioned
        capsule; ``stream`` is the consumer's CUDA stream). Raises BufferError for a
        tensor that requires grad (as PyTorch)."""
        return Tensor._ng_dlpack.export(self, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        """``(device_type, device_id)`` as DLPack numbers them: ``(1, 0)`` on the CPU,
        ``(2, index)`` on CUDA."""
        return Tensor._ng_dlpack.device_of(self)

    def __format__(self, format_spec):
        """``f"{loss:.4f}"``: a 0-d tensor formats as its Python number (as PyTorch); other
        tensors take only the empty spec (their ``str``), else TypeError."""
        if self.ndim == 0:
            return self._scalar("a format string").__format__(format_spec)
        return object.__format__(self, format_spec)

    def item(self) -> int | float | bool:
        """The single element as a Python number (``torch.Tensor.item``).

        Raises RuntimeError unless the tensor has exactly one element.
        """
        return self._scalar(".item()")

    def _scalar(self, call):
        a = self._concrete(call)
        if a.size != 1:
            raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
        return a.reshape(()).item()

    def tolist(self) -> list | int | float | bool:
        """The data as (nested) Python lists (``torch.Tensor.tolist``)."""
        return self._concrete(".tolist()").tolist()

    def __float__(self):
        return float(self._scalar("float()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __bool__(self):
        a = self._concrete()
        if a.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(a.reshape(()).item())

    def __index__(self):
        if self.dtype.np.kind != "i" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._scalar("an index"))

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return Tensor._ng_printing.tensor_repr(self)

    def __reduce_ex__(self, proto):
        return (_rebuild, (self.detach().numpy().copy(), self._requires_grad))

    __str__ = __repr__



def _rebuild(array, requires_grad):
    t = Tensor._make(array)
    t._requires_grad = requires_grad
    return t

"""ops.keywords: PyTorch's keyword spellings layered over the public functions: ``out=``
(write the result into a given tensor), ``axis=`` (NumPy's name, which PyTorch takes
as an alias of ``dim=``) and ``input=``/``other=`` where a function names its operands
``x``/``y``.

Room: ops. The functions themselves stay keyword-free and fast; ``numgrad/__init__`` and
``ops.methods`` pass their public names through ``with_out`` / ``with_keywords`` once,
at import.
"""
from __future__ import annotations

import functools
import inspect
import warnings

import numgrad.dtypes as _dt
from numgrad.grad_mode import is_grad_enabled, no_grad
from numgrad.tensor import Tensor

# The top-level functions PyTorch gives ``out=`` that return one tensor, besides the
# registry rows whose ``api`` says ``out`` (``out_functions``).
OUT_FUNCTIONS = (
    "matmul", "mm", "mv", "addmm", "baddbmm", "bmm", "cat", "concat", "concatenate", "stack",
    "sum", "mean", "amax", "amin", "cumsum", "prod", "gather", "index_select", "tril", "triu",
    # factories: torch.rand(2, 2, out=c) fills c (the tutorials show it)
    "rand", "randn", "zeros", "ones", "empty", "full", "arange", "eye", "linspace", "randint",
    "randperm")
# Factories given out= and no dtype make out's dtype, as PyTorch's do.
_FACTORIES = frozenset(OUT_FUNCTIONS[OUT_FUNCTIONS.index("rand"):])


def out_functions() -> tuple:
    """Every public function name that takes ``out=``."""
    from numgrad.ops.registry import REGISTRY
    rows = [n for p in REGISTRY.values() if p.api is not None and p.api.out
            for n in p.api.names]
    return OUT_FUNCTIONS + tuple(rows)


# PyTorch's matrix products insist on an ``out`` of the result's own dtype.
_EXACT_DTYPE = {"matmul", "mm", "mv", "addmm", "baddbmm", "bmm"}
_SCALAR_NAME = {k: v.lower() for k, v in _dt.SCALAR_NAMES.items()}
_CATEGORY = {k: _dt._category(_dt.as_dtype(k)) for k in _dt.SCALAR_NAMES}


def with_out(fn, name):
    """``fn`` taking a keyword ``out=`` tensor too: the result is written into ``out``
    (resized if its shape differs, with PyTorch's warning when it was not empty) and
    ``out`` is returned."""
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return write_out(name, fn, args, kwargs, out)
    try:  # help() and IDEs show out= too
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return call
    if "out" not in sig.parameters and not any(
            p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        call.__signature__ = sig.replace(parameters=[*sig.parameters.values(), inspect.Parameter(
            "out", inspect.Parameter.KEYWORD_ONLY, default=None)])
    return call


def _tensors_in(args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))


def write_out(name, fn, args, kwargs, out):
    """Run ``fn`` and copy its result into ``out`` with PyTorch's checks: no autograd
    through ``out=``, the result's dtype must cast to ``out``'s (or equal it, for the matrix
    products)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and any(t.requires_grad for t in (out, *_tensors_in(args, kwargs))):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if name in _FACTORIES and kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": out.dtype}
    with no_grad():
        result = fn(*args, **kwargs)
        want, have = result.dtype, out.dtype
        if name in _EXACT_DTYPE and want is not have:
            raise RuntimeError(f"Expected out tensor to have dtype {_SCALAR_NAME[want.name]}, "
                               f"but got {_SCALAR_NAME[have.name]} instead")
        if _CATEGORY[want.name] > _CATEGORY[have.name]:
            raise RuntimeError(f"result type {_dt_title(want)} can't be cast to the desired "
                               f"output type {_dt_title(have)}")
        if out.shape != result.shape:
            if out.numel() != 0:
                warnings.warn(
                    f"An output with one or more elements was resized since it had shape "
                    f"{list(out.shape)}, which does not match the required output shape "
                    f"{list(result.shape)}. This behavior is deprecated, and in a future "
                    "PyTorch release outputs will not be resized unless they have zero "
                    "elements. You can explicitly reuse an out tensor t by resizing it, "
                    "inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
            from numgrad.creation import empty
            out._data = empty(result.shape, dtype=have, device=out.device)._data
        out.copy_(result)
    return out


def _dt_title(d):
    return _SCALAR_NAME[d.name].capitalize()


# PyTorch's names for parameters some numgrad functions spell in NumPy's or JAX's way.
_TORCH_NAMES = {"x": "input", "tensor": "input", "y": "other", "cond": "condition"}


def renames(fn) -> dict:
    """``{PyTorch's keyword: fn's parameter}`` for the keywords PyTorch users write that
    ``fn`` spells otherwise: ``axis`` for ``dim``, ``input``/``other``/``condition`` for
    ``x``/``y``/``cond``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    out = {"axis": "dim"} if "dim" in params and "axis" not in params else {}
    for own, torch_name in _TORCH_NAMES.items():
        if own in params and torch_name not in params:
            out[torch_name] = own
    return out


def with_keywords(fn, names: dict):
    """``fn`` taking PyTorch's keyword names too (``names``: theirs to its own)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            for theirs, own in names.items():
                if theirs in kwargs:
                    kwargs[own] = kwargs.pop(theirs)
        return fn(*args, **kwargs)
    return call


def install(namespace: dict) -> None:
    """Give the functions of a module namespace (``numgrad``'s) PyTorch's keyword names
    and ``out=``."""
    for name, fn in list(namespace.items()):
        if callable(fn) and not isinstance(fn, type) and not name.startswith("_"):
            names = renames(fn)
            if names:
                namespace[name] = with_keywords(fn, names)
    for name in out_functions():
        if name in namespace:
            namespace[name] = with_out(namespace[name], name)

"""ops.layout: reshape, permute, expand, cat, stack (and their public spellings).

Room: ops. These move or alias data without arithmetic; results that alias
their input share its version counter (``view=True``), like PyTorch's views.
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.ops.late as _late
from numgrad.ops.registry import Cost, defop, identity_lowering
from numgrad.tensor import Tensor  # for annotations
from numgrad.ops.dispatch import broadcast_shapes

_RESHAPE_NAMES = {"view": "ViewBackward0", "unsqueeze": "UnsqueezeBackward0",
                  "squeeze": "SqueezeBackward0", "flatten": "ViewBackward0",
                  "reshape": "ViewBackward0"}
_PERMUTE_NAMES = {"permute": "PermuteBackward0", "transpose": "TransposeBackward0",
                  "t": "TBackward0"}

reshape_p = defop("reshape", kind="layout", inputs=("x",), params=("shape", "op"), view=True,
                  impl=lambda x, shape, op: np.reshape(x, shape),
                  abstract=lambda x, shape, op: (tuple(shape), x.dtype),
                  # An op not named here is the node name itself: the parts of a packed
                  # decomposition (ops.decompositions.unpack) are named after it, as PyTorch's.
                  node=lambda p, s: _RESHAPE_NAMES.get(p["op"], p["op"]), cost=Cost(cheap=True))
permute_p = defop("permute", inputs=("x",), params=("dims", "op"), view=True,
                  impl=lambda x, dims, op: np.transpose(x, dims),
                  abstract=lambda x, dims, op: (tuple(x.shape[d] for d in dims), x.dtype),
                  node=lambda p, s: _PERMUTE_NAMES[p["op"]])
expand_p = defop("expand", kind="pointwise", inputs=("x",), params=("shape",), view=True,
                 impl=lambda x, shape: np.broadcast_to(x, shape),
                 abstract=lambda x, shape: (tuple(shape), x.dtype), lowering="expand",
                 # In a loop over the output's shape, reading x broadcast is the identity.
                 scalar=identity_lowering, cost=Cost(cheap=True), broadcasts=True)
cat_p = defop("cat", inputs=("*xs",), params=("dim",),
              impl=lambda *xs, dim: np.concatenate(xs, axis=dim),
              abstract=lambda *xs, dim: (_cat_shape([x.shape for x in xs], dim), xs[0].dtype))
stack_p = defop("stack", inputs=("*xs",), params=("dim",),
                impl=lambda *xs, dim: np.stack(xs, axis=dim),
                abstract=lambda *xs, dim: (xs[0].shape[:dim] + (len(xs),) + xs[0].shape[dim:],
                                           xs[0].dtype))


def _cat_shape(shapes, dim):
    s = list(shapes[0])
    s[dim] = sum(x[dim] for x in shapes)
    return tuple(s)


reshape_p.defvjp(lambda g, x_shape: reshape(g, x_shape))
permute_p.defvjp(lambda g, dims: permute_p(g, dims=tuple(np.argsort(dims).tolist()),
                                           op="permute"))
expand_p.defvjp(lambda g: g)  # the node sums it back to the input's shape
_late.reshape_p, _late.expand_p = reshape_p, expand_p  # (for views and reductions)


def _cat_vjp(g, shapes, dim):
    out, start = [], 0
    for s in shapes:
        idx = (slice(None),) * dim + (slice(start, start + s[dim]),)
        out.append(g[idx])   # (ops.indexing, above this module, installs Tensor.__getitem__)
        start += s[dim]
    return out


def _stack_vjp(g, shapes, dim):
    return [g[(slice(None),) * dim + (i,)] for i in range(len(shapes))]


cat_p.defvjp(_cat_vjp)
stack_p.defvjp(_stack_vjp)


# ------------------------------------------------------------- public API
def _dim(d, ndim):
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {d})")
    return d % max(ndim, 1)


def _infer_shape(shape, numel):
    shape = list(shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[unknown[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(int(s) for s in shape)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def reshape(x, *shape, _op="reshape") -> Tensor:
    """Same data, new shape (one dim may be -1) (``torch.reshape``, ``jax.numpy.reshape``); a
    view when the layout allows. Raises RuntimeError when the sizes do not match."""
    shape = _infer_shape(_shape_args(shape), x.numel())
    if shape == x.shape and _op in ("reshape", "view"):
        return reshape_p(x, shape=shape, op="view")
    return reshape_p(x, shape=shape, op="view" if _op == "reshape" else _op)


def view(x, *shape) -> Tensor:
    """The same data with a new shape, always sharing storage (``torch.Tensor.view``).

    Raises RuntimeError when the shape would need a copy (use ``reshape``).
    """
    out = reshape(x, *shape, _op="view")
    if x.numel() > 1 and out._base is None:  # traced: ops.views decides as NumPy would
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return out


def flatten(x, start_dim=0, end_dim=-1) -> Tensor:
    """Dims ``start_dim`` to ``end_dim`` merged into one (``torch.flatten``).

    Raises RuntimeError when ``start_dim`` comes after ``end_dim``.
    """
    if x.ndim == 0:
        return reshape(x, (1,), _op="flatten")
    s, e = _dim(start_dim, x.ndim), _dim(end_dim, x.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return x
    shape = x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape, _op="flatten")


def squeeze(x, dim=None) -> Tensor:
    """Size-1 dims removed: all of them, or those among ``dim`` (``torch.squeeze``,
    ``jax.numpy.squeeze``). Raises IndexError for a dim out of range.
    """
    if dim is None:
        shape = tuple(s for s in x.shape if s != 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_dim(d, x.ndim) for d in dims}
        shape = tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1))
    return reshape_p(x, shape=shape, op="squeeze")


def unsqueeze(x, dim) -> Tensor:
    """A new size-1 dim inserted at ``dim`` (``torch.unsqueeze``,
    ``jax.numpy.expand_dims``). Raises IndexError for a dim out of range.
    """
    d = _dim(dim, x.ndim + 1)
    return reshape_p(x, shape=x.shape[:d] + (1,) + x.shape[d:], op="unsqueeze")


def permute(x, *dims) -> Tensor:
    """The dims reordered as ``dims`` (``torch.permute``, ``jax.numpy.transpose``); a view.

    Raises RuntimeError unless ``dims`` is a permutation of all dims.
    """
    dims = _shape_args(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {x.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_dim(d, x.ndim) for d in dims)
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute_p(x, dims=dims, op="permute")


def transpose(x, dim0, dim1) -> Tensor:
    """Dims ``dim0`` and ``dim1`` swapped (``torch.transpose``, ``jax.numpy.swapaxes``);
    a view. Raises IndexError for a dim out of range.
    """
    if x.ndim == 0:
        return permute_p(x, dims=(), op="transpose")
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    dims = list(range(x.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute_p(x, dims=tuple(dims), op="transpose")


def t(x) -> Tensor:
    """The transpose of a matrix (0-d and 1-d tensors unchanged) (``torch.t``).

    Raises RuntimeError for more than 2 dims.
    """
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return permute_p(x, dims=tuple(reversed(range(x.ndim))), op="t")


def T(x) -> Tensor:
    """All dims reversed (``torch.Tensor.T``)."""
    return permute_p(x, dims=tuple(reversed(range(x.ndim))), op="permute")


def expand(x, *shape) -> Tensor:
    """A broadcast view with size-1 dims stretched to ``shape`` (-1 keeps a size)
    (``torch.Tensor.expand``). Raises RuntimeError when a non-1 size differs.
    """
    shape = list(_shape_args(shape))
    if len(shape) < x.ndim:
        raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({x.ndim})")
    lead = len(shape) - x.ndim
    for i, s in enumerate(x.shape):
        if shape[lead + i] == -1:
            shape[lead + i] = s
        elif s != 1 and s != shape[lead + i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[lead + i]}) must match the existing size "
                f"({s}) at non-singleton dimension {lead + i}.  Target sizes: {shape}.  Tensor "
                f"sizes: {list(x.shape)}")
    shape = tuple(shape)
    if shape == x.shape:
        return expand_p(x, shape=shape)
    return expand_p(x, shape=shape)


def broadcast_to(x, shape) -> Tensor:
    """``input`` broadcast to ``shape`` (``torch.broadcast_to``, ``jax.numpy.broadcast_to``).

    Raises RuntimeError when the shapes are not compatible.
    """
    return expand(x, tuple(shape))


def _seq(tensors, name):
    from numgrad.tensor import Tensor
    if isinstance(tensors, Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{name}(): argument 'tensors' must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument 'tensors' must be a sequence of Tensors, but "
                            f"element {i} is {type(t).__name__}")
    dt = tensors[0].dtype
    if any(t.dtype is not dt for t in tensors):
        from numgrad.dtypes import promote
        dt = promote([(t.dtype, t.ndim, False) for t in tensors])
        tensors = [t.to(dt) for t in tensors]
    return tensors


def cat(tensors, dim=0) -> Tensor:
    """Join tensors along an existing dim (``torch.cat``, ``jax.numpy.concatenate``).

    Raises RuntimeError when the other dims differ, TypeError for a non-sequence.
    """
    tensors = _seq(tensors, "cat")
    ref = tensors[0]
    d = _dim(dim, ref.ndim)
    for i, t in enumerate(tensors):
        if t.ndim != ref.ndim or any(a != b for k, (a, b) in enumerate(zip(t.shape, ref.shape))
                                     if k != d):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                               f"size {ref.shape} but got size {t.shape} for tensor number {i} in "
                               "the list.")
    return cat_p(tensors, dim=d)


def stack(tensors, dim=0) -> Tensor:
    """Join same-shape tensors along a new dim (``torch.stack``, ``jax.numpy.stack``).

    Raises RuntimeError when the shapes differ.
    """
    tensors = _seq(tensors, "stack")
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if t.shape != ref.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ref.shape)} at entry 0 and {list(t.shape)} at entry {i}")
    return stack_p(tensors, dim=_dim(dim, ref.ndim + 1))


__all__ = ["reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t",
           "expand", "broadcast_to", "cat", "stack", "broadcast_shapes"]

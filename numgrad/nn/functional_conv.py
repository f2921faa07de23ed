"""nn.functional_conv: padding, convolution, pooling, unfold/fold and interpolation.

Room: nn. Every function is a composite over primitives (``ops.conv``'s windows, matmul,
reductions, indexing), so its gradient at every order and its ``@ng.jit`` form come from
their rules; each ends in ``named`` so ``grad_fn`` prints PyTorch's node. Shapes are
``(N, C, *spatial)``, with the unbatched ``(C, *spatial)`` accepted where PyTorch does.
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.ops as ops
import numgrad.tracing_hook as tracing_hook
from numgrad.ops.conv import col2im, im2col, max_pool, named, window_shape
from numgrad.ops.convolution import conv
from numgrad.ops.losses import fused
from numgrad.ops.indexing import index_add_p
from numgrad.tensor import Tensor


def _tuple(v, n, name="kernel_size"):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of "
                               f"{n} values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _const(a, like):
    """A NumPy constant as a tensor of ``like``'s dtype on ``like``'s device."""
    t = Tensor._make(np.asarray(a, dtype=like._data.dtype))
    return t if like.device.type == "cpu" else t.to(like.device)


def _batched(input, n, name):
    """``(input with a batch dim, whether one was added)``; PyTorch's error otherwise."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim == n + 1:
        return ops.unsqueeze(input, 0), True
    if input.ndim != n + 2:
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    return input, False


# ------------------------------------------------------------------------------ pad
def _pad_pairs(input, pad):
    """``[(lo, hi)]`` for the trailing dims, in dim order (``pad`` lists the last dim
    first, as PyTorch's does)."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.ndim}")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    return pairs[::-1]


def _constant_pad(x, pairs, value=0.0):
    k = len(pairs)
    lead = x.ndim - k
    if any(lo < 0 or hi < 0 for lo, hi in pairs):  # negative padding crops
        crop = tuple(slice(max(-lo, 0), s - max(-hi, 0))
                     for (lo, hi), s in zip(pairs, x.shape[lead:]))
        x = ops.getitem(x, (slice(None),) * lead + crop)
        pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if not any(lo or hi for lo, hi in pairs):
        return x
    shape = tuple(x.shape[:lead]) + tuple(s + lo + hi for (lo, hi), s in
                                          zip(pairs, x.shape[lead:]))
    index = (slice(None),) * lead + tuple(slice(lo, lo + s)
                                          for (lo, hi), s in zip(pairs, x.shape[lead:]))
    out = index_add_p(x, shape=shape, index=index)  # zeros around x
    if value:
        inside = np.zeros(shape[lead:], bool)
        inside[index[lead:]] = True
        out = ops.where(_on(inside, x), out, value)
    return out


def _source_index(n, lo, hi, mode):
    j = np.arange(-lo, n + hi)
    if mode == "reflect":
        period = 2 * (n - 1)
        j = np.abs(j) % period if period else np.zeros_like(j)
        return np.where(j >= n, period - j, j)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    return j % n  # circular


_PAD_NODES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0"}


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims of ``input``; ``pad`` is ``(left, right, top, bottom, ...)``,
    last dim first (``torch.nn.functional.pad``). ``mode`` is "constant" (with ``value``,
    default 0; negative pads crop), "reflect", "replicate" or "circular".

    >>> F.pad(ng.ones(1, 2), (1, 1))
    tensor([[0., 1., 1., 0.]])

    Raises RuntimeError for an odd-length ``pad`` or a reflect pad not smaller than its dim.
    """
    pairs = _pad_pairs(input, pad)
    if mode == "constant":
        out = _constant_pad(input, pairs, value or 0.0)
        if out is input:  # nothing to pad: a new tensor all the same, as PyTorch's
            out = ops.clone(input)
        return named(out, "ConstantPadNdBackward0")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pairs)
    if not (1 <= k <= 3 and k + 1 <= input.ndim <= k + 2):
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {input.ndim}D input tensor.")
    lead = input.ndim - k
    for i, ((lo, hi), n) in enumerate(zip(pairs, input.shape[lead:])):
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {lead + i} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    # One gather: each padded dim's source index, broadcast against the others'.
    idx = []
    for i, ((lo, hi), n) in enumerate(zip(pairs, input.shape[lead:])):
        shape = [1] * k
        shape[i] = -1
        idx.append(_source_index(n, lo, hi, mode).reshape(shape))
    out = ops.getitem(input, (slice(None),) * lead + tuple(idx))
    node = _PAD_NODES.get(mode)
    return named(out, node.format(k)) if node else out


# ------------------------------------------------------------------------ convolution
def _conv_padding(padding, n, kernel, dilation, stride):
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * n
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             "{'valid', 'same'}")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pairs = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            pairs.append((total // 2, total - total // 2))
        return pairs
    return [(p, p) for p in _tuple(padding, n, "padding")]


def _check_conv(x, weight, groups, n, transposed=False):
    if not isinstance(weight, Tensor):
        raise TypeError(f"conv{n}d(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if weight.ndim != n + 2:
        raise RuntimeError("weight should have at least three dimensions" if weight.ndim < 3
                           else f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"conv{n}d, but got weight of size {list(weight.shape)}")
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    c = x.shape[1]
    expect = weight.shape[0] if transposed else weight.shape[1] * groups
    if c != expect:
        if transposed:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                               f"expected input{list(x.shape)} to have {weight.shape[0]} "
                               f"channels, but got {c} channels instead")
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {expect} channels, but got "
                           f"{c} channels instead")
    if not transposed and weight.shape[0] % groups:
        raise RuntimeError("Given groups=%d, expected weight to be divisible by %d at dimension "
                           "0, but got weight of size %s instead"
                           % (groups, groups, list(weight.shape)))


def _cpu_primitive(x, weight, bias):
    """Whether a convolution (or a max pool, ``weight`` and ``bias`` None) runs as its CPU
    primitives (``ops.convolution``, ``ops.conv.max_pool``): eagerly on NumPy payloads, or
    traced by ``@ng.jit`` for the CPU with no ``vmap`` or forward-mode level around the call
    (those, and devices, take the composite, which they know)."""
    if fused(x, weight, bias):
        return True
    if tracing_hook.capture is None or x.device.type != "cpu":
        return False
    for t in (x, weight, bias):
        if t is None:
            continue
        if (not isinstance(t, Tensor) or t.dtype is not x.dtype or not t.is_floating_point()
                or t.device.type != "cpu" or not t.numel()):
            return False
        interp = getattr(t._data, "_ng_interpreter", None)
        if (interp is None and type(t._data) is not np.ndarray
                or getattr(interp, "_ng_depth", 0) or getattr(interp, "on_device", False)):
            return False  # a plan for a device traces the composite: its matmuls run there
    return True


def _convnd(n, input, weight, bias, stride, padding, dilation, groups, name):
    x, unbatched = _batched(input, n, name)
    _check_conv(x, weight, groups, n)
    kernel = tuple(weight.shape[2:])
    stride = _tuple(stride, n, "stride")
    dilation = _tuple(dilation, n, "dilation")
    pairs = _conv_padding(padding, n, kernel, dilation, stride)
    spatial = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pairs))
    if (_cpu_primitive(x, weight, bias) and all(lo == hi for lo, hi in pairs)
            and all(s >= d * (k - 1) + 1 for s, k, d in zip(spatial, kernel, dilation))):
        out = conv(x, weight, bias, stride, [lo for lo, _ in pairs], dilation, groups)
        return ops.squeeze(out, 0) if unbatched else out  # eager: two primitives
    x = _constant_pad(x, pairs)
    spatial = x.shape[2:]
    if any(s < d * (k - 1) + 1 for s, k, d in zip(spatial, kernel, dilation)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, spatial))}). Kernel size: "
                           f"({' x '.join(map(str, kernel))}). Kernel size can't be greater "
                           "than actual input size")
    out_sp = window_shape(spatial, kernel, stride, dilation)
    nb, c = x.shape[:2]
    o = weight.shape[0]
    cols = im2col(x, kernel, stride, dilation)  # (N, C, *kernel, *out)
    kk = math.prod(kernel)
    length = math.prod(out_sp)
    if groups == 1:
        out = ops.matmul(ops.reshape(weight, (o, c * kk)), ops.reshape(cols, (nb, c * kk, length)))
    else:
        cols = ops.reshape(cols, (nb, groups, c // groups * kk, length))
        w = ops.reshape(weight, (groups, o // groups, c // groups * kk))
        out = ops.matmul(w, cols)
    out = ops.reshape(out, (nb, o) + out_sp)
    if bias is not None:
        out = out + ops.reshape(bias, (o,) + (1,) * n)
    out = named(out, "ConvolutionBackward0")
    return ops.squeeze(out, 0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation of ``(N, C_in, L)`` with ``weight`` ``(C_out, C_in/groups, k)``
    (``torch.nn.functional.conv1d``); ``padding`` is an int or "same"/"valid".

    >>> F.conv1d(ng.ones(1, 1, 4), ng.ones(1, 1, 2)).shape
    torch.Size([1, 1, 3])
    """
    return _convnd(1, input, weight, bias, stride, padding, dilation, groups, "conv1d")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation of ``(N, C_in, H, W)`` with ``weight``
    ``(C_out, C_in/groups, kH, kW)`` (``torch.nn.functional.conv2d``): windows (im2col)
    times the weight matrix.

    >>> F.conv2d(ng.ones(1, 1, 4, 4), ng.ones(2, 1, 3, 3)).shape
    torch.Size([1, 2, 2, 2])

    Raises RuntimeError when the channels do not match the weight's (PyTorch's text).
    """
    return _convnd(2, input, weight, bias, stride, padding, dilation, groups, "conv2d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The adjoint of ``conv2d`` (``torch.nn.functional.conv_transpose2d``): ``weight`` is
    ``(C_in, C_out/groups, kH, kW)``; each input pixel scatters its weighted kernel.

    >>> F.conv_transpose2d(ng.ones(1, 1, 2, 2), ng.ones(1, 1, 3, 3), stride=2).shape
    torch.Size([1, 1, 5, 5])
    """
    x, unbatched = _batched(input, 2, "conv_transpose2d")
    _check_conv(x, weight, groups, 2, transposed=True)
    stride = _tuple(stride, 2, "stride")
    dilation = _tuple(dilation, 2, "dilation")
    padding = _tuple(padding, 2, "padding")
    output_padding = _tuple(output_padding, 2, "output_padding")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation,"
                               f" but got output_padding_height: {output_padding[0]} "
                               f"output_padding_width: {output_padding[1]} stride_height: "
                               f"{stride[0]} stride_width: {stride[1]} dilation_height: "
                               f"{dilation[0]} dilation_width: {dilation[1]}")
    nb, cin, h, w = x.shape
    kernel = tuple(weight.shape[2:])
    cout_g = weight.shape[1]
    kk = kernel[0] * kernel[1]
    g = groups
    xs = ops.reshape(x, (nb, g, cin // g, h * w))
    wt = ops.transpose(ops.reshape(weight, (g, cin // g, cout_g * kk)), 1, 2)
    cols = ops.reshape(ops.matmul(wt, xs), (nb, g * cout_g) + kernel + (h, w))
    full = tuple((s_in - 1) * st + d * (k - 1) + 1 + op for s_in, st, d, k, op in
                 zip((h, w), stride, dilation, kernel, output_padding))
    out = col2im(cols, (nb, g * cout_g) + full, kernel, stride, dilation)
    if any(padding):
        out = _constant_pad(out, [(-p, -p) for p in padding])
    if bias is not None:
        out = out + ops.reshape(bias, (-1, 1, 1))
    out = named(out, "ConvolutionBackward0")
    return ops.squeeze(out, 0) if unbatched else out


# ---------------------------------------------------------------------------- pooling
def _pool_geometry(spatial, kernel, stride, padding, dilation, ceil_mode):
    """Per dim ``(out, extra)``: the output extent and the padding past ``hi`` that
    ``ceil_mode``'s last partial window reads."""
    res = []
    for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation):
        span = s + 2 * p - d * (k - 1) - 1
        out = (-(-span // st) if ceil_mode else span // st) + 1
        if ceil_mode and (out - 1) * st >= s + p:
            out -= 1
        need = (out - 1) * st + d * (k - 1) + 1
        res.append((out, max(need - (s + 2 * p), 0)))
    return res


def _pool_node(n, node):
    # PyTorch runs its 1-D pools as 2-D ones on an unsqueezed input: its node is the squeeze.
    return "SqueezeBackward1" if n == 1 else node.format(n)


def _pool_args(n, kernel_size, stride, padding, dilation):
    kernel = _tuple(kernel_size, n)
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, n)
    padding = _tuple(padding, n)
    dilation = _tuple(dilation, n)
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    return kernel, stride, padding, dilation


def _windows(x, n, kernel, stride, padding, dilation, ceil_mode, value):
    """``(windows (N, C, prod(kernel), *out), out extents)`` over ``x`` padded by ``value``."""
    geo = _pool_geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    pairs = [(p, p + extra) for p, (_, extra) in zip(padding, geo)]
    xp = _constant_pad(x, pairs, value)
    cols = im2col(xp, kernel, stride, dilation)
    out_sp = tuple(o for o, _ in geo)
    return ops.reshape(cols, tuple(x.shape[:2]) + (math.prod(kernel),) + out_sp), out_sp


def _max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    # A running max over the kernel's offsets, each a strided view of the padded input: no
    # window copy and no argmax (NumPy's argmax over a short axis measured 5x slower than
    # the whole loop on LeNet's pools).
    # The update rule is PyTorch's: take the new value when greater or NaN, so a tie keeps
    # the first offset in row-major order and the gradient goes there alone.
    x, unbatched = _batched(input, n, f"max_pool{n}d")
    kernel, stride, padding, dilation = _pool_args(n, kernel_size, stride, padding, dilation)
    geo = _pool_geometry(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    xp = _constant_pad(x, [(p, p + extra) for p, (_, extra) in zip(padding, geo)], -math.inf)
    out = flat = None
    # On the CPU, eagerly or traced by @ng.jit, one primitive, and one Numba pass for its
    # gradient; with indices, or where ``_cpu_primitive`` says no (a device, a traced vmap
    # or forward mode), the compare chain below. Traced, the primitive (a NumPy step and a
    # Numba step between the kernels) took 3-4% less CPU time per LeNet step than the
    # chain, which @ng.jit fuses with the ops around it but whose gradient is one index_add
    # step per kernel offset (medians of 60 interleaved steps; the chain had won while the
    # gradient was NumPy passes).
    fused = not return_indices and (type(xp._data) is np.ndarray
                                    or _cpu_primitive(xp, None, None))
    if fused:
        out = max_pool(xp, kernel, stride, dilation, tuple(e for e, _ in geo))
    for offs in () if fused else np.ndindex(*kernel):
        view = ops.getitem(xp, (slice(None),) * 2 + tuple(
            slice(o * d, o * d + st * (e - 1) + 1, st)
            for o, d, st, (e, _) in zip(offs, dilation, stride, geo)))
        pos = (_on(_window_position(offs, stride, padding, dilation, geo, x.shape[2:]), x)
               if return_indices else None)
        if out is None:
            out, flat = view, pos
            if math.prod(kernel) == 1:  # the view is the result: its own storage instead
                out = ops.clone(view)
            continue
        take = (view > out) | (view != view)
        out = ops.where(take, view, out)
        if return_indices:
            flat = ops.where(take, pos, flat)
    if not fused or n != 2:  # (the primitive's node is already 2-d's; 1-d adds a Squeeze)
        out = named(out, _pool_node(n, "MaxPool{}DWithIndicesBackward0"))
    if return_indices:
        flat = ops.expand(flat, out.shape)  # a 1-element kernel leaves it unbroadcast
    if unbatched:
        out = ops.squeeze(out, 0)
        flat = ops.squeeze(flat, 0) if return_indices else None
    return (out, flat) if return_indices else out


def _window_position(offs, stride, padding, dilation, geo, spatial):
    """The flat index into the input's spatial plane read at kernel offset ``offs`` of every
    window (an int64 array over the output's spatial shape)."""
    flat = np.zeros((), np.int64)
    for i, (o, st, p, d, (e, _), s) in enumerate(zip(offs, stride, padding, dilation, geo,
                                                   spatial)):
        pos = np.arange(e) * st - p + o * d
        flat = np.add.outer(flat * s, pos)
    return flat


def _on(a, like):
    """The NumPy array ``a`` (its own dtype) as a tensor on ``like``'s device."""
    t = Tensor._make(np.ascontiguousarray(a))
    return t if like.device.type == "cpu" else t.to(like.device)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor | tuple:
    """Max over sliding windows of ``(N, C, L)`` (``torch.nn.functional.max_pool1d``);
    ``stride`` defaults to ``kernel_size``, padding reads as ``-inf``.

    >>> F.max_pool1d(ng.tensor([[[1., 3., 2., 0.]]]), 2)
    tensor([[[3., 2.]]])
    """
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor | tuple:
    """Max over sliding windows of ``(N, C, H, W)`` (``torch.nn.functional.max_pool2d``);
    with ``return_indices`` also each max's flat index into its ``H * W`` plane.

    >>> F.max_pool2d(ng.arange(16.).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])

    Raises RuntimeError when ``padding`` exceeds half the kernel (PyTorch's text).
    """
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _avg_divisor(spatial, kernel, stride, padding, out_sp, count_include_pad):
    """The per-window element count PyTorch divides by, as an array over ``out_sp``."""
    div = np.ones((), np.float64)
    for s, k, st, p, o in zip(spatial, kernel, stride, padding, out_sp):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        size = end - start
        if not count_include_pad:
            size = np.minimum(end, s) - np.maximum(start, 0)
        div = np.multiply.outer(div, size)
    return div


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    name = f"avg_pool{n}d"
    x, unbatched = _batched(input, n, name)
    kernel, stride, padding, dilation = _pool_args(n, kernel_size, stride, padding, 1)
    cols, out_sp = _windows(x, n, kernel, stride, padding, dilation, ceil_mode, 0.0)
    total = ops.sum(cols, 2)
    if divisor_override:
        out = total / divisor_override
    else:
        div = _avg_divisor(x.shape[2:], kernel, stride, padding, out_sp, count_include_pad)
        out = total / (float(div.flat[0]) if (div == div.flat[0]).all() else _const(div, x))
    out = named(out, _pool_node(n, "AvgPool{}DBackward0"))
    return ops.squeeze(out, 0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of ``(N, C, L)`` (``torch.nn.functional.avg_pool1d``).

    >>> F.avg_pool1d(ng.tensor([[[1., 3., 2., 0.]]]), 2)
    tensor([[[2., 1.]]])
    """
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of ``(N, C, H, W)`` (``torch.nn.functional.avg_pool2d``);
    ``count_include_pad`` counts padded zeros in the divisor, ``divisor_override`` replaces it.

    >>> F.avg_pool2d(ng.ones(1, 1, 4, 4), 2).shape
    torch.Size([1, 1, 2, 2])
    """
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_sizes(output_size, spatial, n, name):
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
    if len(sizes) != n:  # PyTorch's error class (its texts vary by op)
        raise RuntimeError(f"{name}: output_size must be {n} ints, got {output_size}")
    return tuple(s if o is None else int(o) for o, s in zip(sizes, spatial))


def _adaptive(n, input, output_size, mode, return_indices=False):
    name = f"adaptive_{mode}_pool{n}d"
    x, unbatched = _batched(input, n, name)
    spatial = tuple(x.shape[2:])
    out_sp = _adaptive_sizes(output_size, spatial, n, name)
    flat = None
    if all(s % o == 0 for s, o in zip(spatial, out_sp)) and not return_indices:
        # Regular windows: one strided view.
        kernel = tuple(s // o for s, o in zip(spatial, out_sp))
        cols = ops.reshape(im2col(x, kernel, kernel, (1,) * n),
                           tuple(x.shape[:2]) + (math.prod(kernel),) + out_sp)
        red = 2
        weights = None
    else:  # PyTorch's windows [floor(i*s/o), ceil((i+1)*s/o)): gathered, padded to the longest
        index, mask = [], None
        for i, (s, o) in enumerate(zip(spatial, out_sp)):
            start = (np.arange(o) * s) // o
            end = -((-(np.arange(o) + 1) * s) // o)
            k = int((end - start).max())
            pos = start[:, None] + np.arange(k)[None, :]
            ok = pos < end[:, None]
            shape = [1] * (2 * n)
            shape[2 * i], shape[2 * i + 1] = o, k
            index.append(np.minimum(pos, end[:, None] - 1).reshape(shape))
            m = ok.reshape(shape)
            mask = m if mask is None else mask & m
        g = ops.getitem(x, (slice(None), slice(None)) + tuple(index))  # (N, C, o1, k1, ...)
        perm = tuple(2 * i for i in range(n)) + tuple(2 * i + 1 for i in range(n))
        g = ops.permute(g, 0, 1, *(2 + p for p in perm))
        cols = ops.reshape(g, tuple(x.shape[:2]) + out_sp + (-1,))
        weights = np.transpose(mask, perm).reshape(out_sp + (-1,))  # mask: (o1, k1, o2, ..)
        red = -1
        flat = np.zeros((), np.int64)  # each gathered element's flat index in the plane
        for i, s in enumerate(spatial):
            flat = flat * s + index[i]
        flat = np.transpose(flat, perm).reshape(out_sp + (-1,))
    if mode == "max":
        if weights is not None:
            cols = ops.where(_on(weights, x), cols, -math.inf)
        out, arg = ops.max(cols, red)
        node = _pool_node(n, "AdaptiveMaxPool{}DBackward0")
        if return_indices:  # the picked element's flat index: a one-hot sum, traceable
            hit = ops.unsqueeze(arg, -1) == _on(np.arange(flat.shape[-1]), x)
            indices = ops.sum(ops.where(hit, _on(flat, x), 0), -1)
            out = named(out, node)
            if unbatched:
                return ops.squeeze(out, 0), ops.squeeze(indices, 0)
            return out, indices
    else:
        if weights is not None:
            w = weights / weights.sum(-1, keepdims=True)
            out = ops.sum(cols * _const(w, x), red)
        else:
            out = ops.mean(cols, red)
        node = _pool_node(n, "AdaptiveAvgPool{}DBackward0")
    out = named(out, node)
    return ops.squeeze(out, 0) if unbatched else out


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Mean over ``output_size`` windows covering ``(N, C, L)``
    (``torch.nn.functional.adaptive_avg_pool1d``).

    >>> F.adaptive_avg_pool1d(ng.ones(1, 2, 5), 2).shape
    torch.Size([1, 2, 2])
    """
    return _adaptive(1, input, output_size, "avg")


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Mean over an ``output_size`` grid of windows covering ``(N, C, H, W)``
    (``torch.nn.functional.adaptive_avg_pool2d``); ``None`` keeps a dim's size.

    >>> F.adaptive_avg_pool2d(ng.ones(1, 2, 5, 7), (2, 3)).shape
    torch.Size([1, 2, 2, 3])
    """
    return _adaptive(2, input, output_size, "avg")


def adaptive_max_pool2d(input: Tensor, output_size,
                        return_indices: bool = False) -> Tensor | tuple:
    """Max over an ``output_size`` grid of windows covering ``(N, C, H, W)``
    (``torch.nn.functional.adaptive_max_pool2d``); with ``return_indices`` also each max's
    flat index into its ``H * W`` plane.

    >>> F.adaptive_max_pool2d(ng.ones(1, 2, 5, 7), 3).shape
    torch.Size([1, 2, 3, 3])
    """
    return _adaptive(2, input, output_size, "max", return_indices)


# ----------------------------------------------------------------------- unfold / fold
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding ``(N, C, H, W)`` windows as columns ``(N, C * kH * kW, L)``
    (``torch.nn.functional.unfold``, im2col).

    >>> F.unfold(ng.ones(1, 2, 3, 3), 2).shape
    torch.Size([1, 8, 4])
    """
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.ndim}D)")
    x, unbatched = _batched(input, 2, "unfold")
    kernel, dilation = _tuple(kernel_size, 2), _tuple(dilation, 2, "dilation")
    padding, stride = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    x = _constant_pad(x, [(p, p) for p in padding])
    cols = im2col(x, kernel, stride, dilation)
    out = ops.reshape(cols, (x.shape[0], x.shape[1] * kernel[0] * kernel[1], -1))
    out = named(out, "Im2ColBackward0")
    return ops.squeeze(out, 0) if unbatched else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Columns ``(N, C * kH * kW, L)`` summed back into ``(N, C, *output_size)``
    (``torch.nn.functional.fold``, col2im: the adjoint of ``unfold``).

    >>> F.fold(ng.ones(1, 4, 4), (3, 3), 2)[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.ndim}D)")
    x, unbatched = _batched(input, 1, "fold")
    size = _tuple(output_size, 2, "output_size")
    kernel, dilation = _tuple(kernel_size, 2), _tuple(dilation, 2, "dilation")
    padding, stride = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    kk = kernel[0] * kernel[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={kernel}")
    padded = tuple(s + 2 * p for s, p in zip(size, padding))
    blocks = window_shape(padded, kernel, stride, dilation)
    if math.prod(blocks) != x.shape[2]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation="
                           f"{dilation}, padding={padding}, stride={stride}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, but got "
                           f"input.size(2)={x.shape[2]}.")
    c = x.shape[1] // kk
    cols = ops.reshape(x, (x.shape[0], c) + kernel + blocks)
    out = col2im(cols, (x.shape[0], c) + padded, kernel, stride, dilation)
    if any(padding):
        out = _constant_pad(out, [(-p, -p) for p in padding])
    out = named(out, "Col2ImBackward0")
    return ops.squeeze(out, 0) if unbatched else out


# ------------------------------------------------------------------------ interpolate
def _source_scale(n_in, n_out, scale, align_corners):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None else n_in / n_out


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of ``(N, C, *spatial)`` to ``size`` or by ``scale_factor``
    (``torch.nn.functional.interpolate``); ``mode`` "nearest" (1-D or 2-D) or "bilinear"
    (2-D, with ``align_corners``).

    >>> F.interpolate(ng.ones(1, 1, 2, 2), scale_factor=2).shape
    torch.Size([1, 1, 4, 4])

    Raises ValueError when both or neither of ``size`` and ``scale_factor`` are given.
    """
    n = input.ndim - 2
    if n < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                         f"{input.ndim}D) for the modes: nearest | linear | bilinear | bicubic "
                         f"| trilinear | area | nearest-exact (got {mode})")
    if mode not in ("nearest", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, "
                                  "bilinear)")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if mode == "bilinear" and n != 2:
        raise NotImplementedError(f"Got {input.ndim}D input, but bilinear mode needs 4D input")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None
                         else "either size or scale_factor should be defined")
    spatial = tuple(input.shape[2:])
    if size is not None:
        out_sp = _tuple(size, n, "size")
        scales = (None,) * n
    else:
        scales = tuple(float(s) for s in (scale_factor if isinstance(scale_factor, (list, tuple))
                                          else (scale_factor,) * n))
        out_sp = tuple(int(math.floor(s * f)) for s, f in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * n
    x = input
    lead = (slice(None),) * 2
    if mode == "nearest":
        index = []
        for i, (s, o, f) in enumerate(zip(spatial, out_sp, scales)):
            src = np.minimum(np.floor(np.arange(o) * _source_scale(s, o, f, False)), s - 1)
            shape = [1] * n
            shape[i] = -1
            index.append(src.astype(np.int64).reshape(shape))
        return named(ops.getitem(x, lead + tuple(index)), f"UpsampleNearest{n}DBackward0")
    for i, (s, o, f) in enumerate(zip(spatial, out_sp, scales)):  # separable: one dim a time
        r = _source_scale(s, o, f, bool(align_corners))
        dst = np.arange(o, dtype=np.float64)
        src = dst * r if align_corners else np.maximum((dst + 0.5) * r - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), s - 1)
        i1 = np.minimum(i0 + 1, s - 1)
        lam = (src - i0).reshape((-1,) + (1,) * (n - 1 - i))
        pre = (slice(None),) * i
        a = ops.getitem(x, lead + pre + (i0,))
        b = ops.getitem(x, lead + pre + (i1,))
        x = a + (b - a) * _const(lam, x)
    return named(x, "UpsampleBilinear2DBackward0")

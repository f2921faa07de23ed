"""backends.cpu.arrays_ir: the kernels' array allocation and reshaping, lowered inline.

Room: compiler. ``np.empty``, ``np.full`` and ``ndarray.reshape`` are compiled by
Numba as functions of their own in ``numba.np.arrayobj``, and a kernel that calls
them keeps their environments: loading it from the disk cache in a new process
imports ``numba.np.arrayobj`` to rebuild them (a good part of a warm start:
docs/design-notes.md, "Warm start"). These intrinsics emit the same IR inside the
kernel instead, so a loaded kernel references nothing but its own environment.

* ``alloc(shape, dtype)``: ``np.empty(shape, dtype)``, C order; ``dtype`` is a
  NumPy scalar type (``np.float64``) or a value of the wanted type.
* ``view(a, shape)``: ``a.reshape(shape)`` for a C-contiguous ``a``; the view
  shares ``a``'s memory. The sizes are checked (one compare per call), because
  the generated code relies on them: a mismatch raises ValueError.
* ``full(shape, value)``: ``np.full(shape, value)``.

Shapes are an int or a tuple of ints.
"""
from __future__ import annotations

from numba import njit, types
from numba.core import cgutils, ir_utils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic


def _ndim(shape):
    if isinstance(shape, types.Integer):
        return 1
    if isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape):
        return len(shape)
    return None


def _dims(context, builder, shape_ty, shape):
    if isinstance(shape_ty, types.Integer):
        return [context.cast(builder, shape, shape_ty, types.intp)]
    return [context.cast(builder, builder.extract_value(shape, i), t, types.intp)
            for i, t in enumerate(shape_ty)]


def _element_type(dtype):
    if isinstance(dtype, types.NumberClass):
        return dtype.instance_type
    if isinstance(dtype, types.DType):
        return dtype.dtype
    if isinstance(dtype, (types.Number, types.Boolean)):
        return dtype
    return None


@intrinsic
def alloc(typingctx, shape, dtype):
    nd, elem = _ndim(shape), _element_type(dtype)
    if not nd or elem is None:
        return None
    arrty = types.Array(elem, nd, "C")

    def codegen(context, builder, sig, args):
        # What Numba's np.empty does, less its compiled allocator trampoline (whose
        # environment would bring numba.np.arrayobj back at load time).
        from numba.np.arrayobj import populate_array

        dims = _dims(context, builder, sig.args[0], args[0])
        item = context.get_constant(types.intp, context.get_abi_sizeof(
            context.get_data_type(elem)))
        strides = _c_strides(builder, dims, item)
        nbytes = builder.mul(strides[0], dims[0])
        align = context.get_constant(types.uint32, context.get_preferred_array_alignment(elem))
        meminfo = context.nrt.meminfo_alloc_aligned(builder, nbytes, align)
        with cgutils.if_unlikely(builder, cgutils.is_null(builder, meminfo)):
            context.call_conv.return_user_exc(builder, MemoryError,
                                              ("numgrad kernel: out of memory",))
        data = context.nrt.meminfo_data(builder, meminfo)
        ary = context.make_array(arrty)(context, builder)
        populate_array(ary, data=builder.bitcast(data, context.get_data_type(elem).as_pointer()),
                       shape=dims, strides=strides, itemsize=item, meminfo=meminfo)
        return ary._getvalue()

    return arrty(shape, dtype), codegen


def _c_strides(builder, dims, itemsize):
    strides = [itemsize]
    for d in reversed(dims[1:]):
        strides.append(builder.mul(strides[-1], d))
    return strides[::-1]


@intrinsic
def view(typingctx, a, shape):
    nd = _ndim(shape)
    if not nd or not isinstance(a, types.Array) or a.layout != "C":
        return None
    retty = a.copy(ndim=nd, layout="C")

    def codegen(context, builder, sig, args):
        from numba.np.arrayobj import populate_array

        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, value=args[0])
        dims = _dims(context, builder, sig.args[1], args[1])
        n = dims[0]
        for d in dims[1:]:
            n = builder.mul(n, d)
        with cgutils.if_unlikely(builder, builder.icmp_signed("!=", n, ary.nitems)):
            context.call_conv.return_user_exc(
                builder, ValueError, ("numgrad kernel: a view's size differs from its array's",))
        out = context.make_array(retty)(context, builder)
        strides = _c_strides(builder, dims, ary.itemsize)
        populate_array(out, data=ary.data, shape=dims, strides=strides, itemsize=ary.itemsize,
                       meminfo=ary.meminfo, parent=ary.parent)
        return impl_ret_borrowed(context, builder, retty, out._getvalue())

    return retty(a, shape), codegen


def _view_aliases(lhs, args, alias_map, arg_aliases):
    ir_utils._add_alias(lhs, args[0].name, alias_map, arg_aliases)


# Numba's alias analysis must know that a view shares its array's memory, as it knows
# for reshape: otherwise parfors takes a prange loop that only writes a view of an
# output for dead code and drops it.
ir_utils.alias_func_extensions[("view", __name__)] = _view_aliases


@njit(inline="always")
def full(shape, value):
    out = alloc(shape, value)
    flat = view(out, out.size)
    for i in range(flat.size):
        flat[i] = value
    return out

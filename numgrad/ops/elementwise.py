"""ops.elementwise: pointwise primitives (one loop body each, fused by the compiler).

Room: ops. Each ``defop`` is the single definition of an op: NumPy impl, vjp
rules written in numgrad ops, and the scalar lowering template that the CPU and
CUDA emitters share. Templates name helper functions (``exp``, ``sigmoid``...) that
the row carries (``helpers``: ``ops.scalar_helpers``) and each backend compiles; they are
not Python's ``math`` module on purpose, so that a backend can substitute vectorisable
implementations.
"""
from __future__ import annotations

import numpy as np

import numgrad.ops.late as _late
from numgrad.ops.dispatch import apply
import numgrad.ops.scalar_helpers as H
import numgrad.ops.threshold as _threshold
from numgrad.ops.registry import Api, Cost, defop
from numgrad.tensor import Tensor

E = "elementwise"


def _np_sigmoid(x):
    # Split by sign so exp never overflows: for x<0, sigmoid = e^x / (1 + e^x).
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _np_clamp(x, min, max):
    # torch.clamp is min(max(x, lo), hi) with relu's rule (ops.threshold): clamp(-0, min=0) is -0
    # (np.clip gives +0) and NaN passes. np.maximum / np.minimum are that rule wherever the
    # bound is a nonzero number (equal nonzero values have the same bits) and take half
    # np.where's time; at a zero bound their SIMD loops may pick either zero's sign, so
    # np.where serves that one. A NaN bound gives NaN everywhere, as in PyTorch (and
    # np.maximum / np.minimum propagate it).
    if min is not None:
        lo = x.dtype.type(min)
        x = np.maximum(x, lo) if lo else np.where(x < lo, lo, x)
    if max is not None:
        hi = x.dtype.type(max)
        x = np.minimum(x, hi) if hi else np.where(x > hi, hi, x)
    return x


def _divides_like_python(operands):
    # x / y on Python floats raises ZeroDivisionError for y == 0, which a kernel cannot:
    # exact only by a divisor known to be nonzero (a Python number, not a traced one),
    # and of a float (an int / int divides in the default float dtype here, as PyTorch).
    x, y = operands
    return (type(y) in (int, float) and y != 0
            and (type(x) is float or isinstance(x, Tensor) and x.dtype.is_floating_point))


def _np_div(x, y):
    out = np.true_divide(x, y)
    # PyTorch: integer / integer gives the default float dtype, not float64.
    return out.astype(np.float32) if x.dtype.kind in "biu" and y.dtype.kind in "biu" else out


def _is_bool(a):
    if isinstance(a, Tensor):
        return a.dtype.np == np.bool_
    return isinstance(a, (bool, np.bool_))


def _refuse_bool(exc_type, message):
    """A registry ``check``: PyTorch refuses bool operands of this op, with this error."""
    def check(operands):
        return exc_type(message) if any(_is_bool(a) for a in operands) else None
    return check


_MASK_HINT = "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."


def _sub_check(operands):
    bools = sum(_is_bool(a) for a in operands)
    if bools == 2 and all(isinstance(a, Tensor) for a in operands):
        return RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                            "supported. Use the `^` or `logical_xor()` operator instead.")
    if bools:
        return RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                            "supported. " + _MASK_HINT)
    return None


def _np_pow(x, y):
    if x.dtype.kind in "biu" and y.dtype.kind in "biu" and np.any(y < 0):
        # NumPy refuses integers to negative powers; PyTorch gives what C's integer
        # arithmetic does: 1 for 1, +-1 for -1, 0 for anything else.
        pos = np.power(x, np.where(y < 0, 0, y))
        neg = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0))
        return np.where(y < 0, neg, pos).astype(pos.dtype)
    return np.power(x, y)


def _np_sign(x):
    if x.dtype == np.bool_:
        return x.copy()  # torch: sign of a bool is itself
    # torch: sign(NaN) is 0 and sign(-0) is +0 (np.sign gives NaN and -0).
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)) if x.dtype.kind == "f" \
        else np.sign(x)


def _np_pow_scalar(x, exponent):
    # PyTorch computes x ** 0.5 as sqrt and x ** -0.5 as rsqrt: (-0) ** 0.5 is -0 and
    # (-0) ** -0.5 is -inf there (pow gives +0 and +inf).
    if x.dtype.kind == "f" and exponent in (0.5, -0.5):
        r = np.sqrt(x)
        return r if exponent == 0.5 else np.divide(np.ones((), x.dtype), r)
    return np.power(x, np.asarray(exponent, x.dtype))


# Cost weight of a transcendental (a libm call or a vector polynomial) against a simple op.
HEAVY = 8


def _floating(name, impl, doc, pairs=None):
    """A transcendental unary op with an always-floating result, lowered to the helper of
    its name; public as ``ng.<name>``, ``x.<name>()`` and ``x.<name>_()``."""
    return defop(name, inputs=("x",), impl=impl, kind=E, lowering=name + "({0})", floating=True,
                 cost=Cost(weight=HEAVY, pairs=pairs), helpers=(getattr(H, name),),
                 api=Api(doc=doc, inplace=True))


# Scalar lowerings that depend on dtypes or params (see registry: ``scalar``).
def _relu_scalar(args, dt, params, spell):
    # zero as a typed literal: `x * 0` kept the type but is NaN at +-inf.
    return f"relu({args[0]}, {spell.lit(0, dt)})"


def _sign_scalar(args, dt, params, spell):
    if dt == np.bool_:
        return args[0]
    return f"sign({args[0]}, {spell.lit(0, dt)}, {spell.lit(1, dt)})"


def _cast_scalar(args, dt, params, spell):
    if dt == np.bool_:
        return f"({args[0]} != 0)"
    return spell.cast(args[0], dt)


def _pow_scalar_scalar(args, dt, params, spell):
    p, x = params["exponent"], args[0]
    if p == 2:
        return f"({x} * {x})"
    if p == 3:
        return f"({x} * {x} * {x})"
    if p == 1:
        return x
    if p == 0.5:
        return f"sqrt({x})"
    if p == -0.5:  # rsqrt, as the eager impl (and torch) compute it
        return f"({spell.lit(1, dt)} / sqrt({x}))"
    if p == -1:
        return f"({spell.lit(1, dt)} / {x})"
    return f"power({x}, {spell.lit(p, dt)})"


def _pow_scalar_grad_scalar(args, dt, params, spell):  # dy * p * x**(p-1)
    p = params["exponent"]
    dy, x = args
    if p == 0:
        return f"({dy} * {spell.lit(0, dt)})"
    if p == 1:
        return dy
    if p == 2:
        return f"({dy} * ({x} * {spell.lit(2, dt)}))"
    if p == 3:
        return f"({dy} * ({x} * {x} * {spell.lit(3, dt)}))"
    if p == 1.5:
        return f"({dy} * ({spell.lit(p, dt)} * sqrt({x})))"
    if p == 0.5:
        return f"({dy} * ({spell.lit(p, dt)} * ({spell.lit(1, dt)} / sqrt({x}))))"
    return f"({dy} * ({spell.lit(p, dt)} * power({x}, {spell.lit(p - 1, dt)})))"


def _clamp_scalar(args, dt, params, spell):
    lo, hi, x = params["min"], params["max"], args[0]
    if lo is not None and hi is not None:
        return f"clamp({x}, {spell.lit(lo, dt)}, {spell.lit(hi, dt)})"
    if lo is not None:
        return f"clamp_min({x}, {spell.lit(lo, dt)})"
    return f"clamp_max({x}, {spell.lit(hi, dt)})"


def _pow_tensor_scalar(args, dt, params, spell):
    if dt.kind in "iu":  # PyTorch's integer powers (negative exponents: see ipower)
        return f"ipower({args[0]}, {args[1]})"
    return f"power({args[0]}, {args[1]})"


# ------------------------------------------------------------------ unary
neg = defop("neg", inputs=("x",), impl=np.negative, kind=E, lowering="(-{0})",
            check=_refuse_bool(RuntimeError, "Negation, the `-` operator, on a bool tensor "
                               "is not supported. " + _MASK_HINT), python_exact=True,
            api=Api(doc="``-input`` (``torch.neg``, ``jax.numpy.negative``). Raises "
                        "RuntimeError for bool.", inplace=True))
abs_ = defop("abs", inputs=("x",), impl=np.abs, kind=E, lowering="abs({0})",
             check=_refuse_bool(NotImplementedError, '"abs_cpu" not implemented for \'Bool\''),
             python_exact=True, helpers=(H.abs,),
             api=Api(doc="``|input|`` (``torch.abs``, ``jax.numpy.abs``); the gradient at 0 is "
                         "0.\nRaises NotImplementedError for bool, as PyTorch does.",
                     inplace=True))
sign = defop("sign", inputs=("x",), impl=_np_sign, kind=E, lowering="sign({0})",
             scalar=_sign_scalar, helpers=(H.sign,),
             api=Api(doc="-1, 0 or 1 by the sign of each element (``torch.sign``); no gradient "
                         "flows.", inplace=True))
exp = _floating("exp", np.exp, "``e ** input`` (``torch.exp``, ``jax.numpy.exp``); int/bool "
                "input gives float32.")
log = _floating("log", np.log, "Natural logarithm (``torch.log``, ``jax.numpy.log``); nan below "
                "0, -inf at 0.")
sqrt = _floating("sqrt", np.sqrt, "Square root (``torch.sqrt``, ``jax.numpy.sqrt``); nan below 0.")
tanh = _floating("tanh", np.tanh, "Hyperbolic tangent (``torch.tanh``, ``jax.numpy.tanh``).")
sin = _floating("sin", np.sin, "Sine, in radians (``torch.sin``, ``jax.numpy.sin``).",
                pairs=("sincos", 0))  # both of one argument: one sincos
cos = _floating("cos", np.cos, "Cosine, in radians (``torch.cos``, ``jax.numpy.cos``).",
                pairs=("sincos", 1))
sigmoid = _floating("sigmoid", _np_sigmoid, "``1 / (1 + exp(-input))``, computed without "
                    "overflow (``torch.sigmoid``,\n``jax.nn.sigmoid``).")
relu = defop("relu", inputs=("x",), impl=_threshold.relu_kernel, kind=E, lowering="relu({0})",
             scalar=_relu_scalar, helpers=(H.relu,),
             check=_refuse_bool(RuntimeError, "Boolean inputs not supported for relu"),
             api=Api(doc="``max(input, 0)`` (``torch.relu``, ``jax.nn.relu``); the gradient at "
                         "0 is 0.\nRaises RuntimeError for bool.", inplace=True))
clone = defop("clone", inputs=("x",), impl=np.copy, kind=E, lowering="{0}",
              api=Api(doc="A copy with its own storage that stays in the graph "
                          "(``torch.clone``)."))
to_dtype = defop("to_dtype", inputs=("x",), params=("dtype",), node="ToCopyBackward0",
                 impl=lambda x, dtype: x.astype(dtype), kind="pointwise",
                 abstract=lambda x, dtype: (x.shape, np.dtype(dtype)), lowering="cast",
                 scalar=_cast_scalar, cost=Cost(cheap=True))
pow_scalar = defop("pow_scalar", inputs=("x",), params=("exponent",), node="PowBackward0",
                   impl=_np_pow_scalar, kind=E, lowering="pow_scalar({0}, {exponent})",
                   scalar=_pow_scalar_scalar, helpers=(H.sqrt, H.power))
_WRAPPED = "numgrad.ops.wrapped:"  # (hand-written public functions: ops.wrapped)
clamp = defop("clamp", inputs=("x",), params=("min", "max"), node="ClampBackward1", impl=_np_clamp,
              kind=E, lowering="clamp({0}, {min}, {max})", scalar=_clamp_scalar,
              helpers=(H.clamp, H.clamp_min, H.clamp_max),
              api=Api(wrapper=_WRAPPED + "clamp", names=("clamp", "clip"), inplace=True))

neg.defvjp(lambda g: -g)
abs_.defvjp(lambda g, x: g * sign(x))
sign.defvjp(None)
exp.defvjp(lambda g, out: g * out)
log.defvjp(lambda g, x: g / x)
sqrt.defvjp(lambda g, out: g / (out * 2))
sin.defvjp(lambda g, x: g * cos(x))
cos.defvjp(lambda g, x: -(g * sin(x)))
tanh.defvjp(lambda g, out: g * (1 - out * out))
sigmoid.defvjp(lambda g, out: g * (out * (1 - out)))
relu.defvjp(lambda g, out: _relu_grad(g, out))  # torch's threshold_backward: 1 at NaN
clone.defvjp(lambda g: g)
to_dtype.defvjp(lambda g: g)  # the node casts back to the input's dtype
_late.to_dtype = to_dtype  # (the dispatcher casts with it: ops.late)


def _np_pow_scalar_grad(dy, x, exponent):
    p = np.asarray(exponent, x.dtype)
    if exponent == 0:
        return dy * np.zeros_like(x)  # zeros (not 0 * x**-1, which is nan at 0)
    if exponent == 1:
        return dy * np.ones_like(x)
    if exponent == 2:
        return dy * (x * p)
    return dy * (p * _np_pow_scalar(x, exponent - 1))


# g * p * x**(p-1) as one primitive: the backward of every `x ** p` is a single node
# instead of three (the article's example spends half its eager time in backward).
pow_scalar_grad = defop("pow_scalar_grad", inputs=("dy", "x"), params=("exponent",),
                        node="PowBackward0Backward0", impl=_np_pow_scalar_grad, kind=E,
                        lowering="pow_scalar_grad({0}, {1}, {exponent})",
                        scalar=_pow_scalar_grad_scalar, helpers=(H.sqrt, H.power))
def _pow_scalar_grad_x_vjp(g, dy, x, exponent):
    # d/dx (dy * p * x**(p-1)) = p * (dy * (p-1) * x**(p-2)); zero (not 0 * inf) for p = 0.
    if exponent == 0:
        return pow_scalar_grad(g * dy, x, exponent=0)
    return pow_scalar_grad(g * dy, x, exponent=exponent - 1) * exponent


pow_scalar_grad.defvjp(
    lambda g, x, exponent: pow_scalar_grad(g, x, exponent=exponent),  # linear in dy
    _pow_scalar_grad_x_vjp)


def _pow_scalar_vjp(g, x, exponent):
    if exponent == 0:
        return g * 0  # PyTorch: a constant zero gradient, with no graph behind it
    # Through x even for p = 1, so the result stays differentiable in x, as in PyTorch.
    return pow_scalar_grad(g, x, exponent=exponent)


pow_scalar.defvjp(_pow_scalar_vjp)


def _clamp_vjp(g, x, min, max):
    keep = None
    if min is not None:
        keep = x >= min
    if max is not None:
        upper = x <= max
        keep = upper if keep is None else logical_and(keep, upper)
    return where(keep, g, 0)


clamp.defvjp(_clamp_vjp)

# ----------------------------------------------------------------- binary
add = defop("add", inputs=("x", "y"), impl=np.add, kind=E, lowering="({0} + {1})",
            python_exact=True, api=Api(wrapper=_WRAPPED + "add", inplace=True))
sub = defop("sub", inputs=("x", "y"), impl=np.subtract, kind=E, lowering="({0} - {1})",
            check=_sub_check, python_exact=True,
            api=Api(wrapper=_WRAPPED + "sub", names=("sub", "subtract"), inplace=True))
mul = defop("mul", inputs=("x", "y"), impl=np.multiply, kind=E, lowering="({0} * {1})",
            python_exact=True,
            api=Api(doc="``input * other`` with broadcasting (``torch.mul``, "
                        "``jax.numpy.multiply``).", names=("mul", "multiply"), inplace=True))
div = defop("div", inputs=("x", "y"), impl=_np_div, kind=E, lowering="({0} / {1})",
            python_exact=_divides_like_python,
            api=Api(doc="``input / other``, true division (``torch.div``, ``jax.numpy.divide``); "
                        "integer\noperands give float32.", names=("div", "divide", "true_divide"),
                    inplace=True))
pow_ = defop("pow", inputs=("x", "y"), impl=_np_pow, kind=E, node="PowBackward1",
             lowering="power({0}, {1})", scalar=_pow_tensor_scalar, cost=Cost(weight=HEAVY),
             helpers=(H.ipower, H.power),
             api=Api(wrapper=_WRAPPED + "pow", inplace=True))  # (pow_scalar's too)
_TIES = "nan-propagating; ties split the gradient evenly\n"
maximum = defop("maximum", inputs=("x", "y"), impl=np.maximum, kind=E,
                lowering="maximum({0}, {1})", helpers=(H.maximum,),
                api=Api(doc=f"Elementwise maximum, {_TIES}(``torch.maximum``, "
                            "``jax.numpy.maximum``)."))
minimum = defop("minimum", inputs=("x", "y"), impl=np.minimum, kind=E,
                lowering="minimum({0}, {1})", helpers=(H.minimum,),
                api=Api(doc=f"Elementwise minimum, {_TIES}(``torch.minimum``, "
                            "``jax.numpy.minimum``)."))

add.defvjp(lambda g: g, lambda g: g)
sub.defvjp(lambda g: g, lambda g: -g)
mul.defvjp(lambda g, y: g * y, lambda g, x: g * x)
div.defvjp(lambda g, y: g / y, lambda g, x, y: -(g * x) / (y * y))


def _pow_base_vjp(g, x, y):
    return g * (y * pow_(x, y - 1))


def _pow_exponent_vjp(g, x, out):
    # PyTorch's convention: d(0**y)/dy = 0 for y >= 0 (not nan from log(0)).
    return g * where(x == 0, 0, out * log(x))


pow_.defvjp(_pow_base_vjp, _pow_exponent_vjp)


def _share(g, lost, x, y):
    # PyTorch's rule: no gradient where this input lost, half each at a tie, all of it
    # otherwise (also at NaN). Selected, not multiplied by a 0/1 mask, so an inf
    # gradient elsewhere never turns into NaN (0 * inf) in a double backward.
    return where(lost, 0, where(x == y, g * 0.5, g))


maximum.defvjp(lambda g, x, y: _share(g, x < y, x, y), lambda g, x, y: _share(g, y < x, x, y))
minimum.defvjp(lambda g, x, y: _share(g, x > y, x, y), lambda g, x, y: _share(g, y > x, x, y))

# ------------------------------------------------------ comparisons (no grad)
C = "compare"


def _compare(name, impl, op):
    return defop(name, inputs=("x", "y"), impl=impl, kind=C, lowering=f"({{0}} {op} {{1}})",
                 python_exact=True,
                 api=Api(doc=f"``input {op} other`` as a bool tensor (``torch.{name}``); never "
                             "requires grad."))


eq = _compare("eq", np.equal, "==")
ne = _compare("ne", np.not_equal, "!=")
lt = _compare("lt", np.less, "<")
le = _compare("le", np.less_equal, "<=")
gt = _compare("gt", np.greater, ">")
ge = _compare("ge", np.greater_equal, ">=")
logical_and = defop("logical_and", inputs=("x", "y"), impl=np.logical_and, kind=C,
                    lowering="({0} and {1})",
                    api=Api(doc="Elementwise AND of truth values (``torch.logical_and``); a "
                                "bool tensor.", method=False))
logical_or = defop("logical_or", inputs=("x", "y"), impl=np.logical_or, kind=C,
                   lowering="({0} or {1})",
                   api=Api(doc="Elementwise OR of truth values (``torch.logical_or``); a bool "
                               "tensor.", method=False))
logical_not = defop("logical_not", inputs=("x",), impl=np.logical_not, kind=C,
                    lowering="(not {0})",
                    api=Api(doc="Elementwise NOT of truth values (``torch.logical_not``); a "
                                "bool tensor.", method=False))

# ------------------------------------------------------------------- where
_where = defop("where", inputs=("cond", "x", "y"), kind="pointwise", impl=np.where,
               abstract=lambda c, x, y: (np.broadcast_shapes(c.shape, x.shape, y.shape),
                                                  x.dtype),
               lowering="({1} if {0} else {2})",
               api=Api(wrapper="numgrad.ops.elementwise:where", method=False))
_where.defvjp(None, lambda g, cond: where(cond, g, 0), lambda g, cond: where(cond, 0, g))


def where(cond, x, y) -> Tensor:
    """``x`` where ``cond`` holds, else ``y`` (numbers allowed); gradients flow to x and y
    (``torch.where``, ``jax.numpy.where``). Raises RuntimeError for a non-bool ``cond``."""
    from numgrad.ops.dispatch import promote_operands, broadcast_shapes
    from numgrad.tensor import Tensor
    if not isinstance(cond, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(cond).__name__}")
    if cond.dtype.name != "bool":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {cond.dtype.name}")
    (x, y), datas = promote_operands(_where, (x, y))
    broadcast_shapes(cond.shape, x.shape, y.shape)
    rd = datas[0].dtype
    if x._data.dtype != rd:
        x = x.to(rd)
    if y._data.dtype != rd:
        y = y.to(rd)
    return apply(_where, cond, x, y)


def _relu_grad(g, out):
    # Eagerly one kernel (ops.threshold); traced, the where the compiler fuses.
    fused = _threshold.threshold_backward(g, out)
    return fused if fused is not None else where(out <= 0, 0, g)

"""ops.trig: inverse and hyperbolic trigonometry, base-2 and base-10 logs and powers, atan2
and the degree/radian conversions, as elementwise primitives.

Room: ops. Each is one registry row (NumPy impl eagerly, a libm/libdevice helper in the
kernels, vjp rules in numgrad ops) with PyTorch's function, method, in-place method and
``arc*`` aliases. Integer and bool inputs give the default float dtype, as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

import numgrad.ops.elementwise as E
import numgrad.ops.scalar_helpers as H
from numgrad.ops.inplace import apply_inplace
from numgrad.ops.no_derivative import refuse
from numgrad.ops.registry import Api, Cost, defop


def _quiet(f):
    # Outside the domain the result is NaN or inf, as PyTorch's, without NumPy's warning.
    def impl(*xs):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return f(*xs)
    impl.__name__ = f.__name__
    return impl


def _row(name, impl, doc, alias=None, inputs=("x",)):
    """A transcendental row lowered to the helper of its name, public as ``ng.<name>``,
    ``x.<name>()`` and ``x.<name>_()`` (and the same for ``alias``)."""
    return defop(name, inputs=inputs, impl=_quiet(impl), kind="elementwise",
                 lowering=name + "(" + ", ".join(f"{{{i}}}" for i in range(len(inputs))) + ")",
                 floating=True, cost=Cost(weight=E.HEAVY), helpers=(getattr(H, name),),
                 api=Api(doc=doc, names=(name, alias) if alias else (), inplace=True))


asin = _row("asin", np.arcsin, "Inverse sine, in radians (``torch.asin``, ``torch.arcsin``); "
            "NaN outside [-1, 1].", "arcsin")
acos = _row("acos", np.arccos, "Inverse cosine, in radians (``torch.acos``, ``torch.arccos``); "
            "NaN outside [-1, 1].", "arccos")
atan = _row("atan", np.arctan, "Inverse tangent, in radians (``torch.atan``, "
            "``torch.arctan``).", "arctan")
sinh = _row("sinh", np.sinh, "Hyperbolic sine (``torch.sinh``, ``jax.numpy.sinh``).")
cosh = _row("cosh", np.cosh, "Hyperbolic cosine (``torch.cosh``, ``jax.numpy.cosh``).")
asinh = _row("asinh", np.arcsinh, "Inverse hyperbolic sine (``torch.asinh``, "
             "``torch.arcsinh``).", "arcsinh")
acosh = _row("acosh", np.arccosh, "Inverse hyperbolic cosine (``torch.acosh``, "
             "``torch.arccosh``); NaN below 1.", "arccosh")
atanh = _row("atanh", np.arctanh, "Inverse hyperbolic tangent (``torch.atanh``, "
             "``torch.arctanh``); +-inf at +-1,\nNaN beyond.", "arctanh")
log2 = _row("log2", np.log2, "Base-2 logarithm (``torch.log2``, ``jax.numpy.log2``); NaN below "
            "0, -inf at 0.")
log10 = _row("log10", np.log10, "Base-10 logarithm (``torch.log10``, ``jax.numpy.log10``); NaN "
             "below 0, -inf at 0.")
exp2 = _row("exp2", np.exp2, "``2 ** input`` (``torch.exp2``, ``jax.numpy.exp2``).")
atan2 = _row("atan2", np.arctan2, "The angle of the point (other, input), in (-pi, pi] "
             "(``torch.atan2``,\n``torch.arctan2``).", "arctan2", inputs=("x", "y"))

_LN2, _LN10 = math.log(2.0), math.log(10.0)
asin.defvjp(lambda g, x: g / E.sqrt(1 - x * x))
acos.defvjp(lambda g, x: -g / E.sqrt(1 - x * x))
atan.defvjp(lambda g, x: g / (x * x + 1))
sinh.defvjp(lambda g, x: g * cosh(x))
cosh.defvjp(lambda g, x: g * sinh(x))
asinh.defvjp(lambda g, x: g / E.sqrt(x * x + 1))
acosh.defvjp(lambda g, x: g / E.sqrt(x * x - 1))
atanh.defvjp(lambda g, x: g / (1 - x * x))
log2.defvjp(lambda g, x: g / (x * _LN2))
log10.defvjp(lambda g, x: g / (x * _LN10))
exp2.defvjp(lambda g, out: g * (out * _LN2))
# d atan2(x, y) = (y dx - x dy) / (x^2 + y^2), as PyTorch's atan2_backward.
atan2.defvjp(lambda g, x, y: g * y / (x * x + y * y), lambda g, x, y: -(g * x) / (x * x + y * y))


# Degrees and radians: a product by PyTorch's constant, rounded to the operand's dtype (as
# its kernels and NumPy's deg2rad compute it), so eager and kernels agree to the bit.
def _scaling(name, factor, doc):
    def impl(x):
        return x * x.dtype.type(factor)

    def scalar(args, dt, params, spell):
        return f"({args[0]} * {spell.lit(factor, dt)})"
    impl.__name__ = "_np_" + name
    row = defop(name, inputs=("x",), impl=impl, kind="elementwise", lowering=name + "({0})",
                floating=True, scalar=scalar, api=Api(doc=doc, inplace=True))
    row.defvjp(lambda g: g * factor)
    return row


deg2rad = _scaling("deg2rad", math.pi / 180, "Degrees to radians, ``input * pi / 180`` "
                   "(``torch.deg2rad``, ``jax.numpy.deg2rad``).")
rad2deg = _scaling("rad2deg", 180 / math.pi, "Radians to degrees, ``input * 180 / pi`` "
                   "(``torch.rad2deg``, ``jax.numpy.rad2deg``).")


# PyTorch has no derivative for asinh_, acosh_ and atanh_ (their backward would need the
# input the write destroyed): the in-place call records an ``AsinhBackward1`` node whose
# backward raises NotImplementedError, eager and compiled alike. Each is a twin row of the
# out-of-place one (same impl and kernel, another node and rule) that only the in-place
# method uses; without grad it computes what the out-of-place row does.
def _no_derivative(name):
    def vjp(g):  # raises at backward, eager or compiled (ops.no_derivative)
        return refuse(g, NotImplementedError, f"the derivative for 'inplace version of {name}' "
                      "is not implemented.")
    return vjp


def _inplace_twin(row, alias, example):
    twin = defop(row.name + "_inplace", inputs=("x",), impl=row.impl, kind="elementwise",
                 lowering=row.name + "({0})", floating=True, cost=Cost(weight=E.HEAVY),
                 helpers=(getattr(H, row.name),), node=row.name.capitalize() + "Backward1")
    twin.defvjp(_no_derivative(row.name))

    def method(self):
        return apply_inplace(self, twin)
    method.__name__ = row.name + "_"
    method.__doc__ = (f"In-place ``{row.name}`` (``torch.Tensor.{row.name}_``): writes the "
                      "result into this tensor and bumps its version; its backward raises "
                      f"NotImplementedError, as PyTorch's.\n\n    >>> {example}\n    ")
    return {f"{n}_": method for n in (row.name, alias)}


INPLACE_METHODS = {
    **_inplace_twin(asinh, "arcsinh", "ng.tensor([0.5]).asinh_()\n    tensor([0.4812])"),
    **_inplace_twin(acosh, "arccosh", "ng.tensor([2.0]).acosh_()\n    tensor([1.3170])"),
    **_inplace_twin(atanh, "arctanh", "ng.tensor([0.5]).atanh_()\n    tensor([0.5493])")}

"""The remaining NumPy ufuncs: trigonometric, hyperbolic, logarithms, binary math, rounding, tests.

- trigonometric: tan arcsin arccos arctan arctan2 hypot sinc deg2rad rad2deg (radians, degrees);
- hyperbolic: sinh cosh arcsinh arccosh arctanh;
- exponents and logarithms: exp2 log2 log10 logaddexp logaddexp2;
- binary: fmax fmin (NaN loses) remainder (mod, the ``%`` operator) fmod;
- rounding: floor ceil round trunc rint, recorded with a zero gradient, declared
  (PyTorch's choice; TensorFlow declares floor's gradient None): the rule returns
  zeros, so a tape gives zeros, not None, for a source reached only through them;
- nan_to_num (the gradient passes where x is finite, 0 where a value was replaced);
- not differentiable, not recorded, boolean results: isfinite isnan isinf
  logical_and logical_or logical_xor logical_not.

Results follow NumPy's dtype rules for each ufunc (integers give floats where NumPy's do).
The hot gradients ``TanGrad``, ``ArctanGrad``, ``SinhGrad`` and ``CoshGrad`` are declared
here (:mod:`.hot`) after the forward op whose rule calls them; the other rules are written
with gpugrad ops, so every order of derivative works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math as _math

import numpy as np

from ... import _dtypes as _dt
from ...backend.cpu_fast import CHEAP, COSTLY
from ...errors import DTypeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from .arithmetic import where
from ..base import ONE, binary, binary_error, constant_arg, elementwise, emit, public_ops, unary
from ..hot import TRANSCENDENTAL, Check, Range, declare
from .math import cos, exp, sqrt

if TYPE_CHECKING:
    from ..._typing import TensorLike

_LN2 = _math.log(2.0)
_LN10 = _math.log(10.0)
_PI = _math.pi


def _unary_op(op_type, ufunc, x, cost=COSTLY, attrs=None):
    """Record ``op_type`` of ``ufunc(x)`` (NumPy's dtype rules)."""
    x = unary(x)
    try:
        data = elementwise(ufunc, x._data, x._device, cost)
    except TypeError as e:
        raise DTypeError(f"op {op_type!r} cannot take {x.dtype} (shape {x.shape}): {e}") from None
    return emit(op_type, data, x._device, (x,), attrs)


def _binary_op(op_type, name, x, y):
    """Record ``op_type`` of the array module's ``name(x, y)``, broadcast as NumPy does."""
    x, y = binary(x, y, op_type, getattr(np, name))
    try:
        data = getattr(x._device.xp, name)(x._data, y._data)
    except (ValueError, TypeError) as e:
        raise binary_error(op_type, e, x, y) from None
    return emit(op_type, data, x._device, (x, y))


def _constant(data, like):
    """A tensor of array ``data`` on ``like``'s device that no tape follows."""
    return Tensor._wrap(data, like._device)


# ---------------------------------------------------------------- tan, arcsin, arccos, arctan


def tan(x: TensorLike) -> Tensor:
    """Tangent elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.tan(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Tan", np.tan, x)


@RegisterGradient("Tan", donates_dy=True)
def _tan_grad(op, dy):
    return (tan_grad(op.outputs[0], dy),)


def _tan_grad_cpu(y, dy, out=None):
    # dy + (dy y) y: float16's y * y overflows at |y| > 256 where dy (1 + y^2) stays finite for a small dy
    return np.add(dy, (dy * y) * y, out=out)


def _tan_grad_grad(op, g):
    y, dy = op.inputs
    return g * (2.0 * dy * y), tan_grad(y, g)


tan_grad = declare(
    globals(), name="tan_grad", op_type="TanGrad", inputs=("y", "dy"), forward="tan",
    summary="Fused gradient of tan from its output y", math="dy + dy * y * y", generated=True,
    cpu=_tan_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_tan_grad_grad,
    check=Check({"y": Range(-5.0, 5.0)}),
    example=">>> gg.raw_ops.tan_grad(gg.tensor(2.0), gg.tensor(1.0)).item()\n5.0")


def arcsin(x: TensorLike) -> Tensor:
    """Inverse sine elementwise (NaN outside [-1, 1]).

    Example:
        >>> import gpugrad as gg
        >>> gg.arcsin(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Asin", np.arcsin, x)


@RegisterGradient("Asin", reads_outputs=False)
def _asin_grad(op, dy):
    x = op.inputs[0]
    return (dy / sqrt(1.0 - x * x),)


def arccos(x: TensorLike) -> Tensor:
    """Inverse cosine elementwise (NaN outside [-1, 1]).

    Example:
        >>> import gpugrad as gg
        >>> gg.arccos(gg.tensor([1.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Acos", np.arccos, x)


@RegisterGradient("Acos", reads_outputs=False)
def _acos_grad(op, dy):
    x = op.inputs[0]
    return (-(dy / sqrt(1.0 - x * x)),)


def arctan(x: TensorLike) -> Tensor:
    """Inverse tangent elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.arctan(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Atan", np.arctan, x)


@RegisterGradient("Atan", reads_outputs=False, donates_dy=True)
def _atan_grad(op, dy):
    return (arctan_grad(op.inputs[0], dy),)


def _arctan_grad_cpu(x, dy, out=None):
    return np.divide(dy, ONE[x.dtype] + x * x, out=out)


def _arctan_grad_grad(op, g):
    # d/dx [dy / (1 + x^2)] = -2 x dy / (1 + x^2)^2 = -2 x out / (1 + x^2)
    x, _ = op.inputs
    out = op.outputs[0]
    return g * (-2.0 * x) * arctan_grad(x, out), arctan_grad(x, g)


arctan_grad = declare(
    globals(), name="arctan_grad", op_type="AtanGrad", inputs=("x", "dy"), forward="arctan",
    summary="Fused gradient of arctan", math="dy / (1 + x * x)", generated=True,
    cpu=_arctan_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_arctan_grad_grad, grad_reads_outputs=True,
    check=Check({"x": Range(-10.0, 10.0, zeros=0.05)}),
    example=">>> gg.raw_ops.arctan_grad(gg.tensor(1.0), gg.tensor(1.0)).item()\n0.5")


def arctan2(x1: TensorLike, x2: TensorLike) -> Tensor:
    """The angle of the point (x2, x1) elementwise, in [-pi, pi], as ``np.arctan2(x1, x2)``.

    Example:
        >>> import gpugrad as gg
        >>> gg.arctan2(gg.tensor([0.0]), gg.tensor([1.0])).numpy().tolist()
        [0.0]
    """
    return _binary_op("Atan2", "arctan2", x1, x2)


@RegisterGradient("Atan2", reads_outputs=False)
def _atan2_grad(op, dy):
    # d/dx1 = x2 / (x1^2 + x2^2), d/dx2 = -x1 / (x1^2 + x2^2), as (dy / r) (x2 / r) with r = hypot(x1, x2):
    # no factor overflows where the result is finite (float16's x1^2 does at |x1| > 256)
    x1, x2 = op.inputs
    r = hypot(x1, x2)
    scaled = dy / r
    return scaled * (x2 / r), -(scaled * (x1 / r))


def hypot(x1: TensorLike, x2: TensorLike) -> Tensor:
    """sqrt(x1**2 + x2**2) elementwise, without overflow.

    Example:
        >>> import gpugrad as gg
        >>> gg.hypot(gg.tensor([3.0]), gg.tensor([4.0])).numpy().tolist()
        [5.0]
    """
    return _binary_op("Hypot", "hypot", x1, x2)


@RegisterGradient("Hypot")
def _hypot_grad(op, dy):
    x1, x2 = op.inputs
    scaled = dy / op.outputs[0]
    return scaled * x1, scaled * x2


def sinc(x: TensorLike) -> Tensor:
    """NumPy's normalized sinc: sin(pi x) / (pi x), 1 at 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.sinc(gg.tensor([0.0, 0.5], dtype="float64")).numpy().round(6).tolist()
        [1.0, 0.63662]
    """
    x = unary(x)
    try:
        data = elementwise(np.sinc, x._data, x._device)
    except TypeError as e:
        raise DTypeError(f"op 'Sinc' cannot take {x.dtype} (shape {x.shape}): {e}") from None
    if data.dtype != x._data.dtype and _dt.inexact(x._data.dtype):  # NumPy 2.2's sinc lifts bfloat16 to float32
        data = data.astype(x._data.dtype)
    return emit("Sinc", data, x._device, (x,))


_SINC_SERIES = 1e-2  # below it the Taylor series of sinc' (cos(pi x) - sinc(x)) / x cancels less


@RegisterGradient("Sinc")
def _sinc_grad(op, dy):
    # sinc'(x) = (cos(pi x) - sinc(x)) / x; near 0 its series -pi^2 x / 3 + pi^4 x^3 / 30 - pi^6 x^5 / 840
    x, y = op.inputs[0], op.outputs[0]
    small = x._device.xp.abs(x._data) < _SINC_SERIES
    safe_x = where(small, 1.0, x)
    formula = (cos(x * _PI) - y) / safe_x
    x2 = x * x
    series = x * (-_PI ** 2 / 3 + x2 * (_PI ** 4 / 30 - x2 * (_PI ** 6 / 840)))
    return (dy * where(small, series, formula),)


def deg2rad(x: TensorLike) -> Tensor:
    """Degrees to radians elementwise: x * pi / 180.

    Example:
        >>> import gpugrad as gg
        >>> gg.deg2rad(gg.tensor([180.0], dtype="float64")).numpy().tolist()
        [3.141592653589793]
    """
    return _unary_op("Deg2Rad", np.deg2rad, x, CHEAP)


@RegisterGradient("Deg2Rad", reads_outputs=False)
def _deg2rad_grad(op, dy):
    return (dy * (_PI / 180.0),)


def rad2deg(x: TensorLike) -> Tensor:
    """Radians to degrees elementwise: x * 180 / pi.

    Example:
        >>> import gpugrad as gg
        >>> gg.rad2deg(gg.tensor([3.141592653589793], dtype="float64")).numpy().tolist()
        [180.0]
    """
    return _unary_op("Rad2Deg", np.rad2deg, x, CHEAP)


@RegisterGradient("Rad2Deg", reads_outputs=False)
def _rad2deg_grad(op, dy):
    return (dy * (180.0 / _PI),)


radians = deg2rad  # NumPy's other names of the same ufuncs
degrees = rad2deg


# ---------------------------------------------------------------- sinh, cosh, arcsinh, arccosh, arctanh


def sinh(x: TensorLike) -> Tensor:
    """Hyperbolic sine elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.sinh(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Sinh", np.sinh, x)


@RegisterGradient("Sinh", reads_outputs=False, donates_dy=True)
def _sinh_rule(op, dy):
    return (sinh_grad(op.inputs[0], dy),)


def _sinh_grad_cpu(x, dy, out=None):
    return np.multiply(dy, np.cosh(x), out=out)


def _sinh_grad_grad(op, g):
    # d/dx [dy cosh x] = dy sinh x: cosh_grad(x, g dy)
    x, dy = op.inputs
    return cosh_grad(x, g * dy), sinh_grad(x, g)


def cosh(x: TensorLike) -> Tensor:
    """Hyperbolic cosine elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.cosh(gg.tensor([0.0])).numpy().tolist()
        [1.0]
    """
    return _unary_op("Cosh", np.cosh, x)


@RegisterGradient("Cosh", reads_outputs=False, donates_dy=True)
def _cosh_rule(op, dy):
    return (cosh_grad(op.inputs[0], dy),)


def _cosh_grad_cpu(x, dy, out=None):
    return np.multiply(dy, np.sinh(x), out=out)


def _cosh_grad_grad(op, g):
    # d/dx [dy sinh x] = dy cosh x: sinh_grad(x, g dy)
    x, dy = op.inputs
    return sinh_grad(x, g * dy), cosh_grad(x, g)


sinh_grad = declare(
    globals(), name="sinh_grad", op_type="SinhGrad", inputs=("x", "dy"), forward="sinh",
    summary="Fused gradient of sinh: dy cosh(x)", math="dy * cosh(x)", generated=True,
    cpu=_sinh_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_sinh_grad_grad,
    check=Check({"x": Range(-5.0, 5.0, zeros=0.05)}, ulps=TRANSCENDENTAL),
    example=">>> gg.raw_ops.sinh_grad(gg.tensor(0.0), gg.tensor(2.0)).item()\n2.0")

cosh_grad = declare(
    globals(), name="cosh_grad", op_type="CoshGrad", inputs=("x", "dy"), forward="cosh",
    summary="Fused gradient of cosh: dy sinh(x)", math="dy * sinh(x)", generated=True,
    cpu=_cosh_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_cosh_grad_grad,
    check=Check({"x": Range(-5.0, 5.0, zeros=0.05)}, ulps=TRANSCENDENTAL),
    example=">>> gg.raw_ops.cosh_grad(gg.tensor(0.0), gg.tensor(2.0)).item()\n0.0")


def arcsinh(x: TensorLike) -> Tensor:
    """Inverse hyperbolic sine elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.arcsinh(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Asinh", np.arcsinh, x)


@RegisterGradient("Asinh", reads_outputs=False)
def _asinh_grad(op, dy):
    x = op.inputs[0]
    return (dy / hypot(x, 1.0),)  # sqrt(x^2 + 1) without float16's x^2 overflowing at |x| > 256


def arccosh(x: TensorLike) -> Tensor:
    """Inverse hyperbolic cosine elementwise (NaN below 1).

    Example:
        >>> import gpugrad as gg
        >>> gg.arccosh(gg.tensor([1.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Acosh", np.arccosh, x)


@RegisterGradient("Acosh", reads_outputs=False)
def _acosh_grad(op, dy):
    x = op.inputs[0]
    return (dy / (sqrt(x - 1.0) * sqrt(x + 1.0)),)  # sqrt(x^2 - 1), no x^2 to overflow (float16 at x > 256)


def arctanh(x: TensorLike) -> Tensor:
    """Inverse hyperbolic tangent elementwise (inf at +-1, NaN outside).

    Example:
        >>> import gpugrad as gg
        >>> gg.arctanh(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _unary_op("Atanh", np.arctanh, x)


@RegisterGradient("Atanh", reads_outputs=False)
def _atanh_grad(op, dy):
    x = op.inputs[0]
    return (dy / (1.0 - x * x),)


# ---------------------------------------------------------------- exp2, log2, log10, logaddexp, logaddexp2


def exp2(x: TensorLike) -> Tensor:
    """2 ** x elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.exp2(gg.tensor([3.0])).numpy().tolist()
        [8.0]
    """
    return _unary_op("Exp2", np.exp2, x)


@RegisterGradient("Exp2")
def _exp2_grad(op, dy):
    return (dy * op.outputs[0] * _LN2,)


def log2(x: TensorLike) -> Tensor:
    """Base-2 logarithm elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.log2(gg.tensor([8.0])).numpy().tolist()
        [3.0]
    """
    return _unary_op("Log2", np.log2, x)


@RegisterGradient("Log2", reads_outputs=False)
def _log2_grad(op, dy):
    return (dy / (op.inputs[0] * _LN2),)


def log10(x: TensorLike) -> Tensor:
    """Base-10 logarithm elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.log10(gg.tensor([100.0], dtype="float64")).numpy().tolist()
        [2.0]
    """
    return _unary_op("Log10", np.log10, x)


@RegisterGradient("Log10", reads_outputs=False)
def _log10_grad(op, dy):
    return (dy / (op.inputs[0] * _LN10),)


def logaddexp(x1: TensorLike, x2: TensorLike) -> Tensor:
    """log(exp(x1) + exp(x2)) elementwise, without overflow.

    Example:
        >>> import gpugrad as gg
        >>> gg.logaddexp(gg.tensor([1000.0], dtype="float64"), 1000.0).numpy().tolist()
        [1000.6931471805599]
    """
    return _binary_op("LogAddExp", "logaddexp", x1, x2)


@RegisterGradient("LogAddExp")
def _logaddexp_grad(op, dy):
    # d/dx1 = exp(x1 - out), d/dx2 = exp(x2 - out): at most 1, never overflows
    x1, x2 = op.inputs
    out = op.outputs[0]
    return dy * exp(x1 - out), dy * exp(x2 - out)


def logaddexp2(x1: TensorLike, x2: TensorLike) -> Tensor:
    """log2(2**x1 + 2**x2) elementwise, without overflow.

    Example:
        >>> import gpugrad as gg
        >>> gg.logaddexp2(gg.tensor([3.0]), gg.tensor([3.0])).numpy().tolist()
        [4.0]
    """
    return _binary_op("LogAddExp2", "logaddexp2", x1, x2)


@RegisterGradient("LogAddExp2")
def _logaddexp2_grad(op, dy):
    # d/dx1 = 2 ** (x1 - out), d/dx2 = 2 ** (x2 - out)
    x1, x2 = op.inputs
    out = op.outputs[0]
    return dy * exp2(x1 - out), dy * exp2(x2 - out)


# ---------------------------------------------------------------- fmax, fmin, remainder, fmod


def fmax(x1: TensorLike, x2: TensorLike) -> Tensor:
    """The larger of x1 and x2 elementwise, a NaN losing to a number (NumPy's fmax).

    The gradient goes to the input picked: x1 at a tie, the non-NaN side where one is NaN.

    Example:
        >>> import gpugrad as gg
        >>> gg.fmax(gg.tensor([1.0, float("nan")]), gg.tensor([float("nan"), 2.0])).numpy().tolist()
        [1.0, 2.0]
    """
    return _binary_op("Fmax", "fmax", x1, x2)


def fmin(x1: TensorLike, x2: TensorLike) -> Tensor:
    """The smaller of x1 and x2 elementwise, a NaN losing to a number (NumPy's fmin).

    The gradient goes to the input picked: x1 at a tie, the non-NaN side where one is NaN.

    Example:
        >>> import gpugrad as gg
        >>> gg.fmin(gg.tensor([1.0, float("nan")]), gg.tensor([float("nan"), 2.0])).numpy().tolist()
        [1.0, 2.0]
    """
    return _binary_op("Fmin", "fmin", x1, x2)


@RegisterGradient("Fmax", reads_outputs=False)
def _fmax_grad(op, dy):
    x1, x2 = op.inputs
    xp = x1._device.xp
    first = (x1._data >= x2._data) | xp.isnan(x2._data)  # both NaN: x1
    return where(first, dy, 0.0), where(first, 0.0, dy)


@RegisterGradient("Fmin", reads_outputs=False)
def _fmin_grad(op, dy):
    x1, x2 = op.inputs
    xp = x1._device.xp
    first = (x1._data <= x2._data) | xp.isnan(x2._data)
    return where(first, dy, 0.0), where(first, 0.0, dy)


def remainder(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 - floor(x1 / x2) * x2 elementwise: the sign of x2, as Python's ``%`` and ``np.remainder``.

    Gradient: dy for x1, -floor(x1 / x2) dy for x2 (away from the jumps).

    Example:
        >>> import gpugrad as gg
        >>> gg.remainder(gg.tensor([5.0, -5.0]), 3.0).numpy().tolist()
        [2.0, 1.0]
    """
    return _binary_op("FloorMod", "remainder", x1, x2)


mod = remainder  # np.mod is np.remainder


@RegisterGradient("FloorMod", reads_outputs=False)
def _floor_mod_grad(op, dy):
    x1, x2 = op.inputs
    quotient = _constant(x1._device.xp.floor_divide(x1._data, x2._data), x1)
    return dy, -(dy * quotient)


def fmod(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 - trunc(x1 / x2) * x2 elementwise: the sign of x1, as C's fmod and ``np.fmod``.

    Gradient: dy for x1, -trunc(x1 / x2) dy for x2 (away from the jumps).

    Example:
        >>> import gpugrad as gg
        >>> gg.fmod(gg.tensor([5.0, -5.0]), 3.0).numpy().tolist()
        [2.0, -2.0]
    """
    return _binary_op("TruncateMod", "fmod", x1, x2)


@RegisterGradient("TruncateMod", reads_outputs=False)
def _truncate_mod_grad(op, dy):
    x1, x2 = op.inputs
    xp = x1._device.xp
    quotient = _constant(xp.trunc(x1._data / x2._data), x1)
    return dy, -(dy * quotient)


def _rmod(self, other):
    return remainder(other, self)


_rmod.__name__ = "__rmod__"


# ---------------------------------------------------------------- rounding: a zero gradient, declared


def _zero_rule(op, dy):
    """A zero gradient, declared (PyTorch's choice for rounding): zeros of dy's shape, not None."""
    return (_constant(dy._device.xp.zeros_like(dy._data), dy),)


def floor(x: TensorLike) -> Tensor:
    """The largest integer <= x elementwise; the gradient is zero, declared.

    Example:
        >>> import gpugrad as gg
        >>> gg.floor(gg.tensor([-1.5, 1.5])).numpy().tolist()
        [-2.0, 1.0]
    """
    return _unary_op("Floor", np.floor, x, CHEAP)


def ceil(x: TensorLike) -> Tensor:
    """The smallest integer >= x elementwise; the gradient is zero, declared.

    Example:
        >>> import gpugrad as gg
        >>> gg.ceil(gg.tensor([-1.5, 1.5])).numpy().tolist()
        [-1.0, 2.0]
    """
    return _unary_op("Ceil", np.ceil, x, CHEAP)


def trunc(x: TensorLike) -> Tensor:
    """x rounded toward zero elementwise; the gradient is zero, declared.

    Example:
        >>> import gpugrad as gg
        >>> gg.trunc(gg.tensor([-1.5, 1.5])).numpy().tolist()
        [-1.0, 1.0]
    """
    return _unary_op("Trunc", np.trunc, x, CHEAP)


def rint(x: TensorLike) -> Tensor:
    """x rounded to the nearest integer, halves to even, elementwise; the gradient is zero, declared.

    Example:
        >>> import gpugrad as gg
        >>> gg.rint(gg.tensor([0.5, 1.5, 2.7])).numpy().tolist()
        [0.0, 2.0, 3.0]
    """
    return _unary_op("Rint", np.rint, x, CHEAP)


def round(x: TensorLike, decimals: int = 0) -> Tensor:  # noqa: A001 - NumPy's name
    """x rounded to ``decimals`` places, halves to even, as ``np.round``; the gradient is zero, declared.

    Example:
        >>> import gpugrad as gg
        >>> gg.round(gg.tensor([1.25, 2.5], dtype="float64"), 1).numpy().tolist()
        [1.2, 2.5]
    """
    x = unary(x)
    try:
        data = x._device.xp.round(x._data, decimals)
    except TypeError as e:
        raise DTypeError(f"op 'Round' cannot take {x.dtype} with decimals={decimals!r}: {e}") from None
    return emit("Round", data, x._device, (x,), {"decimals": decimals})


for _op_type in ("Floor", "Ceil", "Trunc", "Rint", "Round"):
    RegisterGradient(_op_type, reads_outputs=False)(_zero_rule)


# ---------------------------------------------------------------- nan_to_num


def nan_to_num(x: TensorLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """x with NaN, inf and -inf replaced (by ``nan``, ``posinf``, ``neginf``; the infinities by
    the dtype's largest finite values by default), as ``np.nan_to_num``. ``copy`` is accepted
    for NumPy's signature: the result is always a new tensor.

    The gradient passes where x is finite and is 0 where a value was replaced.

    Example:
        >>> import gpugrad as gg
        >>> gg.nan_to_num(gg.tensor([float("nan"), 1.0]), nan=-1.0).numpy().tolist()
        [-1.0, 1.0]
    """
    x = unary(x)
    nan, posinf, neginf = (_number(constant_arg(v, name, "NanToNum")) for name, v in
                           (("nan", nan), ("posinf", posinf), ("neginf", neginf)))
    xp = x._device.xp
    try:
        data = xp.nan_to_num(x._data, copy=True, nan=nan, posinf=posinf, neginf=neginf)
    except TypeError as e:
        raise DTypeError(f"op 'NanToNum' cannot take {x.dtype}: {e}") from None
    return emit("NanToNum", data, x._device, (x,), {"nan": nan, "posinf": posinf, "neginf": neginf})


def _number(value):
    """A constant given as a tensor, as its array (NumPy's functions refuse tensors)."""
    return value._data if isinstance(value, Tensor) else value


@RegisterGradient("NanToNum", reads_outputs=False)
def _nan_to_num_grad(op, dy):
    x = op.inputs[0]
    return (where(x._device.xp.isfinite(x._data), dy, 0.0),)


# ---------------------------------------------------------------- tests and logic: boolean, not recorded


def _boolean_unary(name, x):
    x = unary(x)
    try:
        data = getattr(x._device.xp, name)(x._data)
    except TypeError as e:
        raise DTypeError(f"{name} cannot take {x.dtype} (shape {x.shape}): {e}") from None
    return Tensor._wrap(data, x._device)


def _boolean_binary(name, x1, x2):
    x1, x2 = binary(x1, x2, name, getattr(np, name))
    try:
        data = getattr(x1._device.xp, name)(x1._data, x2._data)
    except (ValueError, TypeError) as e:
        raise binary_error(name, e, x1, x2) from None
    return Tensor._wrap(data, x1._device)


def isfinite(x: TensorLike) -> Tensor:
    """True where x is neither infinite nor NaN; a boolean tensor, not recorded (no gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.isfinite(gg.tensor([1.0, float("inf"), float("nan")])).numpy().tolist()
        [True, False, False]
    """
    return _boolean_unary("isfinite", x)


def isnan(x: TensorLike) -> Tensor:
    """True where x is NaN; a boolean tensor, not recorded (no gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.isnan(gg.tensor([1.0, float("nan")])).numpy().tolist()
        [False, True]
    """
    return _boolean_unary("isnan", x)


def isinf(x: TensorLike) -> Tensor:
    """True where x is inf or -inf; a boolean tensor, not recorded (no gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.isinf(gg.tensor([1.0, -float("inf")])).numpy().tolist()
        [False, True]
    """
    return _boolean_unary("isinf", x)


def logical_not(x: TensorLike) -> Tensor:
    """NOT x elementwise (nonzero is true); a boolean tensor, not recorded (no gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.logical_not(gg.tensor([0.0, 2.0])).numpy().tolist()
        [True, False]
    """
    return _boolean_unary("logical_not", x)


def logical_and(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 AND x2 elementwise (nonzero is true), broadcast; a boolean tensor, not recorded.

    Example:
        >>> import gpugrad as gg
        >>> gg.logical_and(gg.tensor([True, True]), gg.tensor([True, False])).numpy().tolist()
        [True, False]
    """
    return _boolean_binary("logical_and", x1, x2)


def logical_or(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 OR x2 elementwise (nonzero is true), broadcast; a boolean tensor, not recorded.

    Example:
        >>> import gpugrad as gg
        >>> gg.logical_or(gg.tensor([False, True]), gg.tensor([False, False])).numpy().tolist()
        [False, True]
    """
    return _boolean_binary("logical_or", x1, x2)


def logical_xor(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 XOR x2 elementwise (nonzero is true), broadcast; a boolean tensor, not recorded.

    Example:
        >>> import gpugrad as gg
        >>> gg.logical_xor(gg.tensor([True, True]), gg.tensor([True, False])).numpy().tolist()
        [False, True]
    """
    return _boolean_binary("logical_xor", x1, x2)


TENSOR_METHODS = {"__mod__": remainder, "__rmod__": _rmod}  # x.round: gpugrad._numpy.methods

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "tan", "tan_grad", "arcsin", "arccos", "arctan", "arctan_grad", "arctan2", "hypot", "sinc", "deg2rad",
        "rad2deg", "radians", "degrees", "sinh", "cosh", "sinh_grad", "cosh_grad", "arcsinh", "arccosh", "arctanh",
        "exp2", "log2", "log10", "logaddexp", "logaddexp2", "fmax", "fmin", "remainder", "mod", "fmod", "floor", "ceil",
        "trunc", "rint", "round", "nan_to_num", "isfinite", "isnan", "isinf", "logical_not", "logical_and",
        "logical_or", "logical_xor"
    ]

"""Arithmetic ops: + - * / ** negative abs sign maximum minimum where clip.

Each op is its forward function and, right below it, its registered gradient.
Rules return one gradient per input at the broadcast output's shape; the tape
sums each back to its input's shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools
import operator

import numpy as np

from ... import _dtypes as _dt
from ..._tracing import state as _trace
from ...errors import ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ...backend import cpu_fast
from ...backend.cpu_fast import CHEAP
from ..base import CPU, ONE, ZERO, binary, binary_error, emit, public_ops, unary, zeros_of
from .. import replay
from ..hot import TRANSCENDENTAL, Check, Range, declare
from .math import log, reciprocal, square

if TYPE_CHECKING:
    from ..._typing import TensorLike


# ---------------------------------------------------------------- add, subtract


def add(x: TensorLike, y: TensorLike) -> Tensor:
    """x + y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.add(gg.tensor([1.0, 2.0]), 1.0).numpy().tolist()
        [2.0, 3.0]
    """
    if x.__class__ is not Tensor or y.__class__ is not Tensor or x._device is not y._device:
        x, y = binary(x, y, "Add")
    try:
        return emit("Add", x._data + y._data, x._device, (x, y))
    except (ValueError, TypeError) as e:
        raise binary_error("Add", e, x, y) from None


replay.ufunc("Add", "add")  # x + y on float arrays of one dtype is np.add


@RegisterGradient("Add", reads_outputs=False)
def _add_grad(op, dy):
    return dy, dy


def subtract(x: TensorLike, y: TensorLike) -> Tensor:
    """x - y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.subtract(3.0, gg.tensor([1.0])).numpy().tolist()
        [2.0]
    """
    if x.__class__ is not Tensor or y.__class__ is not Tensor or x._device is not y._device:
        x, y = binary(x, y, "Sub")
    try:
        return emit("Sub", x._data - y._data, x._device, (x, y))
    except (ValueError, TypeError) as e:
        raise binary_error("Sub", e, x, y) from None


replay.ufunc("Sub", "subtract")


@RegisterGradient("Sub", reads_outputs=False)
def _sub_grad(op, dy):
    return dy, (negative(dy) if op.needs_grad[1] else None)


def negative(x: TensorLike) -> Tensor:
    """-x elementwise.

    Example:
        >>> import gpugrad as gg
        >>> (-gg.tensor([1.0, -2.0])).numpy().tolist()
        [-1.0, 2.0]
    """
    x = unary(x)
    return emit("Neg", -x._data, x._device, (x,))


replay.ufunc("Neg", "negative")


@RegisterGradient("Neg", reads_outputs=False)
def _neg_grad(op, dy):
    return (negative(dy),)


# ---------------------------------------------------------------- multiply, divide


def multiply(x: TensorLike, y: TensorLike) -> Tensor:
    """x * y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.multiply(gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])).numpy().tolist()
        [3.0, 8.0]
    """
    if x.__class__ is not Tensor or y.__class__ is not Tensor or x._device is not y._device:
        x, y = binary(x, y, "Mul")
    try:
        return emit("Mul", x._data * y._data, x._device, (x, y))
    except (ValueError, TypeError) as e:
        raise binary_error("Mul", e, x, y) from None


replay.ufunc("Mul", "multiply")


@RegisterGradient("Mul", reads_outputs=False)
def _mul_grad(op, dy):
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    return (multiply(dy, y) if need_x else None), (multiply(dy, x) if need_y else None)


def divide(x: TensorLike, y: TensorLike) -> Tensor:
    """x / y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.divide(gg.tensor([1.0, 3.0]), 2.0).numpy().tolist()
        [0.5, 1.5]
    """
    if x.__class__ is not Tensor or y.__class__ is not Tensor or x._device is not y._device:
        x, y = binary(x, y, "Div", np.true_divide)
    try:
        return emit("Div", x._data / y._data, x._device, (x, y))
    except (ValueError, TypeError) as e:
        raise binary_error("Div", e, x, y) from None


replay.ufunc("Div", "true_divide")


@RegisterGradient("Div", reads_outputs=False)
def _div_grad(op, dy):
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    if not need_y:
        return divide(dy, y), None
    gx, gy = div_grad(x, y, dy)
    return (gx if need_x else None), gy


def _div_grad_cpu(x, y, dy):
    gx = dy / y
    return gx, -gx * (x / y)  # d(x/y)/dy = -x / y^2


def _div_grad_grad(op, ggx, ggy):
    # gx = dy/y, gy = -dy*x/y^2
    x, y, dy = op.inputs
    inv_y = reciprocal(y)
    dgy_dx = -dy * inv_y * inv_y  # also d(gx)/dy
    grad_x = ggy * dgy_dx
    grad_y = ggx * dgy_dx + ggy * (2.0 * dy * x * inv_y * inv_y * inv_y)
    grad_dy = ggx * inv_y - ggy * x * inv_y * inv_y
    return grad_x, grad_y, grad_dy


div_grad = declare(
    globals(), name="div_grad", op_type="DivGrad", inputs=("x", "y", "dy"), outputs=("gx", "gy"), forward="divide",
    summary="The fused gradient of x / y in one pass", math="(dy / y, -(dy / y) * (x / y))",
    cpu=_div_grad_cpu, grad=_div_grad_grad,
    check=Check({"x": Range(-3.0, 3.0), "y": Range(0.2, 3.0, signed=True)}),
    example=">>> gx, gy = gg.raw_ops.div_grad(gg.tensor(1.0), gg.tensor(2.0), gg.tensor(1.0))\n"
            ">>> gx.item(), gy.item()\n(0.5, -0.25)")


# ---------------------------------------------------------------- power


def power(x: TensorLike, y: TensorLike) -> Tensor:
    """x ** y elementwise, with broadcasting.

    A Python exponent 2 records :func:`square` (its gradient too): NumPy's ``power`` takes
    ``np.square``'s path for it, so the bits are NumPy's, at a fraction of the cost.

    Example:
        >>> import gpugrad as gg
        >>> gg.power(gg.tensor([2.0, 3.0]), 2.0).numpy().tolist()
        [4.0, 9.0]
        >>> (gg.tensor([2.0, 3.0]) ** 2).numpy().tolist()
        [4.0, 9.0]
    """
    if (y.__class__ is int or y.__class__ is float) and y == 2:
        x = unary(x)
        kind = x._data.dtype
        # a float stays a float, an int ** int stays an int (NEP 50: int ** 2.0 is a float, so it stays Pow)
        if (kind.kind == "f" or kind.char == "E") or (y.__class__ is int and kind.kind in "iu"):
            return square(x)
    x, y = binary(x, y, "Pow")
    xp = x._device.xp
    # integers to negative integer powers are an error, as NumPy's (CuPy's power computes them, so a GPU
    # would disagree with the CPU)
    if xp is not np and x._data.dtype.kind in "iu" and y._data.dtype.kind in "iu" and bool((y._data < 0).any()):
        raise binary_error("Pow", ValueError("Integers to negative integer powers are not allowed."), x, y)
    try:
        return emit("Pow", xp.power(x._data, y._data), x._device, (x, y))
    except (ValueError, TypeError) as e:
        raise binary_error("Pow", e, x, y) from None


replay.ufunc("Pow", "power")


@RegisterGradient("Pow", reads_outputs=False)
def _pow_grad(op, dy):
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    if y._data.dtype.kind == "b":  # a boolean exponent has no gradient, and y - 1 must be a number
        y = Tensor._wrap(y._data.astype(dy._data.dtype), y._device)
    if not need_x:  # a base of 1 where x <= 0 (gy is 0 there either way) keeps the unused gx finite:
        x = where(x._data > 0, x, 1.0)  # d(0 ** 0.5)/dx = inf would be an anomaly to gg.detect_anomaly
    gx, gy = pow_grad(x, y, dy, want_gy=1.0 if need_y else 0.0)  # x ** 3.0: no power and log spent on gy
    return (gx if need_x else None), (gy if need_y else None)


def _pow_grad_cpu(x, y, dy, want_gy=1.0):
    # d(x^y)/dx = y x^(y-1);  d(x^y)/dy = x^y log(x), taken as 0 where x <= 0. Products in TensorFlow's
    # order, (dy y) x^(y-1) and (dy x^y) log(x): a float16 dy times x^y stays finite where x^y log(x) overflows
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # x^(y-1) at x = 0: mended below
        gx = (dy * y) * np.power(x, y - ONE[y.dtype])
    if x.size and not x.min() > 0:  # x^(y-1) is inf or NaN only at x <= 0 (or NaN): one pass, no BLAS
        gx = np.where(_pow_mend(np, x, y, dy, gx), ZERO[gx.dtype], gx)
    if not want_gy:
        return gx, np.zeros(np.broadcast_shapes(x.shape, y.shape, dy.shape), gx.dtype)
    positive = x > 0
    safe_x = np.where(positive, x, ONE[x.dtype])
    with np.errstate(over="ignore"):
        gy = np.where(positive, (dy * np.power(safe_x, y)) * np.log(safe_x), dy.dtype.type(0))
    return gx, gy


def _pow_mend(xp, x, y, dy, gx):
    """Where gx is mended to 0: a non-finite value at x <= 0 where y is 0 (x**0 is constant) or dy is 0 (as
    TensorFlow's mul_no_nan: a zero dy contributes nothing). The value only: PowGrad's own gradient never
    looks at dy, so every derivative in dy (gg.jvp's) is the unmended y x^(y-1)."""
    return ~xp.isfinite(gx) & (x <= 0) & ((y == 0) | (dy == 0))


def _pow_grad_unfused(xp, x, y, dy, want_gy=1.0):
    positive = x > 0
    safe_x = xp.where(positive, x, 1)
    gx = xp.where((x <= 0) & ((y == 0) | (dy == 0)), 0, (dy * y) * x ** (y - 1))  # 0, not 0 * inf
    gy = xp.where(positive, (dy * safe_x ** y) * xp.log(safe_x), 0) if want_gy else xp.zeros_like(gx)
    return gx, gy


def _pow_grad_grad(op, ggx, ggy):
    # gx = dy y x^(y-1), gy = dy x^y L with L = log(x) (0 where x <= 0). Partials:
    #   dgx/dx = dy y (y-1) x^(y-2)      dgx/dy = dgy/dx = dy x^(y-1) (1 + y L)
    #   dgy/dy = dy x^y L^2              dgx/ddy = y x^(y-1),  dgy/ddy = x^y L
    # The terms in L vanish at x <= 0 and take powers of a safe base s (1 there); the two that
    # take powers of x itself go through _scaled_power (0 where the power is inf or NaN and its
    # coefficient or dy is 0). An output no gradient reached (op.filled) adds no term.
    x, y, dy = op.inputs
    need_x, need_y, need_dy = op.needs_grad
    use_gx, use_gy = 0 not in op.filled, 1 not in op.filled and bool(op.attrs["want_gy"])  # else gy is 0
    positive = x._data > 0
    safe_x = where(positive, x, 1.0)
    log_x = log(safe_x)
    mixed = where(positive, dy * power(safe_x, y - 1.0) * (1.0 + y * log_x), 0.0) if need_x or need_y else None
    grad_x = grad_y = grad_dy = None
    if need_x:
        grad_x = _sum_of(_scaled_power(dy * ggx, y * (y - 1.0), x, y - 2.0, dy) if use_gx else None,
                         ggy * mixed if use_gy else None)
    if need_y:
        grad_y = _sum_of(ggx * mixed if use_gx else None,
                         ggy * (dy * power(safe_x, y) * square(log_x)) if use_gy else None)
    if need_dy:
        grad_dy = _sum_of(_scaled_power(ggx, y, x, y - 1.0) if use_gx else None,
                          (ggy * power(safe_x, y)) * log_x if use_gy else None)  # TF's order, as gy's
    return grad_x, grad_y, grad_dy


def _sum_of(a, b):
    """a + b, where either may be None (a term left out)."""
    return b if a is None else a if b is None else a + b


pow_grad = declare(
    globals(), name="pow_grad", op_type="PowGrad", inputs=("x", "y", "dy"), outputs=("gx", "gy"), forward="power",
    params=("want_gy",), defaults={"want_gy": 1.0},
    summary="The fused gradient of x ** y in one pass; the first part is 0 where it is not finite at x <= 0 "
            "and y or dy is 0 (x**0 is constant; a zero dy contributes nothing, as TensorFlow's mul_no_nan), "
            "the second 0 where x <= 0, and 0 everywhere with want_gy=0 (a constant exponent)",
    math="((dy * y) * x ** (y - 1), (dy * x ** y) * log(x))", unfused_chain=_pow_grad_unfused,
    cpu=_pow_grad_cpu, grad=_pow_grad_grad,
    check=Check({"x": Range(0.0, 3.0, zeros=0.05, negate=0.1), "y": Range(0.5, 3.0, zeros=0.05, integers=0.3),
                 "dy": Range(-2.0, 2.0, zeros=0.05)}, params={"want_gy": 1.0}, ulps=TRANSCENDENTAL,
          unfused_ops=16),
    example=">>> gx, gy = gg.raw_ops.pow_grad(gg.tensor(2.0), gg.tensor(3.0), gg.tensor(1.0))\n"
            ">>> gx.item(), round(gy.item(), 4)\n(12.0, 5.5452)\n"
            ">>> gg.raw_ops.pow_grad(gg.tensor(0.0), gg.tensor(0.0), gg.tensor(1.0))[0].item()  # d(x**0)/dx at 0\n"
            "0.0")


def _scaled_power(g, k, x, e, dy=None):
    """``(g * k) * x**e``, 0 where ``x**e`` is inf or NaN (at x <= 0) and k or dy is 0.

    A zero k is a vanishing coefficient (``d2(x**1)/dx2 = 1 * 0 * x**-1``); a zero dy
    (PowGrad's input, a factor of g) contributes nothing, as PowGrad's own value. At
    those elements the power takes base 1, so no gradient of it meets an inf either.
    The mend never reads the cotangent this rule was given (the rest of g): a rule
    that selected on its value would have a wrong derivative in it at 0 (the
    tangent ``gg.jvp`` takes there).
    """
    xd, kd = x._data, k._data
    xp = x._device.xp
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dead = (xd <= 0) & ((kd == 0) if dy is None else ((kd == 0) | (dy._data == 0)))
        if dead.any():
            dead &= ~xp.isfinite(xp.power(xd, e._data))
    if not dead.any():
        return (g * k) * power(x, e)
    return where(dead, 0.0, (g * k) * power(where(dead, 1.0, x), e))


# ---------------------------------------------------------------- abs, sign


def abs(x: TensorLike) -> Tensor:  # noqa: A001 - NumPy's name
    """``|x|`` elementwise; its gradient at 0 is 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.abs(gg.tensor([-2.0, 3.0])).numpy().tolist()
        [2.0, 3.0]
    """
    x = unary(x)
    return emit("Abs", x._device.xp.abs(x._data), x._device, (x,))


replay.ufunc("Abs", "absolute")


@RegisterGradient("Abs", reads_outputs=False, donates_dy=True)
def _abs_grad(op, dy):
    return (abs_grad(op.inputs[0], dy),)


def _abs_grad_cpu(x, dy, out=None):
    return np.multiply(dy, np.sign(x), out=out)


def _abs_grad_grad(op, g):
    x, _ = op.inputs
    # sign(x) is piecewise constant: x gets zeros, as TensorFlow (Sign's gradient) and PyTorch (sgn's) give
    return (zeros_of(x) if op.needs_grad[0] else None), abs_grad(x, g)


abs_grad = declare(
    globals(), name="abs_grad", op_type="AbsGrad", inputs=("x", "dy"), forward="abs",
    summary="Fused gradient of abs: dy sign(x), with sign(0) = 0 and sign(NaN) = NaN",
    math="dy * where(x > 0, 1, where(x < 0, -1, x * 0))", generated=True,
    cpu=_abs_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_abs_grad_grad,
    check=Check({"x": Range(-3.0, 3.0, zeros=0.05)}),
    example=">>> gg.raw_ops.abs_grad(gg.tensor([-2.0, 0.0, 3.0]), gg.tensor([1.0, 1.0, 1.0])).numpy().tolist()\n"
            "[-1.0, 0.0, 1.0]")


def sign(x: TensorLike) -> Tensor:
    """-1, 0 or 1 by the sign of x; its gradient is zero (not None), as in TensorFlow and PyTorch.

    Example:
        >>> import gpugrad as gg
        >>> gg.sign(gg.tensor([-2.0, 0.0, 3.0])).numpy().tolist()
        [-1.0, 0.0, 1.0]
    """
    x = unary(x)
    return emit("Sign", x._device.xp.sign(x._data), x._device, (x,))


@RegisterGradient("Sign", reads_outputs=False)
def _sign_grad(op, dy):
    return (zeros_of(op.inputs[0]),)  # piecewise constant: zeros, as TensorFlow's SignGrad and PyTorch's sign


# ---------------------------------------------------------------- maximum, minimum, where, clip


# maximum and minimum pick one input per element: one forward, one fused gradient and one rule serve both
_PICKS = {"Maximum": ("maximum", operator.ge), "Minimum": ("minimum", operator.le)}  # ufunc, "x is picked"


def _pick(op_type, x, y):
    x, y = binary(x, y, op_type)
    try:
        return emit(op_type, getattr(x._device.xp, _PICKS[op_type][0])(x._data, y._data), x._device, (x, y))
    except (ValueError, TypeError) as e:
        raise binary_error(op_type, e, x, y) from None


def _pick_grad_cpu(x_is_picked, x, y, dy):
    return cpu_fast.split_by_mask(x_is_picked(x, y), dy)  # np.where's bits without its branch per element


def _picked_rule(op, dy):  # Maximum, Minimum: dy to the picked input
    return _PICK_GRADS[op.type](*op.inputs, dy)


def _picked_grad_rule(op, ggx, ggy):  # MaximumGrad, MinimumGrad: a selection, linear in dy only
    x, y, _ = op.inputs
    return None, None, where(_PICKS[op.type[:-len("Grad")]][1](x._data, y._data), ggx, ggy)


for _op_type in _PICKS:
    RegisterGradient(_op_type, reads_outputs=False)(_picked_rule)


def maximum(x: TensorLike, y: TensorLike) -> Tensor:
    """The larger of x and y elementwise; at a tie the gradient goes to x.

    Example:
        >>> import gpugrad as gg
        >>> gg.maximum(gg.tensor([1.0, 5.0]), 3.0).numpy().tolist()
        [3.0, 5.0]
    """
    return _pick("Maximum", x, y)


def _declare_pick(name, op_type, which, compare):
    return declare(
        globals(), name=f"{name}_grad", op_type=f"{op_type}Grad", inputs=("x", "y", "dy"), outputs=("gx", "gy"),
        forward=name, summary=f"Fused gradient of {name}: dy goes to the {which} of x and y (to x at a tie), "
                              f"0 to the other",
        math=f"(where(x {compare} y, dy, 0), where(x {compare} y, 0, dy))",
        cpu=functools.partial(_pick_grad_cpu, _PICKS[op_type][1]), grad=_picked_grad_rule,
        check=Check({"y": Range(-2.0, 2.0, equal_to="x")}),
        example=f">>> gx, gy = gg.raw_ops.{name}_grad(gg.tensor([1.0, 5.0]), gg.tensor([3.0, 3.0]), "
                f"gg.tensor([1.0, 1.0]))\n>>> gx.numpy().tolist(), gy.numpy().tolist()\n"
                + ("([0.0, 1.0], [1.0, 0.0])" if name == "maximum" else "([1.0, 0.0], [0.0, 1.0])"))


maximum_grad = _declare_pick("maximum", "Maximum", "larger", ">=")


def minimum(x: TensorLike, y: TensorLike) -> Tensor:
    """The smaller of x and y elementwise; at a tie the gradient goes to x.

    Example:
        >>> import gpugrad as gg
        >>> gg.minimum(gg.tensor([1.0, 5.0]), 3.0).numpy().tolist()
        [1.0, 3.0]
    """
    return _pick("Minimum", x, y)


minimum_grad = _declare_pick("minimum", "Minimum", "smaller", "<=")
_PICK_GRADS = {"Maximum": maximum_grad, "Minimum": minimum_grad}


def where(cond: TensorLike, x: TensorLike | None = None, y: TensorLike | None = None) -> Tensor:
    """x where ``cond`` is true, else y; ``cond`` is a boolean tensor or array.

    With ``cond`` alone it is ``nonzero(cond)``, as in NumPy: a tuple of int64
    index tensors, one per axis, not recorded (no gradient).

    A Python number in x or y is weak (NEP 50), as in NumPy 2: ``where(c, int8_x, 2)`` is int8.
    An int out of the tensor's bounds raises OverflowError, as NumPy's ufuncs do (``np.where``
    wraps it to another value).

    Example:
        >>> import gpugrad as gg
        >>> gg.where(gg.tensor([True, False]), 1.0, gg.tensor([5.0, 6.0])).numpy().tolist()
        [1.0, 6.0]
        >>> [i.numpy().tolist() for i in gg.where(gg.tensor([0.0, 3.0, 4.0]))]
        [[1, 2]]
    """
    if x is None and y is None:  # nonzero; here, not in ordering, so that ordering may import arithmetic
        _trace.dynamic_output_shape("nonzero (gg.where with one argument)", cond)
        c = unary(cond)
        if not c.ndim:
            raise ShapeError("op 'NonZero' (where with one argument) of a 0-d tensor is not allowed, as in "
                             "NumPy 2; use gg.atleast_1d(x) first")
        dev = c._device
        return tuple(Tensor._wrap(i.astype(np.int64, copy=False), dev) for i in dev.xp.nonzero(c._data))  # type: ignore[return-value]
    if x is None or y is None:
        raise TypeError("op 'Where' takes cond, x and y, or cond alone (for nonzero), not cond and one of x, y")
    x, y = binary(x, y, "Where")
    dev = x._device
    if hasattr(cond, "_data"):
        mask = cond._data if cond.__class__ is Tensor else cond._data.copy()  # a Variable's may change
    else:
        mask = dev.xp.array(cond)  # a copy: the caller's array may change after the op
    try:
        out = (cpu_fast.select if dev is CPU else dev.xp.where)(mask, x._data, y._data)
    except ValueError:
        raise ShapeError(f"op 'Where' cannot broadcast cond of shape {mask.shape}, x of shape {x.shape} and "
                         f"y of shape {y.shape} together") from None
    return emit("Where", out, dev, (x, y), {"cond": mask})


@RegisterGradient("Where", reads_outputs=False)
def _where_grad(op, dy):
    mask = op.attrs["cond"]
    need_x, need_y = op.needs_grad
    return (where(mask, dy, 0.0) if need_x else None), (where(mask, 0.0, dy) if need_y else None)


def clip(x: TensorLike, lo: TensorLike, hi: TensorLike) -> Tensor:
    """x limited to [lo, hi], ``minimum(maximum(x, lo), hi)`` as NumPy's clip.

    The gradient passes to x where lo <= x <= hi (at a tie x == lo or x == hi it
    goes to x, as in TensorFlow's clip_by_value and PyTorch's clamp). A bound
    that is a float tensor (or Variable) has a gradient too, as in both: dy where
    it is the one picked (lo where x < lo; hi where the result is hi and x is not,
    so also everywhere when lo > hi, where NumPy's clip gives hi), summed back to
    the bound's shape. A bound of None is no bound, as in NumPy; a NaN in x or in
    a bound gives NaN (NumPy's rule, on every device) and no gradient.

    Example:
        >>> import gpugrad as gg
        >>> gg.clip(gg.tensor([-1.0, 0.5, 2.0]), 0.0, 1.0).numpy().tolist()
        [0.0, 0.5, 1.0]
        >>> lo = gg.tensor(0.0)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(lo)
        ...     y = gg.clip(gg.tensor([-1.0, -2.0, 0.5]), lo, 1.0)
        >>> tape.gradient(y, lo).item()  # two elements are lo
        2.0
    """
    x = unary(x, lo, hi)
    xp = x._device.xp
    dtype = x.dtype
    if dtype.kind in "biu":  # Python number bounds are weak (NEP 50): bool x with int bounds gives int64, as NumPy
        if dtype.kind in "iu":  # NumPy 2's clip drops an int bound beyond x's range on the side it cannot clip
            info = np.iinfo(dtype)
            lo = None if lo.__class__ is int and lo < info.min else lo
            hi = None if hi.__class__ is int and hi > info.max else hi
        try:  # one that would clip everything raises OverflowError, as NumPy 2's does
            weak = [_dt.weak_array(b, dtype).dtype for b in (lo, hi) if b.__class__ in _NUMBERS]
        except OverflowError as e:
            raise OverflowError(f"op 'Clip': {e}") from None
        floats = [d for d in weak if d.kind == "f"]  # a float bound: gpugrad's default float, as binary ops give
        dtype = floats[0] if floats else np.result_type(dtype, *weak)
    lo = -np.inf if lo is None else lo  # no bound, as in NumPy: one the forward and both gradients can compare
    hi = np.inf if hi is None else hi
    lo_data = lo if lo.__class__ in _NUMBERS else _bound(lo, x._device)
    hi_data = hi if hi.__class__ in _NUMBERS else _bound(hi, x._device)
    try:
        if xp is np:
            out = np.clip(x._data, lo_data, hi_data)
        else:  # NumPy's clip on any device: a NaN in x or in a bound gives NaN (CuPy's clip ignores a NaN bound)
            out = xp.minimum(xp.maximum(x._data, lo_data), hi_data)
    except ValueError:
        raise ShapeError(f"op 'Clip' cannot broadcast x of shape {x.shape} with bounds of shapes "
                         f"{np.shape(lo_data)} and {np.shape(hi_data)}") from None
    # float tensor bounds are inputs too (their gradient is dy where they are picked); number bounds attrs only
    bounds = tuple(name for name, b in (("lo", lo), ("hi", hi)) if isinstance(b, Tensor) and _dt.inexact(b.dtype))
    inputs = (x,) + tuple(lo if name == "lo" else hi for name in bounds)
    attrs = {"lo": lo_data, "hi": hi_data, "bounds": bounds} if bounds else {"lo": lo_data, "hi": hi_data}
    return emit("Clip", out.astype(dtype, copy=False), x._device, inputs, attrs)


_NUMBERS = frozenset([float, int])


def _bound(b, device):
    """A clip bound's number or array on ``device``: a Variable's or caller's array is copied (a later write
    must not move what the tape recorded), a host array goes to the GPU."""
    if hasattr(b, "_data"):
        return b._data if b.__class__ is Tensor else b._data.copy()
    if isinstance(b, device.array_type):
        return b.copy()  # the caller's array may change after the op; the record must not
    if isinstance(b, np.ndarray):
        return device.backend.asarray(b, None, device.index)
    return b


@RegisterGradient("Clip", reads_outputs=False, donates_dy=True)
def _clip_grad(op, dy):
    x = op.inputs[0]
    lo, hi = op.attrs["lo"], op.attrs["hi"]
    bounds = op.attrs.get("bounds", ())
    if not bounds and not getattr(lo, "ndim", 0) and not getattr(hi, "ndim", 0):
        return (clip_grad(x, dy, lo, hi),)  # number bounds: the fused kernel (it may write into dy's buffer)
    # array bounds: masks. out = minimum(maximum(x, lo), hi): x passes where lo <= x <= hi (ties: x's, as
    # TensorFlow and PyTorch); hi is picked where maximum(x, lo) > hi, lo where x < lo and hi is not (TensorFlow's
    # ClipByValueGrad masks, which agree wherever lo <= hi); the engine sums each to its input's shape
    xp, xd = x._device.xp, x._data
    to_hi = xp.maximum(xd, lo) > hi
    masks = {"x": (xd >= lo) & (xd <= hi), "hi": to_hi, "lo": (xd < lo) & ~to_hi}
    return tuple(where(masks[name], dy, 0.0) if need else None
                 for name, need in zip(("x",) + bounds, op.needs_grad))


def _clip_grad_cpu(x, dy, out=None, lo=None, hi=None):
    return cpu_fast.select_or_zero((x >= lo) & (x <= hi), dy, out)


def _clip_grad_grad(op, g):
    x, _ = op.inputs
    return None, clip_grad(x, g, op.attrs["lo"], op.attrs["hi"])


clip_grad = declare(
    globals(), name="clip_grad", op_type="ClipGrad", inputs=("x", "dy"), params=("lo", "hi"), forward="clip",
    summary="Fused gradient of clip: dy where lo <= x <= hi, else 0 (lo and hi: numbers, or arrays or tensors "
            "that broadcast against x)", math="where((x >= lo) & (x <= hi), dy, 0)",
    cpu=_clip_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_clip_grad_grad,
    check=Check({"x": Range(-2.0, 2.0, value=1.0)}, params={"lo": -1.0, "hi": 1.0}),
    example=">>> gg.raw_ops.clip_grad(gg.tensor([-1.0, 0.5, 2.0]), gg.tensor([1.0, 1.0, 1.0]), 0.0, 1.0).numpy().tolist()"
            "\n[0.0, 1.0, 0.0]")


TENSOR_METHODS = {"abs": abs}  # x.clip: gpugrad._numpy.methods (NumPy's min=/max=)

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "add", "subtract", "negative", "multiply", "divide", "div_grad", "power", "pow_grad", "abs", "abs_grad", "sign",
        "maximum", "maximum_grad", "minimum", "minimum_grad", "where", "clip", "clip_grad"
    ]

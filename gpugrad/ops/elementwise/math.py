"""Elementwise math: square sqrt rsqrt reciprocal exp log log1p expm1 sin cos.

The hot gradients (``SquareGrad``, ``SqrtGrad``, ``RsqrtGrad``,
``ReciprocalGrad``, ``ExpGrad``, ``LogGrad``) are declared here, each once
(:mod:`.hot`), after the forward op whose rule calls them. Rules combine
tensors with the Python operators (``g * dy``, ``-g``): the arithmetic ops,
installed on Tensor, without an import of :mod:`.arithmetic`, which imports
this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...backend.cpu_fast import CHEAP, COSTLY
from ...registry import RegisterGradient
from ..base import elementwise, emit, host_scalar, public_ops, scalar_of_broadcast, unary
from .. import replay
from ..hot import Check, Range, declare

if TYPE_CHECKING:
    from ..._typing import TensorLike
    from ...tensor import Tensor


# ---------------------------------------------------------------- square


def square(x: TensorLike) -> Tensor:
    """x * x elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.square(gg.tensor([3.0])).numpy().tolist()
        [9.0]
    """
    x = unary(x)
    data = elementwise(np.square, x._data, x._device, CHEAP)
    return emit("Square", data, x._device, (x,))


replay.ufunc("Square", "square", CHEAP)


@RegisterGradient("Square", reads_outputs=False, donates_dy=True)
def _square_grad(op, dy):
    return (square_grad(op.inputs[0], dy),)


def _square_grad_cpu(x, dy, out=None):
    c = scalar_of_broadcast(dy)
    if c is not None:  # dy from a reduction: one pass instead of two
        return np.multiply(x, c + c, out=out)
    return np.multiply(x + x, dy, out=out)


def _square_grad_grad(op, g):
    x, dy = op.inputs
    return g * (2.0 * dy), square_grad(x, g)


square_grad = declare(
    globals(), name="square_grad", op_type="SquareGrad", inputs=("x", "dy"), forward="square",
    summary="Fused gradient of square", math="(x + x) * dy", generated=True,
    cpu=_square_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_square_grad_grad,
    check=Check({"x": Range(-3.0, 3.0)}),
    example=">>> gg.raw_ops.square_grad(gg.tensor(3.0), gg.tensor(1.0)).item()\n6.0")


# ---------------------------------------------------------------- sqrt, rsqrt, reciprocal


def sqrt(x: TensorLike) -> Tensor:
    """Square root elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.sqrt(gg.tensor([4.0])).numpy().tolist()
        [2.0]
    """
    x = unary(x)
    data = elementwise(np.sqrt, x._data, x._device)
    return emit("Sqrt", data, x._device, (x,))


replay.ufunc("Sqrt", "sqrt", COSTLY)


@RegisterGradient("Sqrt", donates_dy=True)
def _sqrt_grad(op, dy):
    return (sqrt_grad(op.outputs[0], dy),)


def _sqrt_grad_cpu(y, dy, out=None):
    return np.divide(dy, y + y, out=out)


def _sqrt_grad_grad(op, g):
    y, dy = op.inputs
    out = op.outputs[0]  # dy / (2y)
    return -(g * (out / y)), sqrt_grad(y, g)


sqrt_grad = declare(
    globals(), name="sqrt_grad", op_type="SqrtGrad", inputs=("y", "dy"), forward="sqrt",
    summary="Fused gradient of sqrt from its output y", math="dy / (y + y)", generated=True,
    cpu=_sqrt_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_sqrt_grad_grad, grad_reads_outputs=True,
    check=Check({"y": Range(0.1, 5.0)}),
    example=">>> gg.raw_ops.sqrt_grad(gg.tensor(2.0), gg.tensor(1.0)).item()\n0.25")


def rsqrt(x: TensorLike) -> Tensor:
    """1 / sqrt(x) elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.rsqrt(gg.tensor([4.0])).numpy().tolist()
        [0.5]
    """
    x = unary(x)
    xp = x._device.xp
    return emit("Rsqrt", xp.reciprocal(xp.sqrt(x._data)), x._device, (x,))


@RegisterGradient("Rsqrt", donates_dy=True)
def _rsqrt_grad(op, dy):
    return (rsqrt_grad(op.outputs[0], dy),)


def _rsqrt_grad_cpu(y, dy, out=None):
    # left to right, dy first as in TensorFlow's RsqrtGrad: float16's y**3 overflows at y > 40 where
    # (-0.5 dy) y y y stays finite for a small dy
    g = np.multiply(dy, host_scalar(-0.5, dy), out=out)
    return np.multiply(np.multiply(np.multiply(g, y, out=out), y, out=out), y, out=out)


def _rsqrt_grad_grad(op, g):
    y, dy = op.inputs
    return g * (-1.5 * dy * y * y), rsqrt_grad(y, g)


rsqrt_grad = declare(
    globals(), name="rsqrt_grad", op_type="RsqrtGrad", inputs=("y", "dy"), forward="rsqrt",
    summary="Fused gradient of rsqrt from its output y", math="dy * -0.5 * y * y * y", generated=True,
    cpu=_rsqrt_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_rsqrt_grad_grad,
    check=Check({"y": Range(0.1, 5.0)}),
    example=">>> gg.raw_ops.rsqrt_grad(gg.tensor(0.5), gg.tensor(1.0)).item()\n-0.0625")


def reciprocal(x: TensorLike) -> Tensor:
    """1 / x elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.reciprocal(gg.tensor([4.0])).numpy().tolist()
        [0.25]
    """
    x = unary(x)
    return emit("Reciprocal", x._device.xp.reciprocal(x._data), x._device, (x,))


@RegisterGradient("Reciprocal", donates_dy=True)
def _reciprocal_grad(op, dy):
    return (reciprocal_grad(op.outputs[0], dy),)


def _reciprocal_grad_cpu(y, dy, out=None):
    # ((-dy) y) y, TensorFlow's order: float16's y * y overflows at |y| > 256 where (-dy y) y stays finite
    return np.multiply(np.multiply(np.negative(dy, out=out), y, out=out), y, out=out)


def _reciprocal_grad_grad(op, g):
    y, dy = op.inputs
    return g * (-2.0 * dy * y), reciprocal_grad(y, g)


reciprocal_grad = declare(
    globals(), name="reciprocal_grad", op_type="ReciprocalGrad", inputs=("y", "dy"), forward="reciprocal",
    summary="Fused gradient of reciprocal from its output y", math="-dy * y * y", generated=True,
    cpu=_reciprocal_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_reciprocal_grad_grad,
    check=Check({"y": Range(-5.0, 5.0)}),
    example=">>> gg.raw_ops.reciprocal_grad(gg.tensor(0.5), gg.tensor(1.0)).item()\n-0.25")


# ---------------------------------------------------------------- exp, log, expm1, log1p


def exp(x: TensorLike) -> Tensor:
    """e ** x elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.exp(gg.tensor([0.0])).numpy().tolist()
        [1.0]
    """
    x = unary(x)
    data = elementwise(np.exp, x._data, x._device)
    return emit("Exp", data, x._device, (x,))


replay.ufunc("Exp", "exp", COSTLY)


@RegisterGradient("Exp", donates_dy=True)
def _exp_grad(op, dy):
    return (exp_grad(op.outputs[0], dy),)


def _exp_grad_cpu(y, dy, out=None):
    return np.multiply(dy, y, out=out)


def _exp_grad_grad(op, g):
    y, dy = op.inputs
    return g * dy, exp_grad(y, g)


exp_grad = declare(
    globals(), name="exp_grad", op_type="ExpGrad", inputs=("y", "dy"), forward="exp",
    summary="Fused gradient of exp from its output y", math="dy * y", generated=True,
    cpu=_exp_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_exp_grad_grad,
    check=Check({"y": Range(0.0, 10.0)}),
    example=">>> gg.raw_ops.exp_grad(gg.tensor(2.0), gg.tensor(3.0)).item()\n6.0")


def log(x: TensorLike) -> Tensor:
    """Natural logarithm elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.log(gg.tensor([1.0])).numpy().tolist()
        [0.0]
    """
    x = unary(x)
    data = elementwise(np.log, x._data, x._device)
    return emit("Log", data, x._device, (x,))


replay.ufunc("Log", "log", COSTLY)


@RegisterGradient("Log", reads_outputs=False, donates_dy=True)
def _log_grad(op, dy):
    return (log_grad(op.inputs[0], dy),)


def _log_grad_cpu(x, dy, out=None):
    return np.divide(dy, x, out=out)


def _log_grad_grad(op, g):
    x, dy = op.inputs
    out = op.outputs[0]  # dy / x
    return -(g * (out / x)), log_grad(x, g)


log_grad = declare(
    globals(), name="log_grad", op_type="LogGrad", inputs=("x", "dy"), forward="log",
    summary="Fused gradient of log", math="dy / x", generated=True,
    cpu=_log_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_log_grad_grad, grad_reads_outputs=True,
    check=Check({"x": Range(0.1, 10.0, signed=True)}),
    example=">>> gg.raw_ops.log_grad(gg.tensor(4.0), gg.tensor(1.0)).item()\n0.25")


def expm1(x: TensorLike) -> Tensor:
    """e ** x - 1 elementwise, accurate near 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.expm1(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    x = unary(x)
    data = elementwise(np.expm1, x._data, x._device)
    return emit("Expm1", data, x._device, (x,))


replay.ufunc("Expm1", "expm1", COSTLY)


@RegisterGradient("Expm1")
def _expm1_grad(op, dy):
    return (dy * (op.outputs[0] + 1.0),)


def log1p(x: TensorLike) -> Tensor:
    """log(1 + x) elementwise, accurate near 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.log1p(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    x = unary(x)
    data = elementwise(np.log1p, x._data, x._device)
    return emit("Log1p", data, x._device, (x,))


replay.ufunc("Log1p", "log1p", COSTLY)


@RegisterGradient("Log1p", reads_outputs=False)
def _log1p_grad(op, dy):
    return (dy / (op.inputs[0] + 1.0),)


# ---------------------------------------------------------------- sin, cos


def sin(x: TensorLike) -> Tensor:
    """Sine elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.sin(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    x = unary(x)
    return emit("Sin", x._device.xp.sin(x._data), x._device, (x,))


replay.ufunc("Sin", "sin")


@RegisterGradient("Sin", reads_outputs=False)
def _sin_grad(op, dy):
    return (dy * cos(op.inputs[0]),)


def cos(x: TensorLike) -> Tensor:
    """Cosine elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.cos(gg.tensor([0.0])).numpy().tolist()
        [1.0]
    """
    x = unary(x)
    return emit("Cos", x._device.xp.cos(x._data), x._device, (x,))


replay.ufunc("Cos", "cos")


@RegisterGradient("Cos", reads_outputs=False)
def _cos_grad(op, dy):
    return (-(dy * sin(op.inputs[0])),)


# ---------------------------------------------------------------- cbrt


def cbrt(x: TensorLike) -> Tensor:
    """The real cube root elementwise (negative for negative x), as ``numpy.cbrt``.

    Example:
        >>> import gpugrad as gg
        >>> gg.cbrt(gg.tensor([-8.0, 27.0], dtype="float64")).numpy().tolist()
        [-2.0, 3.0]
    """
    x = unary(x)
    data = elementwise(np.cbrt, x._data, x._device)
    return emit("Cbrt", data, x._device, (x,))


@RegisterGradient("Cbrt", donates_dy=True)
def _cbrt_grad(op, dy):
    return (cbrt_grad(op.outputs[0], dy),)


def _cbrt_grad_cpu(y, dy, out=None):
    square = np.asarray(np.multiply(y, y))  # an array, 0-d ones included (out=... needs NumPy 2.3)
    return np.divide(dy, np.multiply(square, host_scalar(3.0, square), out=square), out=out)


def _cbrt_grad_grad(op, g):
    # d/dy [dy / (3 y^2)] = -2 dy / (3 y^3) = -2 out / y
    y, dy = op.inputs
    out = op.outputs[0]
    return -(g * (2.0 * out / y)), cbrt_grad(y, g)


cbrt_grad = declare(
    globals(), name="cbrt_grad", op_type="CbrtGrad", inputs=("y", "dy"), forward="cbrt",
    summary="Fused gradient of cbrt from its output y", math="dy / (y * y * 3.0)", generated=True,
    cpu=_cbrt_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_cbrt_grad_grad, grad_reads_outputs=True,
    check=Check({"y": Range(0.2, 3.0, signed=True)}),
    example=">>> gg.raw_ops.cbrt_grad(gg.tensor(2.0), gg.tensor(12.0)).item()\n1.0")


TENSOR_METHODS = {"exp": exp, "log": log, "sqrt": sqrt, "square": square}


__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "square", "square_grad", "sqrt", "sqrt_grad", "rsqrt", "rsqrt_grad", "reciprocal", "reciprocal_grad", "exp",
        "exp_grad", "log", "log_grad", "expm1", "log1p", "sin", "cos", "cbrt", "cbrt_grad"
    ]

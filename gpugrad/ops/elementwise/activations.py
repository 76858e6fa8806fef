"""Activations: tanh sigmoid relu leaky_relu elu softplus softsign silu (swish) mish hard_tanh hard_sigmoid
log_sigmoid (gelu is in special.py, beside erf).

Their gradients are hot gradient ops (``TanhGrad``, ``SigmoidGrad``,
``ReluGrad``, ``LeakyReluGrad``, ``EluGrad``, ``SoftplusGrad``,
``SoftsignGrad``, ``SiluGrad``, ``LogSigmoidGrad``; mish, hard_tanh and hard_sigmoid
have plain rules), each declared once (:mod:`.hot`) after its forward op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools

import numpy as np

from ...backend import cpu_fast
from ...backend.cpu_fast import CHEAP, COSTLY
from ...registry import RegisterGradient
from ...tensor import Tensor
from .arithmetic import abs, multiply, sign, where  # noqa: A004 - NumPy's name
from ..base import CPU, ONE, constant_arg, elementwise, emit, public_ops, unary, zeros_of
from .. import replay
from ..hot import TRANSCENDENTAL, Check, Range, declare
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import TensorLike


def _float_data(x):
    """x's array, integers and booleans as float32 (the activations' results of integers)."""
    return x._data if _dt.floating(x.dtype) else x._data.astype(np.float32)


def softplus_array(device, d):
    """log(1 + e**d) of float array ``d`` on ``device``, stable for large |d|: ``max(d, 0) + log1p(e**-|d|)``.

    Example:
        >>> import numpy as np
        >>> from gpugrad.backend import CPU
        >>> softplus_array(CPU, np.array([0.0, 800.0])).tolist()
        [0.6931471805599453, 800.0]
    """
    xp = device.xp
    return relu_array(device, d) + xp.log1p(xp.exp(-xp.abs(d)))


# ---------------------------------------------------------------- tanh


def tanh(x: TensorLike) -> Tensor:
    """Hyperbolic tangent elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.tanh(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    if x.__class__ is not Tensor:
        x = unary(x)
    data = elementwise(np.tanh, x._data, x._device)
    return emit("Tanh", data, x._device, (x,))


replay.ufunc("Tanh", "tanh", COSTLY)


@RegisterGradient("Tanh", donates_dy=True)
def _tanh_grad(op, dy):
    return (tanh_grad(op.outputs[0], dy),)


def _tanh_grad_cpu(y, dy, out=None):
    return np.multiply(dy, ONE[y.dtype] - y * y, out=out)


def _tanh_grad_grad(op, g):
    y, dy = op.inputs
    return multiply(g, -2.0 * dy * y), tanh_grad(y, g)


tanh_grad = declare(
    globals(), name="tanh_grad", op_type="TanhGrad", inputs=("y", "dy"), forward="tanh",
    summary="Fused gradient of tanh from its output y", math="dy * (1 - y * y)", generated=True,
    cpu=_tanh_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_tanh_grad_grad,
    check=Check({"y": Range(-1.0, 1.0)}),
    example=">>> gg.raw_ops.tanh_grad(gg.tensor(0.5), gg.tensor(1.0)).item()\n0.75")


# ---------------------------------------------------------------- sigmoid


def sigmoid_array(device, x):
    """The sigmoid of array ``x`` on ``device``, finite for any x, in x's float dtype.

    Example:
        >>> import numpy as np
        >>> from gpugrad.backend import CPU
        >>> sigmoid_array(CPU, np.array([0.0])).tolist()
        [0.5]
    """
    if not _dt.floating(x.dtype):
        x = x.astype(np.float32)  # integers and booleans: float32, as the other float results of integers
    if device is CPU:
        return cpu_fast.run(cpu_fast.sigmoid, (x,), COSTLY)
    xp = device.xp
    e = xp.exp(-xp.abs(x))  # exp(-|x|) never overflows: 1/(1+e) for x >= 0, e/(1+e) for x < 0
    return (xp.where(x >= 0, 1, e) / (1 + e)).astype(x.dtype, copy=False)


def sigmoid(x: TensorLike) -> Tensor:
    """1 / (1 + e**-x) elementwise, without overflow for large ``|x|``.

    Example:
        >>> import gpugrad as gg
        >>> gg.sigmoid(gg.tensor([0.0])).numpy().tolist()
        [0.5]
    """
    x = unary(x)
    return emit("Sigmoid", sigmoid_array(x._device, x._data), x._device, (x,))


@RegisterGradient("Sigmoid", donates_dy=True)
def _sigmoid_grad(op, dy):
    return (sigmoid_grad(op.outputs[0], dy),)


def _sigmoid_grad_cpu(y, dy, out=None):
    return np.multiply(dy, y * (ONE[y.dtype] - y), out=out)


def _sigmoid_grad_grad(op, g):
    y, dy = op.inputs
    return multiply(g, dy * (1.0 - 2.0 * y)), sigmoid_grad(y, g)


sigmoid_grad = declare(
    globals(), name="sigmoid_grad", op_type="SigmoidGrad", inputs=("y", "dy"), forward="sigmoid",
    summary="Fused gradient of sigmoid from its output y", math="dy * (y * (1 - y))", generated=True,
    cpu=_sigmoid_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_sigmoid_grad_grad,
    check=Check({"y": Range(0.0, 1.0)}),
    example=">>> gg.raw_ops.sigmoid_grad(gg.tensor(0.5), gg.tensor(1.0)).item()\n0.25")


# ---------------------------------------------------------------- relu, leaky_relu


def relu_array(device, d, out=None):
    """max(d, 0) of array ``d`` on ``device``, into ``out`` if given.

    Example:
        >>> import numpy as np
        >>> from gpugrad.backend import CPU
        >>> relu_array(CPU, np.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    if device is CPU:
        return cpu_fast.run(cpu_fast.relu, (d,), CHEAP if _dt.floating(d.dtype) else None, out)
    return device.xp.maximum(d, 0, out=out)


def relu(x: TensorLike) -> Tensor:
    """max(x, 0) elementwise; the gradient at 0 is 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.relu(gg.tensor([-1.0, 2.0])).numpy().tolist()
        [0.0, 2.0]
    """
    x = unary(x)
    return emit("Relu", relu_array(x._device, x._data), x._device, (x,))


@replay.replays("Relu", graph_safe=replay.float_graph_safe, expression=(("x",), (), "maximum(x, 0)"))
def _relu_replay(inputs, attrs, outputs, device):
    # relu_array's calls for float arrays, prebound
    if len(outputs) != 1 or not replay.floats_of_one_dtype(inputs, outputs):
        return None
    (x,), out = inputs, outputs[0]
    if device is CPU:
        return functools.partial(cpu_fast.run, cpu_fast.relu, (x,), CHEAP, out)
    return functools.partial(device.xp.maximum, x, 0, out=out)


@RegisterGradient("Relu", donates_dy=True)
def _relu_grad(op, dy):
    return (relu_grad(op.outputs[0], dy),)


def _relu_grad_cpu(y, dy, out=None):
    return np.multiply(dy, y > 0, out=out)


def _relu_grad_grad(op, g):
    y, _ = op.inputs
    # piecewise linear: y gets zeros, as TensorFlow's ReluGradGrad and PyTorch's threshold_backward give
    return (zeros_of(y) if op.needs_grad[0] else None), relu_grad(y, g)


relu_grad = declare(
    globals(), name="relu_grad", op_type="ReluGrad", inputs=("y", "dy"), forward="relu",
    summary="Fused gradient of relu from its output y: dy where y > 0, else 0", math="dy * (y > 0)",
    generated=True, cpu=_relu_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_relu_grad_grad,
    check=Check({"y": Range(0.0, 3.0, zeros=0.05)}),
    example=">>> gg.raw_ops.relu_grad(gg.tensor([0.0, 2.0]), gg.tensor([5.0, 5.0])).numpy().tolist()\n[0.0, 5.0]")


def leaky_relu(x: TensorLike, alpha: float = 0.2) -> Tensor:
    """x where x > 0, else alpha * x.

    Example:
        >>> import gpugrad as gg
        >>> gg.leaky_relu(gg.tensor([-1.0, 2.0]), alpha=0.1).numpy().tolist()
        [-0.10000000149011612, 2.0]
    """
    x = unary(x)
    alpha = constant_arg(alpha, "alpha", "LeakyRelu")
    xp = x._device.xp
    d = x._data
    out = (cpu_fast.select if x._device is CPU else xp.where)(d > 0, d, d * x.dtype.type(alpha))
    return emit("LeakyRelu", out, x._device, (x,), {"alpha": alpha})


@RegisterGradient("LeakyRelu", reads_outputs=False, donates_dy=True)
def _leaky_relu_grad(op, dy):
    return (leaky_relu_grad(op.inputs[0], dy, op.attrs["alpha"]),)


def _leaky_relu_grad_cpu(x, dy, out=None, alpha=0.2):
    result = cpu_fast.select(x > 0, dy, dy * dy.dtype.type(alpha))
    if out is None:
        return result
    out[...] = result
    return out


def _leaky_relu_grad_grad(op, g):
    x, _ = op.inputs
    # piecewise linear: x gets zeros, as TensorFlow's LeakyReluGradGrad and PyTorch's leaky_relu_backward give
    return (zeros_of(x) if op.needs_grad[0] else None), leaky_relu_grad(x, g, op.attrs["alpha"])


leaky_relu_grad = declare(
    globals(), name="leaky_relu_grad", op_type="LeakyReluGrad", inputs=("x", "dy"), params=("alpha",),
    defaults={"alpha": 0.2}, forward="leaky_relu",
    summary="Fused gradient of leaky_relu: dy where x > 0, else alpha dy", math="where(x > 0, dy, dy * alpha)",
    generated=True, cpu=_leaky_relu_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_leaky_relu_grad_grad,
    check=Check({"x": Range(-5.0, 3.0, zeros=0.05)}, params={"alpha": 0.2}),
    example=(">>> gg.raw_ops.leaky_relu_grad(gg.tensor([-1.0, 2.0]), gg.tensor([1.0, 1.0]), 0.5).numpy().tolist()"
             "\n[0.5, 1.0]"))


# ---------------------------------------------------------------- elu, softplus, softsign


def elu(x: TensorLike, alpha: float = 1.0) -> Tensor:
    """x where x > 0, else alpha * (e**x - 1).

    Example:
        >>> import gpugrad as gg
        >>> gg.elu(gg.tensor([0.0, 2.0])).numpy().tolist()
        [0.0, 2.0]
    """
    x = unary(x)
    alpha = constant_arg(alpha, "alpha", "Elu")
    xp = x._device.xp
    negative_part = xp.expm1(xp.minimum(x._data, 0)) * x.dtype.type(alpha)
    out = xp.where(x._data > 0, x._data, negative_part)
    return emit("Elu", out, x._device, (x,), {"alpha": alpha})


@RegisterGradient("Elu", reads_outputs=False, donates_dy=True)
def _elu_grad(op, dy):
    return (elu_grad(op.inputs[0], dy, op.attrs["alpha"]),)


def _elu_grad_cpu(x, dy, out=None, alpha=1.0):
    slope = np.exp(np.minimum(x, 0)) * x.dtype.type(alpha)  # alpha e^x, valid where x <= 0
    return np.multiply(dy, cpu_fast.select(x > 0, ONE[slope.dtype], slope).astype(dy.dtype, copy=False), out=out)


def _elu_grad_grad(op, g):
    # d/dx [dy * alpha e^x] = dy * alpha e^x on x <= 0, 0 elsewhere
    x, dy = op.inputs
    alpha = op.attrs["alpha"]
    curvature = where(x._data > 0, 0.0, elu_grad(x, dy, alpha))
    return multiply(g, curvature), elu_grad(x, g, alpha)


elu_grad = declare(
    globals(), name="elu_grad", op_type="EluGrad", inputs=("x", "dy"), params=("alpha",), defaults={"alpha": 1.0},
    forward="elu", summary="Fused gradient of elu: dy where x > 0, else dy alpha e**x",
    math="dy * where(x > 0, 1, exp(where(x < 0, x, 0)) * alpha)",
    cpu=_elu_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_elu_grad_grad,
    check=Check({"x": Range(-5.0, 3.0, zeros=0.05)}, params={"alpha": 1.3}, ulps=TRANSCENDENTAL),
    example=">>> gg.raw_ops.elu_grad(gg.tensor([0.0, 2.0]), gg.tensor([1.0, 1.0])).numpy().tolist()\n[1.0, 1.0]")


def softplus(x: TensorLike) -> Tensor:
    """log(1 + e**x) elementwise, stable for large ``|x|``.

    Example:
        >>> import gpugrad as gg
        >>> gg.softplus(gg.tensor([100.0])).numpy().tolist()
        [100.0]
    """
    x = unary(x)
    return emit("Softplus", softplus_array(x._device, x._data), x._device, (x,))


@RegisterGradient("Softplus", reads_outputs=False, donates_dy=True)
def _softplus_grad(op, dy):
    return (softplus_grad(op.inputs[0], dy),)


def _softplus_grad_cpu(x, dy, out=None):
    return np.multiply(dy, cpu_fast.sigmoid(x).astype(dy.dtype, copy=False), out=out)


def _softplus_grad_grad(op, g):
    x, dy = op.inputs
    s = sigmoid(x)
    return multiply(g, dy * s * (1.0 - s)), softplus_grad(x, g)


softplus_grad = declare(
    globals(), name="softplus_grad", op_type="SoftplusGrad", inputs=("x", "dy"), forward="softplus",
    summary="Fused gradient of softplus: dy sigmoid(x)",
    math="dy * (where(x >= 0, 1, exp(-abs(x))) / (1 + exp(-abs(x))))",
    cpu=_softplus_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_softplus_grad_grad,
    check=Check({"x": Range(-30.0, 30.0, zeros=0.05)}, ulps=TRANSCENDENTAL),
    example=">>> gg.raw_ops.softplus_grad(gg.tensor(0.0), gg.tensor(1.0)).item()\n0.5")


def softsign(x: TensorLike) -> Tensor:
    """``x / (1 + |x|)`` elementwise, as ``tf.nn.softsign`` and ``torch.nn.functional.softsign``.

    Example:
        >>> import gpugrad as gg
        >>> gg.softsign(gg.tensor([-3.0, 0.0, 1.0])).numpy().tolist()
        [-0.75, 0.0, 0.5]
    """
    x = unary(x)
    xp = x._device.xp
    d = _float_data(x)
    return emit("Softsign", d / (1 + xp.abs(d)), x._device, (x,))


@RegisterGradient("Softsign", reads_outputs=False, donates_dy=True)
def _softsign_grad(op, dy):
    return (softsign_grad(op.inputs[0], dy),)


def _softsign_grad_cpu(x, dy, out=None):
    denominator = np.asarray(np.add(ONE[x.dtype], np.abs(x)))  # an array, 0-d ones included (out=... needs NumPy 2.3)
    np.multiply(denominator, denominator, out=denominator)
    return np.divide(dy, denominator, out=out)


def _softsign_grad_grad(op, g):
    # d/dx [dy / (1 + |x|)^2] = -2 dy sign(x) / (1 + |x|)^3
    x, dy = op.inputs
    from_dy = softsign_grad(x, g)  # g / (1 + |x|)^2
    return from_dy * (-2.0 * dy) * sign(x) / (1.0 + abs(x)), from_dy


softsign_grad = declare(
    globals(), name="softsign_grad", op_type="SoftsignGrad", inputs=("x", "dy"), forward="softsign",
    summary="Fused gradient of softsign: dy / (1 + abs(x))**2", math="dy / ((1 + abs(x)) * (1 + abs(x)))",
    generated=True, cpu=_softsign_grad_cpu, cost=CHEAP, reuses_dy=True, grad=_softsign_grad_grad,
    check=Check({"x": Range(-5.0, 5.0, zeros=0.05)}),
    example=">>> gg.raw_ops.softsign_grad(gg.tensor([-1.0, 0.0]), gg.tensor([1.0, 1.0])).numpy().tolist()\n[0.25, 1.0]")


# ---------------------------------------------------------------- silu (swish), mish, hard_tanh, hard_sigmoid, log_sigmoid


def silu(x: TensorLike) -> Tensor:
    """x * sigmoid(x) elementwise, as ``tf.nn.silu`` and ``torch.nn.functional.silu``.

    Example:
        >>> import gpugrad as gg
        >>> gg.silu(gg.tensor([0.0, 100.0])).numpy().tolist()
        [0.0, 100.0]
    """
    x = unary(x)
    d = _float_data(x)
    return emit("Silu", d * sigmoid_array(x._device, d), x._device, (x,))


swish = silu  # tf.nn.swish is tf.nn.silu


@RegisterGradient("Silu", reads_outputs=False, donates_dy=True)
def _silu_rule(op, dy):
    return (silu_grad(op.inputs[0], dy),)


def _silu_grad_cpu(x, dy, out=None):
    s = cpu_fast.sigmoid(x)
    one = ONE[s.dtype]
    return np.multiply(dy, (s * (one + x * (one - s))).astype(dy.dtype, copy=False), out=out)


def _silu_grad_grad(op, g):
    # d/dx [dy s (1 + x (1 - s))] = dy s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x)
    x, dy = op.inputs
    s = sigmoid(x)
    return g * dy * (s * (1.0 - s)) * (2.0 + x * (1.0 - 2.0 * s)), silu_grad(x, g)


_SIGMOID_MATH = "(where(x >= 0, 1, exp(-abs(x))) / (1 + exp(-abs(x))))"  # cpu_fast.sigmoid's formula

silu_grad = declare(
    globals(), name="silu_grad", op_type="SiluGrad", inputs=("x", "dy"), forward="silu",
    summary="Fused gradient of silu: dy s (1 + x (1 - s)) with s = sigmoid(x)",
    math=f"dy * ({_SIGMOID_MATH} * (1 + x * (1 - {_SIGMOID_MATH})))", generated=True,
    cpu=_silu_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_silu_grad_grad,
    check=Check({"x": Range(-20.0, 20.0, zeros=0.05)}, ulps=TRANSCENDENTAL, scale="abs(dy) * (1 + abs(x))"),
    example=">>> gg.raw_ops.silu_grad(gg.tensor(0.0), gg.tensor(1.0)).item()\n0.5")


def mish(x: TensorLike) -> Tensor:
    """x * tanh(softplus(x)) elementwise, as ``torch.nn.functional.mish``.

    Example:
        >>> import gpugrad as gg
        >>> gg.mish(gg.tensor([0.0, 100.0])).numpy().tolist()
        [0.0, 100.0]
    """
    x = unary(x)
    xp = x._device.xp
    d = _float_data(x)
    softplus_d = softplus_array(x._device, d)
    return emit("Mish", d * xp.tanh(softplus_d), x._device, (x,))


@RegisterGradient("Mish", reads_outputs=False)
def _mish_grad(op, dy):
    # d/dx [x tanh(sp(x))] = t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x))
    x = op.inputs[0]
    t = tanh(softplus(x))
    return (dy * (t + x * (1.0 - t * t) * sigmoid(x)),)


def hard_tanh(x: TensorLike, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clipped to [min_val, max_val], as ``torch.nn.functional.hardtanh``; the gradient passes
    strictly inside the bounds (0 at them, as PyTorch).

    Example:
        >>> import gpugrad as gg
        >>> gg.hard_tanh(gg.tensor([-3.0, 0.5, 2.0])).numpy().tolist()
        [-1.0, 0.5, 1.0]
    """
    x = unary(x)
    min_val, max_val = constant_arg(min_val, "min_val", "HardTanh"), constant_arg(max_val, "max_val", "HardTanh")
    if not min_val <= max_val:
        raise ValueError(f"hard_tanh: min_val {min_val!r} must not be above max_val {max_val!r}")
    xp = x._device.xp
    d = _float_data(x)
    out = xp.minimum(xp.maximum(d, d.dtype.type(min_val)), d.dtype.type(max_val))
    return emit("HardTanh", out, x._device, (x,), {"min_val": min_val, "max_val": max_val})


@RegisterGradient("HardTanh", reads_outputs=False)
def _hard_tanh_grad(op, dy):
    d = op.inputs[0]._data
    inside = (d > op.attrs["min_val"]) & (d < op.attrs["max_val"])
    return (where(inside, dy, 0.0),)


def hard_sigmoid(x: TensorLike) -> Tensor:
    """relu6(x + 3) / 6 elementwise, as ``torch.nn.functional.hardsigmoid``; the gradient is 1/6
    strictly inside (-3, 3), else 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.hard_sigmoid(gg.tensor([-4.0, 0.0, 4.0])).numpy().tolist()
        [0.0, 0.5, 1.0]
    """
    x = unary(x)
    xp = x._device.xp
    d = _float_data(x)
    out = xp.minimum(xp.maximum(d + d.dtype.type(3), d.dtype.type(0)), d.dtype.type(6)) / d.dtype.type(6)
    return emit("HardSigmoid", out, x._device, (x,))


@RegisterGradient("HardSigmoid", reads_outputs=False)
def _hard_sigmoid_grad(op, dy):
    d = op.inputs[0]._data
    return (where((d > -3) & (d < 3), dy / 6.0, 0.0),)


def log_sigmoid(x: TensorLike) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x) elementwise, stable for large ``|x|``.

    Example:
        >>> import gpugrad as gg
        >>> gg.log_sigmoid(gg.tensor([-100.0, 0.0], dtype="float64")).numpy().round(6).tolist()
        [-100.0, -0.693147]
    """
    x = unary(x)
    xp = x._device.xp
    d = _float_data(x)
    out = xp.minimum(d, d.dtype.type(0)) - xp.log1p(xp.exp(-xp.abs(d)))
    return emit("LogSigmoid", out, x._device, (x,))


@RegisterGradient("LogSigmoid", reads_outputs=False, donates_dy=True)
def _log_sigmoid_rule(op, dy):
    return (log_sigmoid_grad(op.inputs[0], dy),)


def _log_sigmoid_grad_cpu(x, dy, out=None):
    return np.multiply(dy, cpu_fast.sigmoid(-x).astype(dy.dtype, copy=False), out=out)


def _log_sigmoid_grad_grad(op, g):
    # d/dx [dy sigmoid(-x)] = -dy s (1 - s), s = sigmoid(x)
    x, dy = op.inputs
    s = sigmoid(x)
    return -(g * dy * (s * (1.0 - s))), log_sigmoid_grad(x, g)


log_sigmoid_grad = declare(
    globals(), name="log_sigmoid_grad", op_type="LogSigmoidGrad", inputs=("x", "dy"), forward="log_sigmoid",
    summary="Fused gradient of log_sigmoid: dy sigmoid(-x)",
    math="dy * (where(x <= 0, 1, exp(-abs(x))) / (1 + exp(-abs(x))))",
    cpu=_log_sigmoid_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_log_sigmoid_grad_grad, generated=True,
    check=Check({"x": Range(-30.0, 30.0, zeros=0.05)}, ulps=TRANSCENDENTAL),
    example=">>> gg.raw_ops.log_sigmoid_grad(gg.tensor(0.0), gg.tensor(1.0)).item()\n0.5")


TENSOR_METHODS = {"tanh": tanh, "sigmoid": sigmoid, "relu": relu}

__all__ = public_ops(globals(), not_ops=("sigmoid_array", "relu_array", "softplus_array"))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "tanh", "tanh_grad", "sigmoid", "sigmoid_grad", "relu", "relu_grad", "leaky_relu", "leaky_relu_grad", "elu",
        "elu_grad", "softplus", "softplus_grad", "softsign", "softsign_grad", "silu", "swish", "silu_grad", "mish",
        "hard_tanh", "hard_sigmoid", "log_sigmoid", "log_sigmoid_grad"
    ]

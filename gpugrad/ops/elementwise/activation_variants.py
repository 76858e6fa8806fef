"""More activations, as PyTorch's ``torch.nn.functional`` has them: relu6, selu, celu, hardswish, logit.

Each is one op with its gradient rule beside it; a rule is made of recorded ops, so every order of
gradient follows (the masks of the piecewise ones are constants, as in PyTorch's double backward).
Each forward's array function is also its replay kernel under ``gg.function`` (:func:`.replay.elementwise`).
selu's gradient is the hot gradient ``SeluGrad`` (:mod:`.hot`: one pass on the CPU, one generated CUDA
kernel on a GPU), with a rule of its own for the second order.
gelu's tanh form is ``gelu(x, approximate="tanh")`` in :mod:`.special`, beside the exact one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...backend.cpu_fast import COSTLY
from ...registry import RegisterGradient
from ...tensor import Tensor
from .arithmetic import minimum, where
from ..base import constant_arg, emit, public_ops, real_operand
from .. import replay
from ..hot import TRANSCENDENTAL, Check, Range, declare
from .math import exp

if TYPE_CHECKING:
    from ..._typing import TensorLike

# SELU's constants (Klambauer et al. 2017), as torch.nn.functional.selu and tf.nn.selu
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def relu6(x: TensorLike) -> Tensor:
    """min(max(x, 0), 6) elementwise, as ``torch.nn.functional.relu6`` and ``tf.nn.relu6``; the gradient
    passes strictly inside (0, 6) (0 at the bounds, as both).

    Example:
        >>> import gpugrad as gg
        >>> gg.relu6(gg.tensor([-1.0, 3.0, 8.0])).numpy().tolist()
        [0.0, 3.0, 6.0]
    """
    x, d = real_operand(x, "Relu6")
    return emit("Relu6", _relu6_array(x._device.xp, d), x._device, (x,))


def _relu6_array(xp, d):
    return xp.minimum(xp.maximum(d, d.dtype.type(0)), d.dtype.type(6))


replay.elementwise("Relu6", _relu6_array)


@RegisterGradient("Relu6", reads_outputs=False)
def _relu6_grad(op, dy):
    d = op.inputs[0]._data
    return (where((d > 0) & (d < 6), dy, 0.0),)


def selu(x: TensorLike) -> Tensor:
    """scale * (x if x > 0 else alpha * (e**x - 1)) with SELU's alpha = 1.6733 and scale = 1.0507, as
    ``torch.nn.functional.selu`` and ``tf.nn.selu``.

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 6) for v in gg.selu(gg.tensor([-1.0, 0.0, 1.0], dtype="float64")).numpy().tolist()]
        [-1.111331, 0.0, 1.050701]
    """
    x, d = real_operand(x, "Selu")
    return emit("Selu", _selu_array(x._device.xp, d), x._device, (x,))


def _selu_array(xp, d):
    t = d.dtype.type
    negative = xp.expm1(xp.minimum(d, t(0))) * t(_SELU_ALPHA * _SELU_SCALE)
    return xp.where(d > 0, d * t(_SELU_SCALE), negative)


replay.elementwise("Selu", _selu_array)


@RegisterGradient("Selu", reads_outputs=False, donates_dy=True)
def _selu_rule(op, dy):
    return (selu_grad(op.inputs[0], dy),)


def _selu_grad_cpu(x, dy, out=None):
    # d/dx = scale for x > 0, scale alpha e^x for x <= 0 (e^min(x, 0): no overflow on the unused branch)
    t = x.dtype.type
    slope = np.exp(np.minimum(x, t(0))) * t(_SELU_ALPHA * _SELU_SCALE)
    return np.multiply(dy, np.where(x > 0, t(_SELU_SCALE), slope).astype(dy.dtype, copy=False), out=out)


def _selu_grad_grad(op, g):
    # d/dx [dy scale alpha e^x] = dy scale alpha e^x on x <= 0, 0 elsewhere
    x, dy = op.inputs
    curvature = where(x._data > 0, 0.0, dy * exp(minimum(x, 0.0)) * (_SELU_ALPHA * _SELU_SCALE))
    return g * curvature, selu_grad(x, g)


selu_grad = declare(
    globals(), name="selu_grad", op_type="SeluGrad", inputs=("x", "dy"), forward="selu",
    summary="Fused gradient of selu: dy scale where x > 0, else dy scale alpha e**x",
    math=f"dy * where(x > 0, {_SELU_SCALE!r}, exp(where(x < 0, x, 0)) * {_SELU_ALPHA * _SELU_SCALE!r})",
    generated=True, cpu=_selu_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_selu_grad_grad,
    check=Check({"x": Range(-5.0, 3.0, zeros=0.05)}, ulps=TRANSCENDENTAL),
    example=(">>> round(gg.raw_ops.selu_grad(gg.tensor(1.0, dtype='float64'), gg.tensor(2.0, dtype='float64')).item(), 6)"
             "\n2.101402"))


def celu(x: TensorLike, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha * (e**(x / alpha) - 1)) elementwise, as ``torch.nn.functional.celu``
    (alpha must not be 0).

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 6) for v in gg.celu(gg.tensor([-1.0, 2.0], dtype="float64"), alpha=2.0).numpy().tolist()]
        [-0.786939, 2.0]
    """
    x, d = real_operand(x, "Celu")
    alpha = constant_arg(alpha, "alpha", "Celu")
    if alpha == 0:
        raise ValueError("op 'Celu': alpha must not be 0 (it divides x), as in torch.nn.functional.celu")
    return emit("Celu", _celu_array(x._device.xp, d, alpha), x._device, (x,), {"alpha": alpha})


def _celu_array(xp, d, alpha):
    t = d.dtype.type
    negative = xp.expm1(xp.minimum(d, t(0)) / t(alpha)) * t(alpha)
    return xp.where(d > 0, d, negative)


replay.elementwise("Celu", _celu_array, attrs=("alpha",))


@RegisterGradient("Celu", reads_outputs=False)
def _celu_grad(op, dy):
    # d/dx = 1 for x > 0, e^(x / alpha) for x <= 0
    x = op.inputs[0]
    return (dy * where(x._data > 0, 1.0, exp(minimum(x, 0.0) * (1.0 / op.attrs["alpha"]))),)


def hardswish(x: TensorLike) -> Tensor:
    """x * relu6(x + 3) / 6 elementwise, as ``torch.nn.functional.hardswish`` (MobileNetV3).

    Gradient, PyTorch's: 0 for x < -3, x / 3 + 1/2 for -3 <= x <= 3, 1 for x > 3.

    Example:
        >>> import gpugrad as gg
        >>> gg.hardswish(gg.tensor([-4.0, 0.0, 1.5, 4.0])).numpy().tolist()
        [-0.0, 0.0, 1.125, 4.0]
    """
    x, d = real_operand(x, "Hardswish")
    return emit("Hardswish", _hardswish_array(x._device.xp, d), x._device, (x,))


def _hardswish_array(xp, d):
    t = d.dtype.type
    gate = xp.minimum(xp.maximum(d + t(3), t(0)), t(6))
    return d * gate / t(6)


replay.elementwise("Hardswish", _hardswish_array)


@RegisterGradient("Hardswish", reads_outputs=False)
def _hardswish_grad(op, dy):
    x = op.inputs[0]
    d = x._data
    middle = (d >= -3) & (d <= 3)
    return (dy * where(middle, x * (1.0 / 3.0) + 0.5, where(d > 3, 1.0, 0.0)),)


def logit(x: TensorLike, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)) elementwise, the inverse of sigmoid, as ``torch.logit`` and ``scipy.special.logit``.

    With ``eps``, x is first clamped to [eps, 1 - eps] and the gradient is 0 outside that interval
    (``torch.logit(x, eps)``); without, logit(0) = -inf, logit(1) = inf, NaN outside [0, 1].

    Example:
        >>> import gpugrad as gg
        >>> gg.logit(gg.tensor([0.5, 0.0], dtype="float64"), eps=0.25).numpy().round(4).tolist()
        [0.0, -1.0986]
    """
    x, d = real_operand(x, "Logit")
    if eps is not None:
        eps = constant_arg(eps, "eps", "Logit")
        if not 0 <= eps <= 0.5:
            raise ValueError(f"op 'Logit': eps must lie in [0, 0.5], not {eps!r}")
        eps = float(eps)
    return emit("Logit", _logit_array(x._device.xp, d, eps), x._device, (x,), {"eps": eps})


def _logit_array(xp, d, eps):
    t = d.dtype.type
    if eps is not None:
        d = xp.minimum(xp.maximum(d, t(eps)), t(1 - eps))  # not clip: NumPy's clip of bfloat16 gives float32
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.log(d / (t(1) - d))


replay.elementwise("Logit", _logit_array, attrs=("eps",))


@RegisterGradient("Logit", reads_outputs=False)
def _logit_grad(op, dy):
    # d/dx log(x / (1 - x)) = 1 / (x (1 - x)); 0 outside [eps, 1 - eps] when clamped (PyTorch's)
    x, eps = op.inputs[0], op.attrs["eps"]
    if eps is None:
        return (dy / (x * (1.0 - x)),)
    d = x._data
    inside = (d >= eps) & (d <= 1 - eps)
    safe = where(inside, x, 0.5)  # no 1 / 0 outside, where a second order would meet 0 * inf
    return (where(inside, dy / (safe * (1.0 - safe)), 0.0),)


TENSOR_METHODS: dict = {"logit": logit}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "relu6", "selu", "selu_grad", "celu", "hardswish", "logit"
    ]

"""Losses of a distance between two tensors, with PyTorch's names and semantics: huber and smooth_l1
(the op ``Huber``), kl_div (the op ``KLDiv``) and cosine_similarity (a composite of stable ops).

``Huber``'s gradient is ``clip(pred - target, -delta, delta)``; ``KLDiv``'s is ``-target`` for the
input and ``log(target) + 1 - input`` for the target (``exp(target) * (target - input + 1)`` with
``log_target``). Both rules are composed of differentiable ops, so second order follows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _dtypes
from ... import mixed_precision as _mp
from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from .. import _autocast
from ..elementwise.arithmetic import abs, clip, divide, maximum, multiply, negative, subtract
from ..base import binary, emit, public_ops
from .losses import _NUMBERS, _check_reduction, _reduce, _shape_error
from ..elementwise.math import exp, log, sqrt
from ..reduction.reductions import normalize_axis, sum
from ..array.shape import broadcast_to

if TYPE_CHECKING:
    from ..._typing import TensorLike
    from ...tensor import Tensor


def _pair(pred, target, op_type):
    """``pred`` and ``target`` as tensors of one shape (a number target is every element's; no broadcasting)."""
    p, t = binary(pred, target, op_type)
    if p._data.shape != t._data.shape:
        if not isinstance(target, _NUMBERS):
            raise _shape_error(op_type, "input", p, "target", t)
        t = type(t)._wrap(p._device.xp.full(p.shape, t._data, dtype=t.dtype), p._device)
    return p, t


# ---------------------------------------------------------------- huber, smooth_l1


def huber(pred: TensorLike, target: TensorLike, delta: float = 1.0, reduction: str = "mean") -> Tensor:
    """Huber loss, as ``torch.nn.functional.huber_loss``: ``0.5 d**2`` where ``|d| < delta``, else
    ``delta * (|d| - 0.5 delta)``, for ``d = pred - target``.

    ``target`` has the shape of ``pred`` or is one number (no broadcasting, as
    :func:`mse`); ``delta`` > 0. Both operands get a gradient,
    ``+-clip(d, -delta, delta)``.

    Example:
        >>> import gpugrad as gg
        >>> gg.huber(gg.tensor([0.5, 3.0]), 0.0, reduction="none").numpy().tolist()
        [0.125, 2.5]
    """
    if _mp.active and (out := _autocast.float32_op(huber, (pred, target), delta=delta,
                                                   reduction=reduction)) is not None:
        return out
    _check_reduction(reduction, "huber")
    if not delta > 0:
        raise ValueError(f"op 'Huber' takes delta > 0 (as PyTorch), got {delta!r}")
    p, t = _pair(pred, target, "Huber")
    xp = p._device.xp
    d = p._data - t._data
    a = xp.abs(d)
    out = xp.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)).astype(d.dtype, copy=False)
    return _reduce(emit("Huber", out, p._device, (p, t), {"delta": float(delta)}), reduction)


@RegisterGradient("Huber", reads_outputs=False)
def _huber_grad(op, dy):
    # d/dpred = clip(pred - target, -delta, delta) = -d/dtarget
    p, t = op.inputs
    delta = op.attrs["delta"]
    g = multiply(dy, clip(subtract(p, t), -delta, delta))
    need_p, need_t = op.needs_grad
    return (g if need_p else None), (negative(g) if need_t else None)


def smooth_l1(pred: TensorLike, target: TensorLike, beta: float = 1.0, reduction: str = "mean") -> Tensor:
    """Smooth L1 loss, as ``torch.nn.functional.smooth_l1_loss``: ``0.5 d**2 / beta`` where
    ``|d| < beta``, else ``|d| - 0.5 beta``; ``huber(delta=beta) / beta``, and ``|d|`` when beta is 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.smooth_l1(gg.tensor([0.5, 3.0]), 0.0, beta=2.0, reduction="none").numpy().tolist()
        [0.0625, 2.0]
    """
    if _mp.active and (out := _autocast.float32_op(smooth_l1, (pred, target), beta=beta,
                                                   reduction=reduction)) is not None:
        return out
    _check_reduction(reduction, "smooth_l1")
    if not beta >= 0:
        raise ValueError(f"op 'smooth_l1' takes beta >= 0 (as PyTorch), got {beta!r}")
    if beta == 0:
        p, t = _pair(pred, target, "smooth_l1")
        return _reduce(abs(subtract(p, t)), reduction)
    return _reduce(divide(huber(pred, target, delta=beta, reduction="none"), beta), reduction)


# ---------------------------------------------------------------- kl_div

_KL_REDUCTIONS = ("mean", "batchmean", "sum", "none")


def kl_div(input: TensorLike, target: TensorLike, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence of ``target`` from ``exp(input)``, as ``torch.nn.functional.kl_div``.

    ``input`` holds log-probabilities; ``target`` probabilities (or
    log-probabilities with ``log_target=True``), of the input's shape or one
    number. Elementwise ``target * (log(target) - input)``, 0 where target is 0
    (``exp(target) * (target - input)`` with ``log_target``). ``reduction``:
    ``"mean"`` over every element (PyTorch's default, not the divergence),
    ``"batchmean"`` the sum over the first axis's length (the divergence per
    example), ``"sum"``, ``"none"``. Both operands get a gradient.

    Example:
        >>> import gpugrad as gg
        >>> q = gg.log(gg.tensor([[0.5, 0.5]]))
        >>> round(gg.kl_div(q, gg.tensor([[0.25, 0.75]]), reduction="batchmean").item(), 4)
        0.1308
    """
    if _mp.active and (out := _autocast.float32_op(kl_div, (input, target), reduction=reduction,
                                                   log_target=log_target)) is not None:
        return out
    if reduction not in _KL_REDUCTIONS:
        raise ValueError(f"kl_div reduction is 'mean', 'batchmean', 'sum' or 'none', not {reduction!r}")
    x, t = _pair(input, target, "KLDiv")
    xp = x._device.xp
    xd, td = x._data, t._data
    if log_target:
        out = xp.exp(td) * (td - xd)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = xp.where(td == 0, 0, td * xp.log(td)).astype(xd.dtype, copy=False) - td * xd  # xlogy(t, t) - t x
    out = emit("KLDiv", out, x._device, (x, t), {"log_target": bool(log_target)})
    if reduction == "batchmean":
        return sum(out) / (x.shape[0] if x.ndim else 1)
    return _reduce(out, reduction)


@RegisterGradient("KLDiv", reads_outputs=False)
def _kl_div_grad(op, dy):
    # d/dinput = -t,  d/dt = log(t) + 1 - input;  with log_target: -exp(t) and exp(t) (t - input + 1)
    x, t = op.inputs
    need_x, need_t = op.needs_grad
    p = exp(t) if op.attrs["log_target"] else t
    grad_x = negative(multiply(dy, p)) if need_x else None
    grad_t = None
    if need_t:
        if op.attrs["log_target"]:
            grad_t = multiply(dy, multiply(p, subtract(t, x) + 1.0))
        else:
            with np.errstate(divide="ignore"):
                grad_t = multiply(dy, subtract(log(t) + 1.0, x))
    return grad_x, grad_t


# ---------------------------------------------------------------- cosine_similarity


def cosine_similarity(x1: TensorLike, x2: TensorLike, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``, as ``torch.nn.functional.cosine_similarity``.

    PyTorch's current formula: each operand divided by its own norm, the
    norm held at least ``eps``, then ``sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps))``
    over ``dim``; the operands broadcast. The norm is ``sqrt(max(sum(x**2), eps**2))``,
    equal to ``max(|x|, eps)``, so a zero vector has a finite gradient.

    Example:
        >>> import gpugrad as gg
        >>> c = gg.cosine_similarity(gg.tensor([[1.0, 0.0], [1.0, 1.0]]), gg.tensor([[2.0, 0.0], [-1.0, -1.0]]))
        >>> [round(v, 4) for v in c.numpy().tolist()]
        [1.0, -1.0]
    """
    a, b = binary(x1, x2, "cosine_similarity")
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"op 'cosine_similarity' needs x1 and x2 that broadcast, got shapes {a.shape} and "
                         f"{b.shape}") from None
    if not shape:
        raise ShapeError("op 'cosine_similarity' needs tensors of at least one dimension, got scalars")
    axis = normalize_axis(dim, len(shape))
    if not (_dtypes.floating(a.dtype) and _dtypes.floating(b.dtype)):
        raise DTypeError(f"op 'cosine_similarity' takes float tensors, got {a.dtype} and {b.dtype}")
    # broadcast first (PyTorch): an operand repeated along dim has the norm of the repeated vector
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    floor = float(eps) ** 2
    # each operand over its own norm first (PyTorch): no overflow of |x1| |x2|
    na = sqrt(maximum(sum(multiply(a, a), axis=axis, keepdims=True), floor))
    nb = sqrt(maximum(sum(multiply(b, b), axis=axis, keepdims=True), floor))
    return sum(multiply(divide(a, na), divide(b, nb)), axis=axis)


__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = ["huber", "smooth_l1", "kl_div", "cosine_similarity"]

"""Likelihood losses of PyTorch's names: nll_loss (log-probabilities against class labels) and
binary_cross_entropy (probabilities against binary targets).

``nll_loss`` is linear in its input (a Mul by a constant coefficient and a Sum, the core
softmax_cross_entropy's options share: :func:`gpugrad.ops.loss.losses.weighted_nll`), so its gradients
are theirs. ``binary_cross_entropy`` is the op ``BinaryCrossEntropy`` with PyTorch's clamped logs
and its gradient rule ``(p - t) / max(p (1 - p), 1e-12)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _device_checks, _dtypes
from ... import mixed_precision as _mp
from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from .. import _autocast
from ..elementwise.arithmetic import divide, maximum, multiply, negative, subtract
from ..base import binary, emit, public_ops, unary
from .losses import _NUMBERS, _check_reduction, _label_tensor, _reduce, _shape_error, class_weight, weighted_nll
from ..elementwise.math import log, log1p
from ..array.ordering import moveaxis

if TYPE_CHECKING:
    from ..._typing import TensorLike


def nll_loss(log_probs: TensorLike, target: TensorLike, weight: TensorLike | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer class ``target`` under ``log_probs``, as ``torch.nn.functional.nll_loss``.

    Shapes are PyTorch's, classes on axis 1: ``log_probs`` (C,) with ``target`` (),
    (N, C) with (N,), or (N, C, d1, ...) with (N, d1, ...). The loss of an
    example is ``-weight[t] * log_probs[t]``; a target equal to ``ignore_index``
    (default -100, as PyTorch) adds nothing and is not counted; ``"mean"``
    divides the sum by the sum of the weights of the counted targets (nan when
    none counts, as PyTorch). ``weight`` (C,) gets no gradient (as in PyTorch).
    A target outside [0, C) raises IndexOutOfRangeError (on a GPU at the next
    host read, :mod:`gpugrad._device_checks`).

    Example:
        >>> import gpugrad as gg
        >>> logp = gg.log(gg.tensor([[0.5, 0.5], [0.25, 0.75]]))
        >>> round(gg.nll_loss(logp, [0, 1]).item(), 4)
        0.4904
        >>> round(gg.nll_loss(logp, [0, -100]).item(), 4)
        0.6931
        >>> round(gg.nll_loss(logp, [0, 1], weight=[3.0, 1.0]).item(), 4)
        0.5918
    """
    if _mp.active and (out := _autocast.float32_op(nll_loss, (log_probs,), target=target, weight=weight,
                                                   ignore_index=ignore_index, reduction=reduction)) is not None:
        return out
    _check_reduction(reduction, "nll_loss")
    x = unary(log_probs)
    if x.ndim == 0:
        raise ShapeError("op 'NLLLoss' needs log-probabilities of shape (C,), (N, C) or (N, C, d1, ...), got a scalar")
    wanted = x.shape[:1] + x.shape[2:] if x.ndim >= 2 else ()
    given = tuple(target.shape) if hasattr(target, "shape") else np.shape(target)  # np.shape of CuPy's is CuPy's
    if given != wanted:
        raise ShapeError(f"op 'NLLLoss' needs a target of shape {wanted} for log-probabilities of shape {x.shape} "
                         f"(classes on axis 1, as PyTorch), got {given}")
    if x.ndim >= 3:
        x = moveaxis(x, 1, -1)  # classes last, where the shared core takes them
    labels = _label_tensor(target, x, "NLLLoss", ignore_index)
    return weighted_nll(x, labels, class_weight(weight, x, "NLLLoss"), ignore_index, 0.0, reduction)


# ---------------------------------------------------------------- binary_cross_entropy

_LOG_FLOOR = -100.0  # PyTorch clamps each log to >= -100, so p = 0 or 1 gives a finite loss
_EPS = float(np.float32(1e-12))  # PyTorch's floor of p (1 - p) in the gradient: its EPSILON, a float32 1e-12


def binary_cross_entropy(probs: TensorLike, targets: TensorLike, weight: TensorLike | None = None,
                         reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities ``probs`` in [0, 1] against ``targets``, as
    ``torch.nn.functional.binary_cross_entropy``.

    Elementwise ``-weight * (t * log(p) + (1 - t) * log(1 - p))`` with each log
    clamped to >= -100 (PyTorch's clamp); the gradient is PyTorch's,
    ``(p - t) / max(p (1 - p), 1e-12)`` for ``probs`` and ``log(1 - p) - log(p)``
    (clamped) for ``targets``. ``targets`` have the shape of ``probs`` or are
    one number; ``weight`` broadcasts to it. A probability outside [0, 1]
    raises IndexOutOfRangeError (on a GPU at the next host read). From logits,
    :func:`sigmoid_cross_entropy` is the stable form.

    Example:
        >>> import gpugrad as gg
        >>> losses = gg.binary_cross_entropy(gg.tensor([0.5, 1.0, 0.0]), [1.0, 0.0, 0.0], reduction="none")
        >>> [round(v, 4) for v in losses.numpy().tolist()]
        [0.6931, 100.0, 0.0]
    """
    if _mp.active and (out := _autocast.float32_op(binary_cross_entropy, (probs, targets), weight=weight,
                                                   reduction=reduction)) is not None:
        return out
    _check_reduction(reduction, "binary_cross_entropy")
    p, t = binary(probs, targets, "BinaryCrossEntropy")
    if p._data.shape != t._data.shape:
        if not isinstance(targets, _NUMBERS):
            raise _shape_error("BinaryCrossEntropy", "probs", p, "targets", t)
        t = unary(p._device.xp.full(p.shape, targets, dtype=p.dtype), p)  # one number: every element's target
    if not _dtypes.floating(p.dtype):
        raise DTypeError(f"op 'BinaryCrossEntropy' takes float probabilities, got dtype {p.dtype}")
    pd = p._data
    outside = ((pd < 0) | (pd > 1)).astype(np.int8)
    _device_checks.check(outside, 0, 1, "op 'BinaryCrossEntropy' needs probabilities in [0, 1] (as PyTorch), "
                                        "got one outside")
    xp = p._device.xp
    with np.errstate(divide="ignore"):
        log_p = xp.maximum(xp.log(pd), _LOG_FLOOR)
        log_q = xp.maximum(xp.log1p(-pd), _LOG_FLOOR)
    out = emit("BinaryCrossEntropy", -(t._data * log_p + (1 - t._data) * log_q), p._device, (p, t))
    if weight is not None:
        out = multiply(out, weight)
        if out.shape != p.shape:
            raise ShapeError(f"op 'BinaryCrossEntropy' needs a weight that broadcasts to the probabilities' shape "
                             f"{p.shape}, got a loss of shape {out.shape}")
    return _reduce(out, reduction)


@RegisterGradient("BinaryCrossEntropy", reads_outputs=False)
def _binary_cross_entropy_grad(op, dy):
    # d/dp = (p - t) / max(p (1 - p), eps),  d/dt = max(log(1 - p), -100) - max(log(p), -100)   (PyTorch's)
    p, t = op.inputs
    need_p, need_t = op.needs_grad
    grad_p = grad_t = None
    if need_p:
        grad_p = multiply(dy, divide(subtract(p, t), maximum(multiply(p, 1.0 - p), _EPS)))
    if need_t:
        with np.errstate(divide="ignore"):
            grad_t = multiply(dy, subtract(maximum(log1p(negative(p)), _LOG_FLOOR), maximum(log(p), _LOG_FLOOR)))
    return grad_p, grad_t


__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = ["nll_loss", "binary_cross_entropy"]

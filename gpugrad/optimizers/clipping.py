"""Gradient clipping by norm: per tensor (``clip_by_norm``) or over a list (``clip_by_global_norm``).

Clipping works on the gradients' arrays directly and is not recorded on any
tape. On a GPU the norm and the scale stay on the device (no host sync): each
gradient is multiplied by ``max_norm / max(norm, max_norm)``, which is exactly
1 when the norm is within bounds. On the CPU gradients within bounds are
returned unchanged.

Example:
    >>> import gpugrad as gg
    >>> grads, norm = gg.clip_by_global_norm([gg.tensor([3.0]), gg.tensor([4.0])], 1.0)
    >>> [g.numpy().tolist() for g in grads], norm.item()
    ([[0.6000000238418579], [0.800000011920929]], 5.0)
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from ..backend import CPU
from ..tensor import Tensor, ensure_tensor
from .._tracing import declare

__all__ = ["clip_by_global_norm", "clip_by_norm", "global_norm"]


def _check_max_norm(max_norm):
    value = float(max_norm)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"max_norm must be a positive finite number, got {max_norm!r}")
    return value


def _sum_of_squares(array, xp):
    """sum(array^2) as a 0-d array on the array's device, accumulated in at least float32."""
    if array.dtype == np.float16:
        array = array.astype(np.float32)
    flat = array.reshape(-1)
    return xp.dot(flat, flat)  # BLAS on the CPU, one reduction kernel on a GPU


def _global_norm(tensors):
    """The global L2 norm of ``tensors`` (None skipped): a 0-d array on their device, or a host float."""
    by_device = {}
    for t in tensors:
        if t is not None:
            square = _sum_of_squares(t._data, t._device.xp)
            dev = t._device
            by_device[dev] = square if dev not in by_device else by_device[dev] + square
    if not by_device:
        return None, CPU
    if len(by_device) == 1:
        (dev, total), = by_device.items()
        return dev.xp.sqrt(total), dev
    # several devices: each total comes to the host once
    return np.sqrt(np.float64(sum(float(total) for total in by_device.values()))), CPU


@declare.root(declare.HOST, effects="reads the gradients a replay gives it")
def global_norm(tensors: Iterable[Tensor | None]) -> Tensor:
    """``sqrt(sum of every element squared)`` over a list of tensors (``None`` skipped), a 0-d tensor.

    Example:
        >>> import gpugrad as gg
        >>> gg.optimizers.global_norm([gg.tensor([3.0]), None, gg.tensor([[4.0]])]).item()
        5.0
    """
    norm, dev = _global_norm(tensors)
    if norm is None:
        return Tensor(0.0, device=dev)
    return Tensor._wrap(dev.xp.asarray(norm), dev)


def _scaled(t, scale):
    """``t`` times 0-d ``scale`` in ``t``'s dtype, on ``t``'s device."""
    a = t._data
    factor = scale if t._device is CPU else t._device.xp.asarray(scale)
    return Tensor._wrap((a * factor).astype(a.dtype, copy=False), t._device)


@declare.root(declare.HOST, effects="returns its input as it is below the norm")
def clip_by_global_norm(grads: Sequence[Tensor | None], max_norm: float) -> tuple[list[Tensor | None], Tensor]:
    """Scale every gradient by ``max_norm / max(global_norm, max_norm)``; returns ``(clipped, global_norm)``.

    As TensorFlow's ``tf.clip_by_global_norm`` (and PyTorch's
    ``clip_grad_norm_`` without its epsilon): the clipped list has the same
    length, ``None`` entries stay ``None``, and the global norm is that of the
    gradients before clipping. A non-finite norm makes every gradient NaN, as
    in TensorFlow.

    Example:
        >>> import gpugrad as gg
        >>> clipped, norm = gg.clip_by_global_norm([gg.tensor([6.0, 8.0]), None], max_norm=5.0)
        >>> clipped[0].numpy().tolist(), clipped[1], norm.item()
        ([3.0, 4.0], None, 10.0)
    """
    max_norm = _check_max_norm(max_norm)
    grads = [g if g is None or isinstance(g, Tensor) else ensure_tensor(g) for g in grads]
    norm, dev = _global_norm(grads)
    if norm is None:
        return list(grads), Tensor(0.0, device=dev)
    norm_tensor = Tensor._wrap(dev.xp.asarray(norm), dev)
    if dev is CPU:
        value = float(norm)
        if value <= max_norm:
            return list(grads), norm_tensor
        scale = np.float64(max_norm / value) if math.isfinite(value) else np.float64(np.nan)
    else:
        scale = max_norm / dev.xp.maximum(norm, max_norm)
    return [None if g is None else _scaled(g, scale) for g in grads], norm_tensor


@declare.root(declare.HOST, effects="returns its input as it is below the norm")
def clip_by_norm(t: Tensor, max_norm: float) -> Tensor:
    """``t`` scaled by ``max_norm / max(norm(t), max_norm)``: its L2 norm at most ``max_norm``.

    Example:
        >>> import gpugrad as gg
        >>> gg.optimizers.clip_by_norm(gg.tensor([3.0, 4.0]), 1.0).numpy().tolist()
        [0.6000000238418579, 0.800000011920929]
    """
    return clip_by_global_norm([t], max_norm)[0][0]  # type: ignore[return-value]  # a tensor in, a tensor out

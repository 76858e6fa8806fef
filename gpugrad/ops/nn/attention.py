"""Attention's op: masked_softmax, one fused row op, and its fused gradient.

- ``MaskedSoftmax`` is the softmax of the last axis over the entries a boolean
  ``keep`` mask keeps (True = attend, PyTorch's boolean ``attn_mask``), an entry of
  ``-inf`` being dropped as well. A row with no entry kept is all zeros, as PyTorch's
  ``_safe_softmax`` (the math path of ``scaled_dot_product_attention`` since 2.5)
  gives, never NaN. The mask, the max, the exponentials and the normalisation are
  one row pass.
- Its gradient is the fused row op ``MaskedSoftmaxGrad``:
  ``dx = y * dy - y * sum(y * dy)`` per row (a masked entry has ``y = 0``, so
  ``dx = 0`` there); on a GPU one fused row kernel (``kernels/masked_softmax_grad.cu``);
  it is itself differentiable (its rule is written with gpugrad ops). On a GPU the
  forward is one fused row kernel too (``kernels/masked_softmax.cu``): each element reads
  its row twice (max, then the sum of exponentials), O(C) work per element.
- ``gg.nn.functional.scaled_dot_product_attention`` (gpugrad/nn/attention.py) is
  ``masked_softmax(q @ k^T * scale + bias, keep) @ v``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _dtypes as _dt
from ...backend import CPU
from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor, ensure_tensor
from ..base import emit, public_ops, same_device, unary
from ..elementwise.arithmetic import multiply, subtract
from ..reduction.reductions import sum

if TYPE_CHECKING:
    from ..._typing import TensorLike


def _masked_softmax_data(xp, x, keep):
    """Row softmax of array ``x`` over its last axis where bool array ``keep`` (or None) holds; 0 elsewhere
    and in a row with nothing kept. Low-precision floats are computed in float32 and rounded once."""
    if _dt.is_low(x.dtype):
        return _dt.narrow(_masked_softmax_data(xp, _dt.wide(x), keep), x)
    if x.shape[-1] == 0:
        return xp.zeros_like(x)
    masked = x if keep is None else xp.where(keep, x, -np.inf)
    shift = masked.max(axis=-1, keepdims=True)
    shift = xp.where(xp.isfinite(shift), shift, 0)  # a row with nothing kept (all -inf): exp gives zeros
    e = xp.exp(masked - shift)
    total = e.sum(axis=-1, keepdims=True)
    return e / xp.where(total == 0, 1, total)


def _keep_mask(keep, x, op_type):
    """``keep`` as a bool tensor on ``x``'s device broadcastable to ``x`` (None stays None)."""
    if keep is None:
        return None
    keep = keep if isinstance(keep, Tensor) else ensure_tensor(keep, like=x)
    same_device((x, keep), op_type)
    if keep.dtype != np.bool_:
        raise DTypeError(f"op {op_type!r} takes a bool mask (True = keep), got dtype {keep.dtype}")
    try:
        shape = np.broadcast_shapes(keep.shape, x.shape)
    except ValueError:
        shape = None
    if shape != x.shape:
        raise ShapeError(f"op {op_type!r} needs a mask broadcastable to the scores' shape {x.shape}, "
                         f"got {keep.shape}")
    return keep


def masked_softmax(x: TensorLike, keep: TensorLike | None = None) -> Tensor:
    """Softmax of ``x`` over its last axis over the entries where bool ``keep`` is True.

    ``keep`` broadcasts to ``x`` (True = attend, as PyTorch's boolean ``attn_mask``);
    entries of ``x`` that are ``-inf`` are dropped too. A row with nothing kept is all
    zeros, as PyTorch's ``torch._safe_softmax``; masked entries are 0 and get no gradient.
    The gradient is the fused row op ``MaskedSoftmaxGrad``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
        >>> keep = gg.tensor([[True, True, False], [False, False, False]])
        >>> gg.masked_softmax(x, keep).numpy().tolist()
        [[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]
    """
    x = unary(x)
    if x.ndim == 0:
        raise ShapeError("op 'MaskedSoftmax' needs a tensor of at least one dimension, got a scalar")
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'MaskedSoftmax' takes a float tensor, got dtype {x.dtype}")
    keep = _keep_mask(keep, x, "MaskedSoftmax")
    dev = x._device
    if dev is CPU or not x.size:
        data = _masked_softmax_data(dev.xp, x._data, None if keep is None else keep._data)
    else:  # one fused row kernel (kernels/masked_softmax.cu): each element finds its row's max and sum
        xp = dev.xp
        xc = xp.ascontiguousarray(x._data)
        mask = xp.ones(x.shape, dtype=bool) if keep is None else xp.broadcast_to(keep._data, x.shape)
        data = dev.backend.fused("masked_softmax", xc, mask, xc, C=x.shape[-1])
    return emit("MaskedSoftmax", data, dev, (x,) if keep is None else (x, keep))


@RegisterGradient("MaskedSoftmax")
def _masked_softmax_grad(op, dy):
    return (masked_softmax_grad(op.outputs[0], dy),) + (None,) * (len(op.inputs) - 1)


def _masked_softmax_grad_data(xp, y, dy):
    """``y * (dy - sum(y * dy))`` over the last axis of arrays ``y``, ``dy``, in float32 for 16-bit floats."""
    if _dt.is_low(y.dtype):
        return _dt.narrow(_masked_softmax_grad_data(xp, _dt.wide(y), _dt.wide(dy)), y)
    yd = y * dy
    return yd - y * yd.sum(axis=-1, keepdims=True)


def masked_softmax_grad(y: TensorLike, dy: TensorLike) -> Tensor:
    """Fused gradient of :func:`~gpugrad.masked_softmax`: ``y * (dy - sum(y * dy, axis=-1))`` from its output ``y``.

    ``y`` and ``dy`` have one shape (nothing broadcasts: a ShapeError).

    Example:
        >>> import gpugrad as gg
        >>> gg.ops.masked_softmax_grad(gg.tensor([[0.5, 0.5, 0.0]]), gg.tensor([[1.0, 3.0, 7.0]])).numpy().tolist()
        [[-0.5, 0.5, 0.0]]
    """
    y, dy = unary(y), unary(dy)
    dev = same_device((y, dy), "MaskedSoftmaxGrad")
    if y.shape != dy.shape or y.ndim == 0:
        raise ShapeError(f"op 'MaskedSoftmaxGrad' needs y and dy of one shape of at least one dimension, got "
                         f"{y.shape} and {dy.shape}")
    if dy.dtype != y.dtype:
        dy = Tensor._wrap(dy._data.astype(y.dtype), dev)
    if dev is CPU or not y.size:
        data = _masked_softmax_grad_data(dev.xp, y._data, dy._data)
    else:  # one fused row kernel (kernels/masked_softmax_grad.cu): each element sums its row of y dy
        xp = dev.xp
        yc, dyc = xp.ascontiguousarray(y._data), xp.ascontiguousarray(dy._data)
        data = dev.backend.fused("masked_softmax_grad", yc, dyc, yc, dyc, C=y.shape[-1])
    return emit("MaskedSoftmaxGrad", data, dev, (y, dy))


@RegisterGradient("MaskedSoftmaxGrad", reads_outputs=False)
def _masked_softmax_grad_grad(op, g):
    # out = y*dy - y*s, s = sum(y*dy), t = sum(g*y):  d/dy = g*(dy - s) - dy*t,  d/ddy = y*(g - t)
    y, dy = op.inputs
    need_y, need_dy = op.needs_grad
    t = sum(multiply(g, y), axis=-1, keepdims=True)
    grad_y = grad_dy = None
    if need_y:
        s = sum(multiply(y, dy), axis=-1, keepdims=True)
        grad_y = subtract(multiply(g, subtract(dy, s)), multiply(dy, t))
    if need_dy:
        grad_dy = multiply(y, subtract(g, t))
    return grad_y, grad_dy


__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = ["masked_softmax", "masked_softmax_grad"]

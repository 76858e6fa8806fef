"""Adaptive max pooling of (N, C, H, W) and (N, C, L) tensors to a given output size, as PyTorch's.

Output cell i along an axis of input size ``n`` and output size ``m`` reads the input window
``[floor(i * n / m), ceil((i + 1) * n / m))`` (PyTorch's windows, as :func:`gpugrad.adaptive_avg_pool2d`'s);
windows may overlap and differ in size by one. ``AdaptiveMaxPool2D`` takes each window's maximum (the
first in row-major order at a tie, as PyTorch's loop) and keeps its position; its gradient adds ``dy`` at
those positions (``GetItemGrad``, whose gradient reads them again: every order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...errors import ShapeError
from ...registry import NotDifferentiable, RegisterGradient
from ..base import emit, public_ops, unary
from ..array.indexing import getitem_grad
from .resize import _spatial
from ..array.shape import expand_dims, squeeze

if TYPE_CHECKING:
    from ..._typing import TensorLike


def _windows(n_in, n_out):
    """(n_out, k) input positions of each adaptive window, k its largest size; a shorter window repeats its
    last position (a repeat never changes a maximum nor, coming after it, which one is first)."""
    starts = (np.arange(n_out) * n_in) // n_out
    ends = -((-(np.arange(n_out) + 1) * n_in) // n_out)
    k = int((ends - starts).max())
    return np.minimum(starts[:, None] + np.arange(k), ends[:, None] - 1)


def _argmax_positions(xp, x, out_hw):
    """The (N, C, OH, OW) rows and columns of each adaptive window's first maximum in NCHW array ``x``."""
    rows, cols = (xp.asarray(_windows(n, m)) for n, m in zip(x.shape[2:], out_hw))
    kh, kw = rows.shape[1], cols.shape[1]
    values = x[:, :, rows[:, :, None, None], cols[None, None, :, :]]  # (N, C, OH, KH, OW, KW)
    values = values.transpose(0, 1, 2, 4, 3, 5).reshape(x.shape[:2] + tuple(out_hw) + (kh * kw,))
    arg = xp.argmax(values, axis=-1)  # row-major in the window: PyTorch's loop order, the first at a tie
    oh, ow = xp.arange(out_hw[0])[:, None], xp.arange(out_hw[1])
    return rows[oh, arg // kw], cols[ow, arg % kw]


def adaptive_max_pool2d(x: TensorLike, output_size: int | None | Sequence[int | None],
                        return_indices: bool = False) -> Any:
    """Max pooling of (N, C, H, W) ``x`` to ``output_size`` (an int, or (OH, OW) where None keeps that axis),
    as PyTorch's F.adaptive_max_pool2d: output cell (i, j) is the maximum of input rows ``floor(i*H/OH)`` to
    ``ceil((i+1)*H/OH) - 1`` and the columns alike. The gradient goes to each window's first maximum (added
    where windows overlap and share it). With ``return_indices`` it returns ``(out, indices)``: int64
    positions ``h * W + w`` in each (H, W) plane, as PyTorch's (and :func:`max_unpool2d` takes them).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[[[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]]])
        >>> gg.adaptive_max_pool2d(x, (1, 2)).numpy().tolist()
        [[[[5.0, 6.0]]]]
        >>> gg.adaptive_max_pool2d(x, (2, 2), return_indices=True)[1].numpy().tolist()
        [[[[1, 1], [3, 5]]]]
    """
    op_type = "AdaptiveMaxPool2D"
    x = unary(x)
    if x.ndim != 4:
        raise ShapeError(f"op {op_type!r} takes x of shape (N, C, H, W), got shape {x.shape}")
    _, out_hw = _spatial(op_type, x, output_size)
    if 0 in x.shape:
        raise ShapeError(f"op {op_type!r} takes a non-empty x, got shape {x.shape}")
    xp = x._device.xp
    rows, cols = _argmax_positions(xp, x._data, out_hw)
    n, c = x.shape[:2]
    key = (xp.arange(n).reshape(n, 1, 1, 1), xp.arange(c).reshape(1, c, 1, 1), rows, cols)
    attrs = {"key": key, "x_shape": x.shape}
    y = emit(op_type, x._data[key], x._device, (x,), attrs)
    if not return_indices:
        return y
    return y, emit("AdaptiveMaxPool2DIndices", (rows * x.shape[3] + cols).astype(np.int64), x._device, (x,), attrs)


@RegisterGradient("AdaptiveMaxPool2D", reads_outputs=False)
def _adaptive_max_pool2d_grad(op, dy):
    # out = x[key]:  dx = dy added at key (overlapping windows may pick one element twice)
    return (getitem_grad(dy, op.attrs["key"], op.attrs["x_shape"], True),)


NotDifferentiable("AdaptiveMaxPool2DIndices")


def adaptive_max_pool1d(x: TensorLike, output_size: int, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, L) ``x`` to length ``output_size``, as PyTorch's F.adaptive_max_pool1d:
    :func:`adaptive_max_pool2d` of a height-1 image (indices are positions along L).

    Example:
        >>> import gpugrad as gg
        >>> out, idx = gg.adaptive_max_pool1d(gg.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2, return_indices=True)
        >>> out.numpy().tolist(), idx.numpy().tolist()
        ([[[3.0, 5.0]]], [[[1, 3]]])
    """
    x = unary(x)
    if x.ndim != 3:
        raise ShapeError(f"op 'AdaptiveMaxPool1D' takes x of shape (N, C, L), got shape {x.shape}")
    if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = output_size[0]
    if output_size is None or isinstance(output_size, (tuple, list)):
        raise ValueError(f"op 'AdaptiveMaxPool1D': the output size is an int >= 1, not {output_size!r}")
    out = adaptive_max_pool2d(expand_dims(x, 2), (1, output_size), return_indices)
    return (squeeze(out[0], 2), squeeze(out[1], 2)) if return_indices else squeeze(out, 2)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "adaptive_max_pool2d", "adaptive_max_pool1d"
    ]

"""Group normalisation (``group_norm``), as PyTorch's F.group_norm: a composite of reductions and arithmetic,
whose gradients are theirs (to every order)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import DTypeError, ShapeError
from ...tensor import Tensor
from ... import _dtypes as _dt
from ..base import public_ops, unary
from ..elementwise.math import rsqrt
from ..reduction.reductions import mean, var
from ..array.shape import reshape

if TYPE_CHECKING:
    from ..._typing import TensorLike


def group_norm(x: TensorLike, num_groups: int, weight: TensorLike | None = None, bias: TensorLike | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, ...) ``x`` over each group of ``C / num_groups`` channels and all other axes but N,
    then scale by ``weight`` and shift by ``bias`` (each (C,) or None), as PyTorch's F.group_norm.

    ``(x - mean) / sqrt(var + eps)`` with the biased variance of each
    (sample, group). One group is layer norm over (C, ...) without a per-element
    affine; C groups is instance norm.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.arange(8.0), (1, 4, 2))
        >>> y = gg.group_norm(x, 2)
        >>> [round(v, 4) for v in y.numpy()[0, :2].ravel().tolist()]
        [-1.3416, -0.4472, 0.4472, 1.3416]
    """
    x = unary(x)
    if x.ndim < 2:
        raise ShapeError(f"op 'GroupNorm' takes x of shape (N, C, ...), got shape {x.shape}")
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'GroupNorm' takes a float tensor, got dtype {x.dtype}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) or num_groups < 1 \
            or x.shape[1] % num_groups:
        raise ValueError(f"op 'GroupNorm': num_groups {num_groups!r} must be an int >= 1 dividing the {x.shape[1]} "
                         f"channels of x of shape {x.shape}")
    n, c = x.shape[:2]
    groups = reshape(x, (n, int(num_groups), -1))
    centred = groups - mean(groups, axis=-1, keepdims=True)
    y = reshape(centred * rsqrt(var(groups, axis=-1, keepdims=True) + eps), x.shape)
    affine = (c,) + (1,) * (x.ndim - 2)
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None:
            t = t if isinstance(t, Tensor) else Tensor(t, x.dtype, x._device)
            if t.shape != (c,):
                raise ShapeError(f"op 'GroupNorm' takes a {name} of shape ({c},), got {t.shape}")
            y = y * reshape(t, affine) if name == "weight" else y + reshape(t, affine)
    return y


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "group_norm"
    ]

"""topk: the ``k`` largest (or smallest) elements along an axis and their indices, as ``torch.topk``.

The indices come from one stable sort (not recorded: integers carry no gradient); the values are ``x``
read at them (a recorded ``take_along_axis``, so the gradient scatters ``dy`` to the chosen elements,
as PyTorch's ``value_selecting_reduction_backward``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import DTypeError, ShapeError
from ...tensor import Tensor
from ..base import public_ops, unary
from .ordering import take_along_axis
from .shape import normalize_axis_index

if TYPE_CHECKING:
    from ..._typing import TensorLike


def topk(x: TensorLike, k: int, axis: int = -1, largest: bool = True, sorted: bool = True  # noqa: A002
         ) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements of ``x`` along
    ``axis``, as ``torch.topk``.

    The result is always in order (largest first, or smallest first), which ``sorted=False`` allows too;
    among equal elements the one with the lower index comes first; NaN counts as larger than every number
    (as in PyTorch). ``indices`` is int64. The gradient of ``values`` goes to the chosen elements.

    Example:
        >>> import gpugrad as gg
        >>> values, indices = gg.topk(gg.tensor([1.0, 5.0, 3.0, 4.0]), 2)
        >>> values.numpy().tolist(), indices.numpy().tolist()
        ([5.0, 4.0], [1, 3])
        >>> gg.topk(gg.tensor([[1.0, 5.0], [3.0, 2.0]]), 1, axis=0, largest=False)[0].numpy().tolist()
        [[1.0, 2.0]]
    """
    x = unary(x)
    if x.ndim == 0:
        x_nd, axis = x, 0
        n = 1
    else:
        axis = normalize_axis_index(axis, x.ndim, "TopK", x.shape)
        n = x.shape[axis]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= n:
        raise ShapeError(f"op 'TopK': k={k!r} is out of range for {n} elements along axis {axis} "
                         f"(tensor shape {x.shape})")
    a = x._data
    if a.dtype.kind == "c":
        raise DTypeError(f"op 'TopK' takes real numbers, not {a.dtype}")
    if x.ndim == 0:
        return x, Tensor._wrap(x._device.xp.zeros((), dtype=np.int64), x._device)
    xp = x._device.xp
    if a.dtype.kind == "f" and a.dtype.itemsize < 4 or a.dtype.kind == "V":  # 16-bit floats: sorted in float32
        a = a.astype(np.float32)
    if not largest:
        order = _argsort(xp, a, axis)  # NaN sorts last, as the largest
    elif a.dtype.kind in "biu":
        order = _argsort(xp, ~a, axis)  # ~a = -a - 1 (max - a unsigned): reversed order, no overflow
    else:
        order = _argsort(xp, -a, axis)
        nan_last = xp.take_along_axis(~xp.isnan(a), order, axis=axis).astype(np.int8)
        order = xp.take_along_axis(order, _argsort(xp, nan_last, axis), axis=axis)  # NaN first, as the largest
    return _pick(x, order, k, axis)


def _argsort(xp, key, axis):
    """A stable argsort (CuPy's argsort is stable: a radix sort)."""
    return xp.argsort(key, axis=axis, kind="stable") if xp is np else xp.argsort(key, axis=axis)


def _pick(x, order, k, axis):
    idx = order[(slice(None),) * axis + (slice(0, k),)].astype(np.int64, copy=False)
    idx = Tensor._wrap(idx, x._device)
    return take_along_axis(x, idx, axis), idx


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "topk"
    ]

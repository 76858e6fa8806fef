"""TensorFlow's segment reductions: segment_sum, segment_mean, segment_max, segment_min.

``out[s] = reduce(data[i] for i with segment_ids[i] == s)`` over the leading ``segment_ids.ndim`` axes of
``data``. Without ``num_segments`` they are ``tf.math.segment_*``: ids sorted and non-negative (checked
where the ids are read anyway), ``max(ids) + 1`` segments (a data-dependent shape), an empty segment is 0.
With ``num_segments`` they are ``tf.math.unsorted_segment_*``: ids in any order, a negative id drops its
row (as TensorFlow), an id ``>= num_segments`` raises IndexOutOfRangeError (on a GPU at the next host
read), and an empty segment holds 0 for sum and mean and the dtype's lowest (max) or highest (min) value,
as TensorFlow's ``unsorted_segment_max``/``min``. Sum is a scatter-add (``GetItemGrad``); mean divides it by
the counts; max and min are the op ``ScatterReduce`` of :mod:`~gpugrad.ops.array.scattering`, whose gradient
splits ``dy`` evenly among the elements equal to their segment's result (TensorFlow's
``_SegmentMinOrMaxGrad`` and ``_UnsortedSegmentMinOrMaxGrad``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _device_checks, _dtypes as _dt
from ..._tracing import state as _trace
from ...errors import DTypeError, IndexOutOfRangeError, ShapeError
from ...tensor import Tensor
from ..elementwise.arithmetic import divide, where
from ..base import public_ops, unary
from .indexing import _index_array, _to_device, getitem, getitem_grad
from .scattering import _lowest, _scatter_extreme

if TYPE_CHECKING:
    from ..._typing import TensorLike


def _segments(op_type, data, segment_ids, num_segments):
    """The ids on ``data``'s device with dropped rows sent to an extra last segment, and the segment count."""
    dev = data._device
    ids, host = _index_array(op_type, segment_ids, dev)
    if ids.dtype.kind not in "iu":
        raise DTypeError(f"op {op_type!r} takes integer segment ids, not {ids.dtype}")
    if tuple(data.shape[:ids.ndim]) != tuple(ids.shape):
        raise ShapeError(f"op {op_type!r}: segment_ids of shape {ids.shape} must be a prefix of data's shape "
                         f"{data.shape}")
    if num_segments is None:  # tf.math.segment_*: sorted, non-negative; the count read from the data
        if ids.ndim != 1:
            raise ShapeError(f"op {op_type!r} without num_segments takes 1-D segment ids (as tf.math.segment_*), "
                             f"not shape {ids.shape}; pass num_segments for unsorted_segment_* semantics")
        _trace.dynamic_output_shape(f"segment ids without num_segments (op {op_type!r})", segment_ids)
        xp = dev.xp
        if ids.size:
            facts = xp.stack([ids.min().astype(np.int64), ids.max().astype(np.int64),
                              (ids[1:] < ids[:-1]).any().astype(np.int64)])
            low, high, unsorted = (int(v) for v in (facts if isinstance(facts, np.ndarray) else facts.get()))
        else:
            low, high, unsorted = 0, -1, 0
        if low < 0 or unsorted:
            raise IndexOutOfRangeError(f"op {op_type!r}: segment ids must be sorted and non-negative "
                                       f"(tf.math.segment_*); pass num_segments for ids in any order")
        return _to_device(ids, host, dev), high + 1
    if isinstance(num_segments, bool) or not isinstance(num_segments, (int, np.integer)) or num_segments < 0:
        raise ValueError(f"op {op_type!r} takes num_segments >= 0, not {num_segments!r}")
    n = int(num_segments)
    _device_checks.check(ids, -(2 ** 62), n, f"op {op_type!r}: segment id {{value}} is not below "
                                             f"num_segments {n}")
    ids = _to_device(ids, host, dev)
    ids = dev.xp.where(ids < 0, n, ids)  # TensorFlow drops a negative id's row: it goes to segment n, cut off
    return ids, n


def _sum(op_type, data, segment_ids, num_segments):
    data = unary(data)
    ids, n = _segments(op_type, data, segment_ids, num_segments)
    rest = tuple(data.shape[ids.ndim:])
    total = getitem_grad(data, (ids,), (n + 1,) + rest, True)
    return getitem(total, slice(0, n)), ids, n, data


def segment_sum(data: TensorLike, segment_ids: TensorLike, num_segments: int | None = None) -> Tensor:
    """Sums of ``data``'s rows by segment, as ``tf.math.segment_sum`` (``tf.math.unsorted_segment_sum`` with
    ``num_segments``; see the module's notes). Its gradient gathers ``dy`` by segment.

    Example:
        >>> import gpugrad as gg
        >>> data = gg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> gg.segment_sum(data, [0, 0, 1]).numpy().tolist()
        [[4.0, 6.0], [5.0, 6.0]]
        >>> gg.segment_sum(data, [2, -1, 0], num_segments=3).numpy().tolist()
        [[5.0, 6.0], [0.0, 0.0], [1.0, 2.0]]
    """
    return _sum("SegmentSum", data, segment_ids, num_segments)[0]


def _counts(xp, ids, n):
    c = xp.zeros(n + 1, dtype=np.int64)
    if ids.size:
        xp.add.at(c, ids.reshape(-1), xp.ones(ids.size, dtype=np.int64))
    return c[:n]


def segment_mean(data: TensorLike, segment_ids: TensorLike, num_segments: int | None = None) -> Tensor:
    """Means of ``data``'s rows by segment, as ``tf.math.segment_mean`` (``unsorted_segment_mean`` with
    ``num_segments``); an empty segment is 0. Floating ``data`` only.

    Example:
        >>> import gpugrad as gg
        >>> gg.segment_mean(gg.tensor([1.0, 3.0, 5.0]), [0, 0, 2]).numpy().tolist()
        [2.0, 0.0, 5.0]
    """
    data = unary(data)
    if not _dt.inexact(data._data.dtype):
        raise DTypeError(f"op 'SegmentMean' takes floating data, not {data._data.dtype}")
    total, ids, n, data = _sum("SegmentMean", data, segment_ids, num_segments)
    xp = data._device.xp
    count = _counts(xp, ids, n)
    denom = xp.maximum(count, 1).astype(data._data.dtype).reshape((n,) + (1,) * (data.ndim - ids.ndim))
    return divide(total, Tensor._wrap(denom, data._device))


_BFLOAT16_MAX = 3.3895313892515355e38  # (2 - 2**-7) * 2**127: float32's largest would round to inf


def _extreme(op_type, kind, data, segment_ids, num_segments):
    data = unary(data)
    ids, n = _segments(op_type, data, segment_ids, num_segments)
    rest = tuple(data.shape[ids.ndim:])
    dtype = data._data.dtype
    xp = data._device.xp
    if dtype.kind == "b":
        raise DTypeError(f"op {op_type!r} takes numbers, not booleans")
    # TensorFlow's empty segment: lowest (max) / highest (min) for unsorted_segment_*, 0 for segment_*
    if _dt.inexact(dtype):
        top = _BFLOAT16_MAX if _dt.is_bfloat16(dtype) else float(np.finfo(dtype).max)
        empty = -top if kind == "max" else top
    else:
        empty = _lowest(dtype, kind)
    base = Tensor._wrap(xp.full((n + 1,) + rest, empty, dtype=dtype), data._device)
    out = _scatter_extreme(base, data, (ids,), kind, True)
    out = getitem(out, slice(0, n))
    if num_segments is None:
        filled = (_counts(xp, ids, n) > 0).reshape((n,) + (1,) * len(rest))
        out = where(filled, out, 0)
    return out


def segment_max(data: TensorLike, segment_ids: TensorLike, num_segments: int | None = None) -> Tensor:
    """Maxima of ``data``'s rows by segment, as ``tf.math.segment_max`` (``unsorted_segment_max`` with
    ``num_segments``). The gradient goes to the elements equal to their segment's maximum, split evenly.

    Example:
        >>> import gpugrad as gg
        >>> gg.segment_max(gg.tensor([1.0, 3.0, 2.0]), [0, 0, 1]).numpy().tolist()
        [3.0, 2.0]
    """
    return _extreme("SegmentMax", "max", data, segment_ids, num_segments)


def segment_min(data: TensorLike, segment_ids: TensorLike, num_segments: int | None = None) -> Tensor:
    """Minima of ``data``'s rows by segment, as ``tf.math.segment_min`` (``unsorted_segment_min`` with
    ``num_segments``).

    Example:
        >>> import gpugrad as gg
        >>> gg.segment_min(gg.tensor([1.0, 3.0, 2.0]), [0, 0, 1]).numpy().tolist()
        [1.0, 2.0]
    """
    return _extreme("SegmentMin", "min", data, segment_ids, num_segments)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "segment_sum", "segment_mean", "segment_max", "segment_min"
    ]

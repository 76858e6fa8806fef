"""Statistics over axes: nansum nanmean median quantile percentile ptp average, and all any count_nonzero.

All differentiable ones are compositions of recorded ops, so they need no rule
of their own: ``nansum``/``nanmean`` zero the NaNs with ``where`` (gradient 0
there); ``median`` and ``quantile`` sort the data once, outside the tape, and
read the selected elements with ``getitem`` (whose gradient scatters ``dy``
back to them) with the interpolation weights as constants; ``ptp`` is
``max - min``; ``average`` is ``sum(a * w) / sum(w)``. ``all``, ``any`` and
``count_nonzero`` are not differentiable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ShapeError
from ...registry import NotDifferentiable
from ..elementwise.arithmetic import multiply, subtract, where
from ..base import constant_arg, emit, public_ops, unary
from ..elementwise.control import cast
from ..array.indexing import getitem
from .reductions import group_size, kept_shape, normalize_axis
from .reductions import max as _max
from .reductions import mean as _mean
from .reductions import min as _min
from .reductions import sum as _sum
from ..array.shape import broadcast_to, reshape, transpose
from ...tensor import Tensor
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import Axis, DTypeLike, TensorLike


def _refuse_out(op_type, out):
    if out is not None:
        raise TypeError(f"{op_type}(out=...): a gpugrad tensor is immutable, so there is no output array "
                        f"to write into; use the tensor it returns")


def _prepared(op_type, a, dtype, out):
    """``a`` as a tensor in ``dtype`` (when given), after refusing an ``out`` array."""
    _refuse_out(op_type, out)
    a = unary(a)
    return a if dtype is None else cast(a, dtype)


def _floating(x):
    """``x`` itself when it holds floats, else cast to float64, as NumPy's statistics (and gg.mean) compute integers."""
    return x if _dt.inexact(x._data.dtype) else cast(x, np.float64)


# ---------------------------------------------------------------- nansum, nanmean


def _nan_zeroed(a):
    """``a`` with NaNs replaced by 0 (a recorded Where, so they get gradient 0), and the NaN mask."""
    if not _dt.inexact(a._data.dtype):
        return a, None
    nan = a._device.xp.isnan(a._data)
    return where(nan, 0.0, a), nan


def nansum(a: TensorLike, axis: Axis = None, dtype: DTypeLike = None, out: None = None,
           keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` treating NaNs as zero, as ``np.nansum``; the gradient is 0 at NaNs.

    Example:
        >>> import gpugrad as gg
        >>> gg.nansum(gg.tensor([1.0, float("nan"), 3.0])).item()
        4.0
    """
    a = _prepared("nansum", a, dtype, out)
    return _sum(_nan_zeroed(a)[0], axis=axis, keepdims=keepdims)


def nanmean(a: TensorLike, axis: Axis = None, dtype: DTypeLike = None, out: Any = None,
            keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` ignoring NaNs, as ``np.nanmean`` (NaN for an all-NaN slice); gradient 0 at NaNs.

    Example:
        >>> import gpugrad as gg
        >>> gg.nanmean(gg.tensor([1.0, float("nan"), 3.0])).item()
        2.0
    """
    a = _floating(_prepared("nanmean", a, dtype, out))
    zeroed, nan = _nan_zeroed(a)
    if nan is None:
        return _mean(a, axis=axis, keepdims=keepdims)
    axes = normalize_axis(axis, a.ndim)
    count = (~nan).sum(axis=axes, keepdims=keepdims)
    xp = a._device.xp
    scale = xp.asarray(1.0 / xp.maximum(count, 1), dtype=a._data.dtype)  # no inf in the tape at all-NaN slices
    out = _sum(zeroed, axis=axes, keepdims=keepdims) * scale
    empty = count == 0
    return where(empty, float("nan"), out) if bool(empty.any()) else out  # an all-NaN slice: NaN, as NumPy


# ---------------------------------------------------------------- median, quantile, percentile


def _to_last(a, axis, op_type):
    """``a`` with the reduced axes moved last and flattened into one, and those axes."""
    axes = normalize_axis(axis, a.ndim)
    if a.ndim == 0:
        return reshape(a, (1,)), axes
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = a if rest + list(axes) == list(range(a.ndim)) else transpose(a, rest + list(axes))
    lead = tuple(a.shape[i] for i in rest)
    n = group_size(a.shape, axes)
    if n == 0:
        raise ShapeError(f"op {op_type!r} of shape {a.shape} over axes {axes}: a slice with no elements "
                         f"has no {op_type.lower()}")
    return (moved if moved.shape == lead + (n,) else reshape(moved, lead + (n,))), axes


def _order_stats(xm, positions):
    """``xm[..., order[..., positions]]``: the elements of sorted rank ``positions`` (a 1-D int array)
    in each row of ``xm``, read by a recorded GetItem (its gradient scatters to those elements)."""
    xp = xm._device.xp
    order = xp.argsort(xm._data, axis=-1)  # NaNs sort last, as in NumPy
    lead = xm.shape[:-1]
    pos = xp.asarray(positions)
    grids = tuple(xp.arange(n).reshape((1,) * i + (n,) + (1,) * (len(lead) - i)) for i, n in enumerate(lead))
    return getitem(xm, grids + (order[..., pos],))


def _nan_rows(xm, v):
    """``v`` (rows of ``xm`` by last axis) set to NaN where the row of ``xm`` holds a NaN, as NumPy."""
    if not _dt.inexact(xm._data.dtype):
        return v
    nan = xm._device.xp.isnan(xm._data).any(axis=-1, keepdims=True)
    return where(nan, float("nan"), v) if bool(nan.any()) else v


def median(a: TensorLike, axis: Axis = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Tensor:
    """Median over ``axis`` (all axes by default), as ``np.median``; NaN where a slice holds a NaN.

    The gradient goes to the middle element, or half to each of the two middle
    ones for an even count.

    Example:
        >>> import gpugrad as gg
        >>> gg.median(gg.tensor([[3.0, 1.0, 2.0], [4.0, 6.0, 5.0]]), axis=1).numpy().tolist()
        [2.0, 5.0]
        >>> gg.median(gg.tensor([4.0, 1.0, 3.0, 2.0])).item()
        2.5
    """
    _refuse_out("median", out)
    a = _floating(unary(a))
    xm, axes = _to_last(a, axis, "Median")
    n = xm.shape[-1]
    if n % 2:
        v = _order_stats(xm, np.array([n // 2]))
    else:
        v = _mean(_order_stats(xm, np.array([n // 2 - 1, n // 2])), axis=-1, keepdims=True)
    v = _nan_rows(xm, v)
    shape = kept_shape(a.shape, axes) if keepdims else xm.shape[:-1]
    return reshape(v, shape)


def _lerp_weights(q, n, op_type):
    """For quantiles ``q`` (1-D, in [0, 1]) of ``n`` sorted values, NumPy's 'linear' method:
    the lower and upper ranks and the weight of the upper one."""
    virtual = q * (n - 1)
    lo = np.clip(np.floor(virtual), 0, n - 1).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    return lo, hi, virtual - lo


def _quantiles(q, scale, op_type):
    constant_arg(q, "q", op_type)  # as torch.quantile, no gradient reaches q
    if hasattr(q, "_data"):
        q = q.numpy()
    q = np.asarray(q, dtype=np.float64)
    if q.ndim > 1:
        raise ShapeError(f"op {op_type!r} takes q as a scalar or a 1-D sequence, not of shape {q.shape}")
    if q.size and not ((q >= 0) & (q <= scale)).all():
        raise ShapeError(f"op {op_type!r}: q must be in the range [0, {scale:g}], got {q.tolist()}")
    return q / scale if scale != 1 else q


def _quantile(a, q, axis, method, keepdims, op_type, weights, interpolation):
    if interpolation is not None:
        raise TypeError(f"{op_type.lower()}: 'interpolation' was renamed 'method' in NumPy; use method=")
    if method != "linear":
        raise ShapeError(f"op {op_type!r}: only method='linear' is supported, not {method!r}")
    if weights is not None:
        raise ShapeError(f"op {op_type!r}: weights are not supported")
    a = _floating(unary(a))
    xm, axes = _to_last(a, axis, op_type)
    flat_q = q.reshape(-1)
    lo, hi, g = _lerp_weights(flat_q, xm.shape[-1], op_type)
    xp = a._device.xp
    g = xp.asarray(g.astype(a._data.dtype))
    below, above = _order_stats(xm, lo), _order_stats(xm, hi)
    span = subtract(above, below)
    # NumPy's _lerp: a + (b - a) t, or b - (b - a)(1 - t) for t >= 0.5 (exact at t = 1)
    v = where(g >= 0.5, above - multiply(span, 1 - g), below + multiply(span, g))
    v = _nan_rows(xm, v)  # lead + (m,)
    shape = kept_shape(a.shape, axes) if keepdims else xm.shape[:-1]
    if q.ndim == 0:
        return reshape(v, shape)
    m = flat_q.size
    v = transpose(v, (v.ndim - 1,) + tuple(range(v.ndim - 1)))  # the q axis first, as NumPy
    return reshape(v, (m,) + shape)


def quantile(a: TensorLike, q: TensorLike, axis: Axis = None, out: None = None, overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
             weights: TensorLike | None = None, interpolation: str | None = None) -> Tensor:
    """The ``q``-th quantile(s) over ``axis``, as ``np.quantile`` with ``method='linear'`` (the only one).

    ``q`` is a scalar or a 1-D sequence in [0, 1]; for a sequence the result
    has the quantiles along a new first axis. The gradient goes to the two
    elements each quantile interpolates, with the interpolation weights.

    Example:
        >>> import gpugrad as gg
        >>> gg.quantile(gg.tensor([1.0, 2.0, 3.0, 4.0]), 0.5).item()
        2.5
        >>> gg.quantile(gg.tensor([[1.0, 4.0], [3.0, 2.0]]), [0.0, 1.0], axis=1).numpy().tolist()
        [[1.0, 2.0], [4.0, 3.0]]
    """
    _refuse_out("quantile", out)
    return _quantile(unary(a, q), _quantiles(q, 1, "Quantile"), axis, method, keepdims, "Quantile", weights, interpolation)


def percentile(a: TensorLike, q: TensorLike, axis: Axis = None, out: None = None, overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
               weights: TensorLike | None = None, interpolation: str | None = None) -> Tensor:
    """The ``q``-th percentile(s) over ``axis`` (``q`` in [0, 100]), as ``np.percentile``: ``quantile(a, q / 100)``.

    Example:
        >>> import gpugrad as gg
        >>> gg.percentile(gg.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), 25).item()
        2.0
    """
    _refuse_out("percentile", out)
    return _quantile(unary(a, q), _quantiles(q, 100, "Percentile"), axis, method, keepdims, "Percentile", weights,
                     interpolation)


# ---------------------------------------------------------------- ptp, average


def ptp(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False) -> Tensor:
    """Range (maximum minus minimum) over ``axis``, as ``np.ptp``.

    Example:
        >>> import gpugrad as gg
        >>> gg.ptp(gg.tensor([[1.0, 5.0], [3.0, 2.0]]), axis=1).numpy().tolist()
        [4.0, 1.0]
    """
    _refuse_out("ptp", out)
    a = unary(a)
    return subtract(_max(a, axis=axis, keepdims=keepdims), _min(a, axis=axis, keepdims=keepdims))


def average(a: TensorLike, axis: Axis = None, weights: TensorLike | None = None, returned: bool = False, *,
            keepdims: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Weighted mean over ``axis``, ``sum(a * w) / sum(w)``, as ``np.average``; differentiable in ``a`` and ``weights``.

    ``weights`` has ``a``'s shape, or is 1-D along the one ``axis``. With
    ``returned`` it also returns the sum of the weights (the count without weights),
    broadcast to the result's shape.

    Example:
        >>> import gpugrad as gg
        >>> gg.average(gg.tensor([1.0, 2.0, 4.0]), weights=gg.tensor([1.0, 1.0, 2.0])).item()
        2.75
        >>> avg, total = gg.average(gg.tensor([[1.0, 3.0]]), axis=1, returned=True)
        >>> avg.numpy().tolist(), total.numpy().tolist()
        ([2.0], [2.0])
    """
    a = _floating(unary(a, weights))
    axes = normalize_axis(axis, a.ndim)
    if weights is None:
        avg = _mean(a, axis=axes, keepdims=keepdims)
        count = group_size(a.shape, axes)
        scl = a._device.xp.full(avg.shape, count, dtype=a._data.dtype)
        return (avg, Tensor._wrap(scl, a._device)) if returned else avg
    w = unary(weights) if hasattr(weights, "_data") else unary(np.asarray(weights, dtype=a._data.dtype))
    if w._device is not a._device:
        raise ShapeError(f"op 'Average': weights on {w.device!r} and a on {a.device!r}; move one with .to(device)")
    w = _floating(w)
    if w.shape != a.shape:
        if axis is None:
            raise ShapeError(f"op 'Average': weights of shape {w.shape} differ from a's shape {a.shape}; "
                             f"give axis for 1-D weights")
        if w.ndim != 1:
            raise ShapeError(f"op 'Average': 1-D weights expected when shapes of a {a.shape} and "
                             f"weights {w.shape} differ")
        if len(axes) != 1 or w.shape[0] != a.shape[axes[0]]:
            raise ShapeError(f"op 'Average': weights of length {w.shape[0]} do not match a's shape {a.shape} "
                             f"along axis {axis}")
        w = reshape(w, tuple(n if i == axes[0] else 1 for i, n in enumerate(a.shape)))
        w = broadcast_to(w, a.shape)
    scl = _sum(w, axis=axes, keepdims=keepdims)
    if bool((scl._data == 0).any()):
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = _sum(multiply(a, w), axis=axes, keepdims=keepdims) / scl
    if returned:
        return avg, (scl if scl.shape == avg.shape else broadcast_to(scl, avg.shape))
    return avg


# ---------------------------------------------------------------- all, any, count_nonzero (no gradient)


def _logical_reduce(a, axis, keepdims, op_type, fn):
    a = unary(a)
    axes = normalize_axis(axis, a.ndim)
    data = fn(a._data, axes, keepdims)
    return emit(op_type, a._device.xp.asarray(data), a._device, (a,), {"axes": axes})


def all(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Whether every element over ``axis`` is nonzero (boolean; not differentiable), as ``np.all``.

    Example:
        >>> import gpugrad as gg
        >>> gg.all(gg.tensor([[1.0, 0.0], [2.0, 3.0]]), axis=1).numpy().tolist()
        [False, True]
    """
    _refuse_out("all", out)
    return _logical_reduce(a, axis, keepdims, "All", lambda d, axes, k: d.all(axis=axes, keepdims=k))


def any(a: TensorLike, axis: Axis = None, out: None = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Whether any element over ``axis`` is nonzero (boolean; not differentiable), as ``np.any``.

    Example:
        >>> import gpugrad as gg
        >>> gg.tensor([[1.0, 0.0], [0.0, 0.0]]).any(axis=1).numpy().tolist()
        [True, False]
    """
    _refuse_out("any", out)
    return _logical_reduce(a, axis, keepdims, "Any", lambda d, axes, k: d.any(axis=axes, keepdims=k))


def count_nonzero(a: TensorLike, axis: Axis = None, *, keepdims: bool = False) -> Tensor:
    """int64 count of the nonzero elements over ``axis`` (not differentiable), as ``np.count_nonzero``.

    Example:
        >>> import gpugrad as gg
        >>> gg.count_nonzero(gg.tensor([[1.0, 0.0], [2.0, 3.0]]), axis=1).numpy().tolist()
        [1, 2]
    """
    return _logical_reduce(a, axis, keepdims, "CountNonzero",
                           lambda d, axes, k: (d != 0).sum(axis=axes, keepdims=k).astype(np.int64))


NotDifferentiable("All")
NotDifferentiable("Any")
NotDifferentiable("CountNonzero")


TENSOR_METHODS = {"ptp": ptp, "all": all, "any": any}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "nansum", "nanmean", "median", "quantile", "percentile", "ptp", "average", "all", "any", "count_nonzero"
    ]

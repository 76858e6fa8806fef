"""Shape and order: repeat tile roll flip rot90 moveaxis swapaxes ravel atleast_nd, the stacks,
append, sort argsort partition take_along_axis searchsorted nonzero, and copy.

The differentiable ones but ``roll`` are compositions of differentiable ops and
have no rule of their own: ``repeat`` is a ``Gather`` (its gradient adds up each
group of copies), ``tile`` a ``BroadcastTo`` (the tape sums the copies), ``flip`` a ``GetItem`` with negative steps,
``moveaxis``/``swapaxes``/``rot90`` transposes, ``sort``/``partition``/
``take_along_axis`` an integer-array ``GetItem`` (the gradient scatters dy back
through the permutation). ``argsort``, ``searchsorted`` and ``nonzero`` give
integer tensors that are not recorded: their gradients are ``None``. ``roll`` is
the op ``Roll`` (one ``numpy.roll``/``cupy.roll`` call), whose gradient rolls dy back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..._tracing import state as _trace
from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..elementwise.arithmetic import where
from ..base import emit, public_ops, same_device, unary
from .indexing import _getitem, _index_array, _to_device, getitem, take
from .shape import _tensor_list, broadcast_to, concat, normalize_axis_index, reshape, transpose

if TYPE_CHECKING:
    from ..._typing import Axis, TensorLike


def _axes_tuple(axis, ndim, op_type, shape):
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = [normalize_axis_index(a, ndim, op_type, shape) for a in axes]
    if len(set(out)) != len(out):
        raise ShapeError(f"op {op_type!r}: repeated axis in {tuple(axes)} for shape {shape}")
    return out


def _host_ints(value, op_type, name):
    """``value`` (int, list, array, Tensor) as a host int64 array."""
    if isinstance(value, np.ndarray):
        _trace.reads_host_values()  # (a Tensor's .numpy() declares it itself)
    a = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if a.dtype.kind not in "iu":
        raise DTypeError(f"op {op_type!r} takes integer {name}, not {a.dtype}")
    return a.astype(np.int64)


# ---------------------------------------------------------------- copy, ravel, moveaxis, swapaxes


def copy(x: TensorLike) -> Tensor:
    """A new tensor with ``x``'s values, as ``numpy.copy``; recorded as ``Identity`` (gradient dy).

    Example:
        >>> import gpugrad as gg
        >>> gg.tensor([1.0, 2.0]).copy().numpy().tolist()
        [1.0, 2.0]
    """
    x = unary(x)
    return emit("Identity", x._data.copy(), x._device, (x,))


def ravel(x: TensorLike, order: str = "C") -> Tensor:
    """``x`` flattened in C order, as ``numpy.ravel``; recorded as ``Reshape``. Only ``order="C"``.

    Example:
        >>> import gpugrad as gg
        >>> gg.ravel(gg.ones((2, 3))).shape
        (6,)
    """
    if order not in ("C", "A", "K"):
        raise ValueError(f"op 'Ravel' supports order='C' only, not {order!r}; transpose first for F order")
    return reshape(x, -1)


def moveaxis(x: TensorLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``x`` with axes ``source`` moved to positions ``destination`` (ints or sequences), as ``numpy.moveaxis``.

    Example:
        >>> import gpugrad as gg
        >>> gg.moveaxis(gg.ones((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    x = unary(x)
    src = _axes_tuple(source, x.ndim, "MoveAxis", x.shape)
    dst = _axes_tuple(destination, x.ndim, "MoveAxis", x.shape)
    if len(src) != len(dst):
        raise ShapeError(f"op 'MoveAxis': source {source!r} and destination {destination!r} "
                         f"need the same number of elements")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def swapaxes(x: TensorLike, axis1: int, axis2: int) -> Tensor:
    """``x`` with axes ``axis1`` and ``axis2`` interchanged, as ``numpy.swapaxes``; a ``Transpose``.

    Example:
        >>> import gpugrad as gg
        >>> gg.ones((2, 3, 4)).swapaxes(0, 2).shape
        (4, 3, 2)
    """
    x = unary(x)
    a1 = normalize_axis_index(axis1, x.ndim, "SwapAxes", x.shape)
    a2 = normalize_axis_index(axis2, x.ndim, "SwapAxes", x.shape)
    order = list(range(x.ndim))
    order[a1], order[a2] = a2, a1
    return transpose(x, order)


# ---------------------------------------------------------------- repeat, tile, roll


def repeat(x: TensorLike, repeats: TensorLike, axis: Axis = None) -> Tensor:
    """Each element of ``x`` repeated ``repeats`` times along ``axis``, as ``numpy.repeat``.

    ``repeats`` is an int or one count per element of that axis; ``axis=None``
    works on ``x`` flattened. Recorded as a ``Gather``, whose gradient adds up
    the gradient of each group of copies.

    Example:
        >>> import gpugrad as gg
        >>> gg.repeat(gg.tensor([1.0, 2.0]), 2).numpy().tolist()
        [1.0, 1.0, 2.0, 2.0]
        >>> gg.tensor([[1.0, 2.0]]).repeat([1, 2], axis=1).numpy().tolist()
        [[1.0, 2.0, 2.0]]
    """
    x = unary(x)
    if axis is None:
        x = reshape(x, -1)
        axis = 0
    axis = normalize_axis_index(axis, x.ndim, "Repeat", x.shape)
    if isinstance(repeats, (Tensor, np.ndarray)) or hasattr(repeats, "__cuda_array_interface__"):
        _trace.dynamic_output_shape("repeat by a tensor of counts (op 'Repeat')", repeats)
    r = _host_ints(repeats, "Repeat", "repeats")
    n = x.shape[axis]
    if r.ndim > 1 or (r.ndim == 1 and r.size not in (1, n)):
        raise ShapeError(f"op 'Repeat': repeats of shape {r.shape} do not fit axis {axis} of length {n} "
                         f"(give an int or {n} counts)")
    if (r < 0).any():
        raise ShapeError(f"op 'Repeat': repeats must be >= 0, got {r.tolist()}")
    index = np.repeat(np.arange(n), r.reshape(-1) if r.ndim else int(r))
    return take(x, index, axis=axis)


def tile(x: TensorLike, reps: int | Sequence[int]) -> Tensor:
    """``x`` repeated ``reps`` times along each axis, as ``numpy.tile``.

    A shorter ``reps`` gets leading ones; a shorter ``x`` gets leading axes of
    length 1. Recorded as a ``BroadcastTo`` between reshapes (the tape sums
    the copies in the gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.tile(gg.tensor([1.0, 2.0]), 2).numpy().tolist()
        [1.0, 2.0, 1.0, 2.0]
        >>> gg.tile(gg.ones((2, 3)), (2, 1, 2)).shape
        (2, 2, 6)
    """
    x = unary(x)
    if isinstance(reps, (Tensor, np.ndarray)) or hasattr(reps, "__cuda_array_interface__"):
        _trace.dynamic_output_shape("tile by a tensor of counts (op 'Tile')", reps)
    reps = tuple(int(r) for r in _host_ints(reps, "Tile", "reps").reshape(-1))
    if any(r < 0 for r in reps):
        raise ShapeError(f"op 'Tile': reps must be >= 0, got {reps}")
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + x.shape
    y = reshape(x, tuple(d for n in shape for d in (1, n)))
    y = broadcast_to(y, tuple(d for r, n in zip(reps, shape) for d in (r, n)))
    return reshape(y, tuple(r * n for r, n in zip(reps, shape)))


def roll(x: TensorLike, shift: int | Sequence[int], axis: Axis = None) -> Tensor:
    """``x`` with its elements shifted by ``shift`` along ``axis`` (wrapping around), as ``numpy.roll``.

    ``shift`` and ``axis`` are ints or tuples that broadcast against each other;
    ``axis=None`` rolls ``x`` flattened. Recorded as ``Roll``, whose gradient rolls
    dy by the negated shifts (TensorFlow's ``Roll`` gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.roll(gg.tensor([1.0, 2.0, 3.0, 4.0]), 1).numpy().tolist()
        [4.0, 1.0, 2.0, 3.0]
        >>> gg.roll(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), (1, 1), axis=(0, 1)).numpy().tolist()
        [[4.0, 3.0], [2.0, 1.0]]
    """
    x = unary(x)
    shifts = _host_ints(shift, "Roll", "shifts")
    if axis is None:  # the flattened array rolled by the shifts' sum, as NumPy
        n = x.size
        total: dict = {None: int(shifts.sum()) % n if n else 0}
    else:
        axes = _host_ints(axis, "Roll", "axes")
        try:
            pairs = np.broadcast(shifts, axes)
        except ValueError:
            raise ShapeError(f"op 'Roll': shift {shift!r} and axis {axis!r} do not broadcast together") from None
        total = {}
        for s, a in pairs:
            a = normalize_axis_index(int(a), x.ndim, "Roll", x.shape)
            total[a] = total.get(a, 0) + int(s)
        total = {a: s % x.shape[a] if x.shape[a] else 0 for a, s in sorted(total.items())}
    total = {a: s for a, s in total.items() if s}
    if not total:
        return x
    return _roll(x, tuple(total.values()), None if None in total else tuple(total))


def _roll(x, shifts, axes):
    """The op ``Roll`` of normalised ``shifts`` along ``axes`` (None: flattened)."""
    data = x._device.xp.roll(x._data, shifts[0] if axes is None else shifts, axes)
    return emit("Roll", data, x._device, (x,), {"shifts": shifts, "axes": axes})


@RegisterGradient("Roll", reads_outputs=False)
def _roll_grad(op, dy):
    return (_roll(dy, tuple(-s for s in op.attrs["shifts"]), op.attrs["axes"]),)


# ---------------------------------------------------------------- flip, rot90


def flip(x: TensorLike, axis: Axis = None) -> Tensor:
    """``x`` with the order of elements reversed along ``axis`` (all axes for None), as ``numpy.flip``.

    Recorded as a ``GetItem`` with negative steps.

    Example:
        >>> import gpugrad as gg
        >>> gg.flip(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1).numpy().tolist()
        [[2.0, 1.0], [4.0, 3.0]]
    """
    x = unary(x)
    axes = range(x.ndim) if axis is None else _axes_tuple(axis, x.ndim, "Flip", x.shape)
    key = [slice(None)] * x.ndim
    for a in axes:
        key[a] = slice(None, None, -1)
    return getitem(x, tuple(key))


def fliplr(x: TensorLike) -> Tensor:
    """``x`` reversed along axis 1 (left/right), as ``numpy.fliplr``; needs 2 or more dimensions.

    Example:
        >>> import gpugrad as gg
        >>> gg.fliplr(gg.tensor([[1.0, 2.0]])).numpy().tolist()
        [[2.0, 1.0]]
    """
    x = unary(x)
    if x.ndim < 2:
        raise ShapeError(f"op 'FlipLR' needs a tensor of at least 2 dimensions, not shape {x.shape}")
    return flip(x, 1)


def flipud(x: TensorLike) -> Tensor:
    """``x`` reversed along axis 0 (up/down), as ``numpy.flipud``; needs 1 or more dimensions.

    Example:
        >>> import gpugrad as gg
        >>> gg.flipud(gg.tensor([1.0, 2.0])).numpy().tolist()
        [2.0, 1.0]
    """
    x = unary(x)
    if x.ndim < 1:
        raise ShapeError("op 'FlipUD' needs a tensor of at least 1 dimension, not a 0-d one")
    return flip(x, 0)


def rot90(x: TensorLike, k: int = 1, axes: Any = (0, 1)) -> Tensor:
    """``x`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (from the first towards the second), as
    ``numpy.rot90``: flips and a transpose.

    Example:
        >>> import gpugrad as gg
        >>> gg.rot90(gg.tensor([[1.0, 2.0], [3.0, 4.0]])).numpy().tolist()
        [[2.0, 4.0], [1.0, 3.0]]
    """
    x = unary(x)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ShapeError(f"op 'Rot90' takes 2 axes, not {axes!r}")
    if x.ndim < 2:
        raise ShapeError(f"op 'Rot90' needs a tensor of at least 2 dimensions, not shape {x.shape}")
    a0 = normalize_axis_index(axes[0], x.ndim, "Rot90", x.shape)
    a1 = normalize_axis_index(axes[1], x.ndim, "Rot90", x.shape)
    if a0 == a1:
        raise ShapeError(f"op 'Rot90': the axes {axes} must be different")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"op 'Rot90' takes an integer k, not {k!r}")
    k = int(k) % 4
    if k == 0:
        return getitem(x, (slice(None),))
    if k == 2:
        return flip(x, (a0, a1))
    order = list(range(x.ndim))
    order[a0], order[a1] = order[a1], order[a0]
    if k == 1:
        return transpose(flip(x, a1), order)
    return flip(transpose(x, order), a1)


# ---------------------------------------------------------------- atleast_nd, stacks, append


def _atleast(arys, fn):
    out = [fn(unary(a)) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def _at_least_1d(x):
    return x if x.ndim >= 1 else reshape(x, (1,))


def _at_least_2d(x):
    return x if x.ndim >= 2 else reshape(x, (1, -1) if x.ndim else (1, 1))


def _at_least_3d(x):
    if x.ndim >= 3:
        return x
    return reshape(x, {0: (1, 1, 1), 1: (1, x.size, 1), 2: x.shape + (1,)}[x.ndim])


def atleast_1d(*arys: TensorLike) -> Tensor:
    """Each input with at least 1 dimension, as ``numpy.atleast_1d``: one tensor, or a tuple for several.

    Example:
        >>> import gpugrad as gg
        >>> gg.atleast_1d(gg.tensor(1.0)).shape
        (1,)
    """
    return _atleast(arys, _at_least_1d)


def atleast_2d(*arys: TensorLike) -> Tensor:
    """Each input with at least 2 dimensions (a vector becomes a row), as ``numpy.atleast_2d``.

    Example:
        >>> import gpugrad as gg
        >>> [t.shape for t in gg.atleast_2d(gg.tensor(1.0), gg.ones((3,)))]
        [(1, 1), (1, 3)]
    """
    return _atleast(arys, _at_least_2d)


def atleast_3d(*arys: TensorLike) -> Tensor:
    """Each input with at least 3 dimensions, as ``numpy.atleast_3d``: (N,) -> (1, N, 1), (M, N) -> (M, N, 1).

    Example:
        >>> import gpugrad as gg
        >>> gg.atleast_3d(gg.ones((2, 3))).shape
        (2, 3, 1)
    """
    return _atleast(arys, _at_least_3d)


def _stack_inputs(tup, op_type):
    if isinstance(tup, Tensor):
        raise TypeError(f"op {op_type!r} takes a list or tuple of tensors, not one tensor")
    return _tensor_list(tup, op_type)


def vstack(tup: Sequence[TensorLike]) -> Tensor:
    """Join tensors along axis 0 after :func:`atleast_2d`, as ``numpy.vstack``; a ``Concat``.

    Example:
        >>> import gpugrad as gg
        >>> gg.vstack([gg.ones((3,)), gg.zeros((3,))]).shape
        (2, 3)
    """
    return concat([_at_least_2d(t) for t in _stack_inputs(tup, "VStack")], axis=0)


def hstack(tup: Sequence[TensorLike]) -> Tensor:
    """Join tensors along axis 1 (axis 0 for vectors) after :func:`atleast_1d`, as ``numpy.hstack``.

    Example:
        >>> import gpugrad as gg
        >>> gg.hstack([gg.ones((2,)), gg.zeros((3,))]).shape
        (5,)
        >>> gg.hstack([gg.ones((2, 1)), gg.zeros((2, 3))]).shape
        (2, 4)
    """
    ts = [_at_least_1d(t) for t in _stack_inputs(tup, "HStack")]
    return concat(ts, axis=0 if ts[0].ndim == 1 else 1)


def dstack(tup: Sequence[TensorLike]) -> Tensor:
    """Join tensors along axis 2 after :func:`atleast_3d`, as ``numpy.dstack``.

    Example:
        >>> import gpugrad as gg
        >>> gg.dstack([gg.ones((2, 3)), gg.zeros((2, 3))]).shape
        (2, 3, 2)
    """
    return concat([_at_least_3d(t) for t in _stack_inputs(tup, "DStack")], axis=2)


def column_stack(tup: Sequence[TensorLike]) -> Tensor:
    """Join tensors as columns along axis 1 (vectors become columns), as ``numpy.column_stack``.

    Example:
        >>> import gpugrad as gg
        >>> gg.column_stack([gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])]).numpy().tolist()
        [[1.0, 3.0], [2.0, 4.0]]
    """
    ts = [t if t.ndim >= 2 else reshape(t, (-1, 1)) for t in _stack_inputs(tup, "ColumnStack")]
    return concat(ts, axis=1)


def append(arr: TensorLike, values: TensorLike, axis: Axis = None) -> Tensor:
    """``values`` appended to the end of ``arr`` along ``axis`` (both flattened for None), as ``numpy.append``.

    With an axis both need the same number of dimensions. A ``Concat``.

    Example:
        >>> import gpugrad as gg
        >>> gg.append(gg.tensor([1.0, 2.0]), [[3.0]]).numpy().tolist()
        [1.0, 2.0, 3.0]
        >>> gg.append(gg.ones((1, 2)), gg.zeros((1, 2)), axis=0).shape
        (2, 2)
    """
    ts = _tensor_list([arr, values], "Append")
    if axis is None:
        return concat([reshape(t, -1) for t in ts], axis=0)
    if ts[0].ndim != ts[1].ndim:
        raise ShapeError(f"op 'Append' along axis {axis} needs tensors of one number of dimensions, "
                         f"got shapes {ts[0].shape} and {ts[1].shape}")
    return concat(ts, axis=axis)


# ---------------------------------------------------------------- take_along_axis, sort, partition


def _along_key(shape, index, axis):
    """The integer-array key that reads ``x`` at ``index`` along ``axis``: aranges on the other axes."""
    key = []
    for i, n in enumerate(shape):
        if i == axis:
            key.append(index)
        else:
            r = [1] * len(shape)
            r[i] = n
            key.append(np.arange(n).reshape(r))
    return tuple(key)


def take_along_axis(x: TensorLike, indices: TensorLike, axis: Axis = -1) -> Tensor:
    """Elements of ``x`` at ``indices`` along ``axis``, as ``numpy.take_along_axis``.

    ``indices`` has ``x``'s number of dimensions and broadcasts against it on
    the other axes. Recorded as an integer-array ``GetItem``; its gradient
    adds dy up at the positions read. ``axis=None`` works on ``x`` flattened.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[10.0, 30.0, 20.0]])
        >>> gg.take_along_axis(x, gg.argsort(x), axis=1).numpy().tolist()
        [[10.0, 20.0, 30.0]]
    """
    x = unary(x, indices)
    if axis is None:
        x = reshape(x, -1)
        axis = 0
    axis = normalize_axis_index(axis, x.ndim, "TakeAlongAxis", x.shape)
    idx, _ = _index_array("TakeAlongAxis", indices, x._device)
    if idx.dtype.kind == "b" or idx.ndim != x.ndim:
        raise ShapeError(f"op 'TakeAlongAxis' takes integer indices with {x.ndim} dimensions like x "
                         f"(shape {x.shape}), not {idx.dtype} indices of shape {idx.shape}")
    try:
        np.broadcast_shapes(tuple(1 if i == axis else n for i, n in enumerate(idx.shape)),
                            tuple(1 if i == axis else n for i, n in enumerate(x.shape)))
    except ValueError:
        raise ShapeError(f"op 'TakeAlongAxis': indices of shape {idx.shape} do not broadcast against "
                         f"x of shape {x.shape} off axis {axis}") from None
    shape = tuple(1 if i == axis else n for i, n in enumerate(x.shape))
    key = list(_along_key(shape, None, axis))
    key[axis] = idx
    return getitem(x, tuple(key))


def _permuted(x, order, axis):
    """``x`` read through ``order`` (a device array, a permutation along ``axis``): an integer-array
    ``GetItem`` that writes (no repeats to add up) in its gradient."""
    dev = x._device
    key = tuple(k if i == axis else _to_device(k, True, dev) for i, k in enumerate(_along_key(x.shape, order, axis)))
    return _getitem(x, key, False)


def _sort_setup(x, axis, op_type):
    x = unary(x)
    if axis is None:
        x = reshape(x, -1)
        axis = -1
    if x.ndim == 0:
        raise ShapeError(f"op {op_type!r} needs a tensor of at least 1 dimension (or axis=None), not a 0-d one")
    return x, normalize_axis_index(axis, x.ndim, op_type, x.shape)


def _argsort_data(x, axis):
    xp = x._device.xp
    return xp.argsort(x._data, axis=axis, kind="stable") if xp is np else xp.argsort(x._data, axis=axis)


def sort(x: TensorLike, axis: Axis = -1, kind: str | None = None, order: str | None = None) -> Tensor:
    """``x`` sorted along ``axis`` (flattened for None), as ``numpy.sort``; ``kind`` is ignored.

    NaNs go last. Returns a new tensor (``Tensor.sort`` too, unlike NumPy's
    in-place method). Recorded as an integer-array ``GetItem`` through the
    stable argsort permutation: the gradient sends each dy back to the element
    that landed there. NOTE: at a tie the derivative is not defined; this
    gives each tied element the gradient of the position the stable order put
    it in.

    Example:
        >>> import gpugrad as gg
        >>> gg.sort(gg.tensor([[3.0, 1.0, 2.0]])).numpy().tolist()
        [[1.0, 2.0, 3.0]]
    """
    if order is not None:
        raise TypeError("op 'Sort' has no fields to order by (order= is for structured arrays)")
    x, axis = _sort_setup(x, axis, "Sort")
    return _permuted(x, _argsort_data(x, axis), axis)


def argsort(x: TensorLike, axis: Axis = -1, kind: str | None = None, order: str | None = None) -> Tensor:
    """int64 indices that sort ``x`` along ``axis`` (flattened for None), as ``numpy.argsort``; no gradient.

    Stable on every device (tied elements keep their order), whatever ``kind``.

    Example:
        >>> import gpugrad as gg
        >>> gg.argsort(gg.tensor([3.0, 1.0, 2.0])).numpy().tolist()
        [1, 2, 0]
    """
    if order is not None:
        raise TypeError("op 'ArgSort' has no fields to order by (order= is for structured arrays)")
    x, axis = _sort_setup(x, axis, "ArgSort")
    return Tensor._wrap(_argsort_data(x, axis).astype(np.int64, copy=False), x._device)


def _kth(kth, n, op_type, shape, axis):
    k = _host_ints(kth, op_type, "kth")
    if k.ndim > 1 or ((k < -n) | (k >= n)).any():
        raise ShapeError(f"op {op_type!r}: kth {kth!r} is out of range for axis {axis} of length {n} "
                         f"(shape {shape})")
    return k % n if k.ndim else int(k) % n


def partition(x: TensorLike, kth: int | Sequence[int], axis: Axis = -1, kind: str = "introselect",
              order: str | None = None) -> Tensor:
    """``x`` rearranged along ``axis`` so the element at each ``kth`` is where sorting puts it, smaller ones
    before and larger ones after (in no set order), as ``numpy.partition``.

    Recorded as an integer-array ``GetItem`` through the argpartition
    permutation, so the gradient follows each element to where it went.

    Example:
        >>> import gpugrad as gg
        >>> gg.partition(gg.tensor([3.0, 4.0, 1.0, 2.0]), 1).numpy()[1].item()
        2.0
    """
    if order is not None:
        raise TypeError("op 'Partition' has no fields to order by (order= is for structured arrays)")
    x, axis = _sort_setup(x, axis, "Partition")
    k = _kth(kth, x.shape[axis], "Partition", x.shape, axis)
    xp = x._device.xp
    if xp is not np:
        k = k.tolist() if isinstance(k, np.ndarray) else k
    return _permuted(x, xp.argpartition(x._data, k, axis=axis), axis)


def searchsorted(a: TensorLike, v: TensorLike, side: str = "left", sorter: TensorLike | None = None) -> Tensor:
    """int64 indices where the elements of ``v`` go into sorted 1-D ``a`` to keep it sorted, as
    ``numpy.searchsorted``; no gradient.

    Example:
        >>> import gpugrad as gg
        >>> gg.searchsorted(gg.tensor([1.0, 2.0, 3.0]), gg.tensor([2.0, 0.5]), side="right").numpy().tolist()
        [2, 0]
    """
    a = unary(a, v, sorter)
    if a.ndim != 1:
        raise ShapeError(f"op 'SearchSorted' takes a sorted 1-D tensor a, not shape {a.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"op 'SearchSorted': side is 'left' or 'right', not {side!r}")
    dev = a._device
    if isinstance(v, Tensor):
        same_device((a, v), "SearchSorted")
        v_data = v._data
    else:
        v_data = _to_device(np.asarray(v), True, dev)
    data = a._data
    if sorter is not None:
        s, host = _index_array("SearchSorted", sorter, dev)
        s = _to_device(s, host, dev)
        if s.shape != a.shape:
            raise ShapeError(f"op 'SearchSorted': sorter of shape {s.shape} does not fit a of shape {a.shape}")
        data = data[s]
    out = dev.xp.searchsorted(data, v_data, side=side)
    return Tensor._wrap(dev.xp.asarray(out).astype(np.int64, copy=False), dev)


def nonzero(x: TensorLike) -> Tensor:
    """A tuple of int64 tensors, one per axis, of the indices of the nonzero elements of ``x``, as
    ``numpy.nonzero``; no gradient. The same as ``gg.where(x)``.

    Example:
        >>> import gpugrad as gg
        >>> [i.numpy().tolist() for i in gg.nonzero(gg.tensor([[0.0, 1.0], [2.0, 0.0]]))]
        [[0, 1], [1, 0]]
    """
    return where(x)


def _searchsorted_method(self: Tensor, v: TensorLike, side: str = "left", sorter: TensorLike | None = None
                         ) -> Tensor:
    """``x.searchsorted(v, side="left", sorter=None)``: :func:`searchsorted` of sorted 1-D ``x``, the int64
    indices where the elements of ``v`` go to keep ``x`` sorted, as ``numpy.ndarray.searchsorted``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0, 2.0, 3.0])
        >>> x.searchsorted([2.0, 5.0]).numpy().tolist(), x.searchsorted(2.0, side="right").item()
        ([1, 4], 3)
    """
    return searchsorted(self, v, side, sorter)


# x.copy, x.argsort, and x.sort / x.partition (refused: ndarray's sort in place): gpugrad._numpy.methods
TENSOR_METHODS = {
    "ravel": ravel,
    "swapaxes": swapaxes,
    "repeat": repeat,
    "searchsorted": _searchsorted_method,
    "nonzero": nonzero,
    "mT": property(lambda self: swapaxes(self, -1, -2)),  # the matrix transpose of each matrix, as ndarray.mT
}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "copy", "ravel", "moveaxis", "swapaxes", "repeat", "tile", "roll", "flip", "fliplr", "flipud", "rot90",
        "atleast_1d", "atleast_2d", "atleast_3d", "vstack", "hstack", "dstack", "column_stack", "append",
        "take_along_axis", "sort", "argsort", "partition", "searchsorted", "nonzero"
    ]

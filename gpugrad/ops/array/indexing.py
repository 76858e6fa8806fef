"""Indexing ops: ``x[key]`` (GetItem), take, gather, and their scatter gradient; pad, whose gradient is a slice.

Every one of them reads elements of its input at some positions, so every
gradient is one op, ``GetItemGrad``: a tensor of zeros of the input's shape
with the upstream gradient written (or, where integer indices may repeat,
added) at those positions. Its own gradient reads the same positions again,
so second derivatives work.

Index arrays live on the tensor's device. NOTE: NumPy raises IndexError for
an out-of-range integer index, but CuPy wraps it around, so off the CPU the
range of every index array is checked here: at once for indices given on the host, by one small
reduction whose verdict the next host read raises for indices on the GPU (gpugrad._device_checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _device_checks, _dtypes as _dt
from ..._tracing import state as _trace
from ...backend import CPU
from ...errors import DeviceError, DTypeError, IndexOutOfRangeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..base import emit, public_ops, unaliased, unary
from .shape import normalize_axis_index, reshape, transpose

if TYPE_CHECKING:
    from ..._typing import Axis, Shape, TensorLike


_BASIC = frozenset([int, slice, type(None), type(Ellipsis)])


# ---------------------------------------------------------------- turning a key into arrays


def _range_error(op_type, shape, message):
    return IndexOutOfRangeError(f"op {op_type!r}: {message} (tensor shape {shape})")


def _check_range(op_type, idx, size, axis, shape):
    """Raise IndexOutOfRangeError unless every entry of ``idx`` is in ``[-size, size)``: at once for host
    indices, at the next host read for indices on the GPU (:mod:`gpugrad._device_checks`: no sync).

    Only needed off the CPU: NumPy raises IndexError itself, CuPy wraps around.
    """
    _device_checks.check(idx, -size, size, f"op {op_type!r}: index {{value}} is out of bounds for axis {axis} "
                                           f"with size {size} (tensor shape {shape})")


def _index_array(op_type, value, device):
    """``value`` (Tensor, array, list) as an integer or boolean array, and whether it is on the host."""
    if isinstance(value, Tensor):
        if value._device is not device:
            raise DeviceError(
                f"op {op_type!r} got indices on {value.device!r} for a tensor on {device.name!r}; "
                f"move one with .to(device)")
        a, host = value._data if value.__class__ is Tensor else value._data.copy(), device is CPU  # a Variable may change
    elif isinstance(value, device.array_type):
        a, host = value.copy(), device is CPU  # the caller's array may change after the op; the record must not
    else:
        a = value.get() if hasattr(value, "__cuda_array_interface__") else np.array(value)  # copies, as above
        host = True
        if a.size == 0 and a.dtype.kind not in "iub":
            a = a.astype(np.intp)  # [] indexes nothing, as in NumPy
    if a.dtype.kind not in "iub":
        raise DTypeError(f"op {op_type!r} takes integer or boolean indices, not {a.dtype}")
    return a, host


def _to_device(a, host, device):
    return a if not host or device is CPU else device.backend.asarray(a, None, device.index)


def _advanced_key(x, key):
    """``key`` normalised for NumPy/CuPy, and whether integer arrays in it may repeat.

    Integer and boolean arrays (lists, NumPy arrays, gpugrad tensors) go to the
    tensor's device; integer arrays are range-checked against the axis they index.
    """
    parts = key if isinstance(key, tuple) else (key,)
    device = x._device
    out = []
    for k in parts:
        cls = k.__class__
        if cls in _BASIC:
            out.append(k)
        elif cls is bool or cls is np.bool_:
            out.append(np.asarray(k))  # a 0-d mask, as in NumPy
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif isinstance(k, (Tensor, list, tuple, np.ndarray)) or hasattr(k, "__array__") \
                or hasattr(k, "__cuda_array_interface__"):
            out.append(_index_array("GetItem", k, device))
            if out[-1][0].dtype.kind == "b" and not isinstance(k, (list, tuple)):
                _trace.dynamic_output_shape("boolean-mask indexing (op 'GetItem')", k)
        else:
            raise DTypeError(f"op 'GetItem': {k!r} cannot index a tensor; use ints, slices, ..., None, "
                             f"or integer or boolean arrays")
    on_gpu = device is not CPU
    # CuPy wraps out-of-range indices, and NumPy < 2.3 only warns where x is empty: checked here for both
    checked = on_gpu or x.size == 0
    axes = _axes_indexed(out, x.ndim) if checked else None
    accumulate, final = False, []
    for i, k in enumerate(out):
        if isinstance(k, tuple):  # an index array and whether it is on the host
            a, host = k
            is_int = a.dtype.kind != "b"
            accumulate = accumulate or (is_int and a.size > 1)
            if checked and is_int and axes[i] < x.ndim:
                _check_range("GetItem", a, x.shape[axes[i]], axes[i], x.shape)
            if on_gpu:
                a = _to_device(a, host, device)
            k = a
        final.append(k)
    return tuple(final), accumulate


def _axes_indexed(parts, ndim):
    """The first axis of the indexed tensor that each part of a key applies to."""
    is_mask = [isinstance(p, tuple) and p[0].dtype.kind == "b" for p in parts]
    used = sum(p[0].ndim if m else 1 for p, m in zip(parts, is_mask) if p is not None and p is not Ellipsis)
    axes, dim = [], 0
    for p, m in zip(parts, is_mask):
        axes.append(dim)
        if p is Ellipsis:
            dim += max(ndim - used, 0)
        elif m:
            dim += p[0].ndim
        elif p is not None:
            dim += 1
    return axes


# ---------------------------------------------------------------- getitem


def getitem(x: TensorLike, key: Any) -> Tensor:
    """``x[key]`` with NumPy's rules: basic, integer-array and boolean-mask indexing.

    ``key`` may hold ints, slices (negative steps too), ``...``, ``None``, and
    integer or boolean arrays given as lists, NumPy arrays or gpugrad tensors.
    Repeated integer indices add up in the gradient.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> x[1, ::-1].numpy().tolist()
        [6.0, 5.0, 4.0]
        >>> x[[0, 0, 1], 2].numpy().tolist()
        [3.0, 3.0, 6.0]
        >>> x[x > 4.0].numpy().tolist()
        [5.0, 6.0]
    """
    x = unary(x)
    cls = key.__class__
    if cls is tuple:
        for k in key:
            if k.__class__ not in _BASIC:
                return _getitem(x, *_advanced_key(x, key))
    elif cls not in _BASIC:
        return _getitem(x, *_advanced_key(x, key))
    return _getitem(x, key, False)


def _getitem(x, key, accumulate):
    try:
        data = x._data[key]
    except IndexError as exc:
        raise _range_error("GetItem", x.shape, f"{exc}; the key was {_describe(key)}") from None
    return emit("GetItem", unaliased(x, data), x._device, (x,), {"key": key, "accumulate": accumulate})


def _describe(key):
    parts = key if isinstance(key, tuple) else (key,)
    return "[" + ", ".join(f"<{k.dtype} array of shape {k.shape}>" if hasattr(k, "dtype") and k.ndim
                           else repr(k) for k in parts) + "]"


@RegisterGradient("GetItem", reads_outputs=False)
def _getitem_grad(op, dy):
    return (getitem_grad(dy, op.attrs["key"], op.inputs[0].shape, op.attrs["accumulate"]),)


def getitem_grad(dy: TensorLike, key: Any, shape: Shape, accumulate: bool = True) -> Tensor:
    """Zeros of ``shape`` with ``dy`` scattered at ``key``: the gradient of ``x[key]``.

    With ``accumulate`` (integer indices that may repeat) values at one
    position add up (``np.add.at``; ``cupy.add.at`` on a GPU); without
    it they are written. ``key`` must already hold arrays on ``dy``'s device.

    Example:
        >>> import gpugrad as gg
        >>> import numpy as np
        >>> from gpugrad.ops.array.indexing import getitem_grad
        >>> idx = np.array([0, 2, 0])
        >>> getitem_grad(gg.tensor([1.0, 2.0, 3.0]), (idx,), (4,)).numpy().tolist()
        [4.0, 0.0, 2.0, 0.0]
    """
    dy = unary(dy)
    dev = dy._device
    z = dev.xp.zeros(shape, dtype=dy._data.dtype)
    if not dy._data.size:
        pass  # nothing to scatter (and an index into an empty axis, which read nothing, must not be used)
    elif not accumulate:
        z[key] = dy._data
    elif dev is CPU:
        _scatter_add_cpu(z, key, dy._data)
    elif _dt.is_bfloat16(z.dtype):  # cupy.add.at takes no bfloat16: added up in float32
        wide = _dt.wide(z)
        dev.xp.add.at(wide, key, _dt.wide(dy._data))
        z = _dt.narrow(wide, z)
    else:
        dev.xp.add.at(z, key, dy._data)  # cupyx.scatter_add is deprecated (a DeprecationWarning in CuPy 14)
    return emit("GetItemGrad", z, dev, (dy,), {"key": key, "shape": tuple(shape), "accumulate": accumulate})


def _scatter_add_cpu(z, key, values):
    """``np.add.at(z, key, values)``; whole rows picked by one index array take NumPy's
    much faster 1-D path (each row's elements addressed by flat position).
    """
    parts = key if isinstance(key, tuple) else (key,)
    idx = parts[0]
    if len(parts) == 1 and getattr(idx, "dtype", None) is not None and idx.dtype.kind in "iu" \
            and idx.ndim >= 1 and z.ndim >= 2 and z.shape[0]:
        row = z.size // z.shape[0]
        idx = np.where(idx < 0, idx + z.shape[0], idx)  # the same rows NumPy indexing picks
        positions = (idx.reshape(-1, 1) * row + np.arange(row)).reshape(-1)
        np.add.at(z.reshape(-1), positions, values.reshape(-1))
    else:
        np.add.at(z, key, values)


@RegisterGradient("GetItemGrad", reads_outputs=False)
def _getitem_grad_grad(op, ddz):
    return (_getitem(ddz, op.attrs["key"], op.attrs["accumulate"]),)


# ---------------------------------------------------------------- take, gather


def _gather(op_type, params, indices, axis):
    dev = params._device
    idx, host = _index_array(op_type, indices, dev)
    if idx.dtype.kind == "b":
        raise DTypeError(f"op {op_type!r} takes integer indices, not booleans")
    # CuPy wraps out-of-range indices; NumPy < 2.3 only warns where x[idx] (axis 0) of an empty x is empty
    if dev is not CPU or (params.size == 0 and axis == 0):
        _check_range(op_type, idx, params.shape[axis], axis, params.shape)
    if dev is not CPU:
        idx = _to_device(idx, host, dev)
    try:  # x[idx] is quicker than take for axis 0
        data = params._data[idx] if axis == 0 else dev.xp.take(params._data, idx, axis=axis)
    except IndexError as exc:
        raise _range_error(op_type, params.shape, str(exc)) from None
    return emit("Gather", data, dev, (params,), {"axis": axis, "indices": idx})


@RegisterGradient("Gather", reads_outputs=False)
def _gather_grad(op, dy):
    # params[:, ..., :, indices] (indices at `axis`) reads what take/gather read: scatter-add back there.
    key = (slice(None),) * op.attrs["axis"] + (op.attrs["indices"],)
    return (getitem_grad(dy, key, op.inputs[0].shape, True),)


def take(x: TensorLike, indices: TensorLike, axis: Axis = None) -> Tensor:
    """Elements of ``x`` at ``indices`` along ``axis``, as ``np.take`` does.

    With ``axis=None`` ``x`` is flattened first. Negative indices count from the
    end; indices out of range raise IndexOutOfRangeError. Recorded as ``Gather``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> gg.take(x, [3, 0]).numpy().tolist()
        [4.0, 1.0]
        >>> gg.take(x, [1, 1], axis=1).numpy().tolist()
        [[2.0, 2.0], [4.0, 4.0]]
    """
    x = unary(x, indices)
    if axis is None:
        x = reshape(x, -1)
        axis = 0
    else:
        axis = normalize_axis_index(axis, x.ndim, "Take", x.shape)
    return _gather("Take", x, indices, axis)


def gather(params: TensorLike, indices: TensorLike, axis: Axis = None, batch_dims: int = 0) -> Tensor:
    """Slices of ``params`` at ``indices`` along ``axis``, as ``tf.gather`` does.

    The result has shape ``params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:]``;
    its gradient adds up over repeated indices. With ``batch_dims=b`` the first ``b`` axes of ``params``
    and ``indices`` are batch axes (equal sizes): batch element ``i`` gathers from ``params[i]`` with
    ``indices[i]``, as ``tf.gather(..., batch_dims=b)`` (a negative ``b`` counts from ``indices.ndim``;
    ``axis`` defaults to ``b`` and must be at least ``b``).

    Example:
        >>> import gpugrad as gg
        >>> params = gg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> gg.gather(params, [[2, 0]], axis=1).numpy().tolist()
        [[[3.0, 1.0]], [[6.0, 4.0]]]
        >>> gg.gather(params, [[2, 2], [0, 1]], batch_dims=1).numpy().tolist()
        [[3.0, 3.0], [4.0, 5.0]]
    """
    params = unary(params)
    if isinstance(batch_dims, bool) or not isinstance(batch_dims, (int, np.integer)):
        raise TypeError(f"op 'Gather' takes an int batch_dims, not {batch_dims!r}")
    if batch_dims == 0:
        axis = normalize_axis_index(0 if axis is None else axis, params.ndim, "Gather", params.shape)
        return _gather("Gather", params, indices, axis)
    return _batched_gather(params, indices, axis, int(batch_dims))


def _batched_gather(params, indices, axis, b):
    """``tf.gather`` with ``b`` batch axes: the batch axes and ``axis`` indexed together by one GetItem
    (``arange`` for each batch axis, ``indices`` for ``axis``), moved into TensorFlow's order by transposes."""

    dev = params._device
    idx, host = _index_array("Gather", indices, dev)
    if idx.dtype.kind == "b":
        raise DTypeError("op 'Gather' takes integer indices, not booleans")
    if b < 0:
        b += idx.ndim
    axis = normalize_axis_index(b if axis is None else axis, params.ndim, "Gather", params.shape)
    if not 0 <= b <= idx.ndim or b > axis:
        raise ShapeError(f"op 'Gather': batch_dims must be in [0, indices.ndim={idx.ndim}] and at most axis={axis}, "
                         f"not {b}")
    if tuple(params.shape[:b]) != tuple(idx.shape[:b]):
        raise ShapeError(f"op 'Gather': the {b} batch axes of params {params.shape} and indices {idx.shape} differ")
    _check_range("Gather", idx, params.shape[axis], axis, params.shape)  # (not GetItem's IndexError)
    idx = _to_device(idx, host, dev)
    xp = dev.xp
    perm = list(range(b)) + [axis] + list(range(b, axis)) + list(range(axis + 1, params.ndim))
    p = transpose(params, perm) if perm != list(range(params.ndim)) else params
    key = tuple(xp.arange(n).reshape((1,) * d + (n,) + (1,) * (idx.ndim - d - 1))
                for d, n in enumerate(params.shape[:b])) + (idx,)
    out = _getitem(p, key, True)  # shape idx.shape + params.shape[b:axis] + params.shape[axis + 1:]
    ni, nbetween = idx.ndim - b, axis - b
    order = list(range(b)) + list(range(b + ni, b + ni + nbetween)) + list(range(b, b + ni)) + \
        list(range(b + ni + nbetween, out.ndim))
    return transpose(out, order) if order != list(range(out.ndim)) else out


def _setitem(self, key, value):
    raise TypeError(
        "gpugrad tensors are immutable and do not support item assignment (x[...] = ...); build a new "
        "tensor instead, e.g. gg.where(mask, value, x), or for a Variable v.assign(gg.where(mask, value, v))")


# ---------------------------------------------------------------- pad


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pad(x: TensorLike, pad_width: Any, mode: str = "constant", constant_values: float = 0) -> Tensor:
    """Pad ``x``, ``pad_width`` and ``mode`` in NumPy's form (``np.pad``).

    ``pad_width`` is an int (every side of every axis), a ``(before, after)``
    pair (every axis) or one pair per axis. ``mode`` is ``"constant"`` (the
    scalar ``constant_values``; op ``Pad``), ``"reflect"`` (mirrored without
    repeating the edge, PyTorch's ``"reflect"``), ``"edge"`` (the edge value
    repeated, PyTorch's ``"replicate"``) or ``"wrap"`` (periodic, PyTorch's
    ``"circular"``); the last three gather ``x`` along each padded axis (op
    ``Gather``), so their gradient adds every copy's share back to its source.
    ``gg.nn.functional.pad`` takes PyTorch's form.

    Example:
        >>> import gpugrad as gg
        >>> gg.pad(gg.tensor([1.0, 2.0]), (1, 2)).numpy().tolist()
        [0.0, 1.0, 2.0, 0.0, 0.0]
        >>> gg.pad(gg.ones((2, 3)), ((0, 1), (2, 0))).shape
        (3, 5)
        >>> x = gg.tensor([1.0, 2.0, 3.0])
        >>> [gg.pad(x, 2, mode=m).numpy().tolist() for m in ("reflect", "edge", "wrap")]
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0], [2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0]]
        >>> gg.pad(x, 1, constant_values=-1.0).numpy().tolist()
        [-1.0, 1.0, 2.0, 3.0, -1.0]
    """
    x = unary(x)
    shape = x.shape
    widths = _pad_widths(pad_width, len(shape))
    if widths is None:
        raise ShapeError(f"op 'Pad': pad_width {pad_width!r} does not fit a tensor of shape {shape}; "
                         f"give an int, a (before, after) pair or {len(shape)} pairs of ints >= 0")
    if mode not in PAD_MODES:
        raise ValueError(f"op 'Pad': mode is one of {PAD_MODES} (NumPy's names), not {mode!r}")
    if mode != "constant":
        return _pad_by_gather(x, widths, mode)
    if isinstance(constant_values, bool) or not isinstance(constant_values, (int, float, np.number)):
        raise TypeError(f"op 'Pad' takes one number as constant_values, not {constant_values!r}")
    out_shape = tuple(b + n + a for (b, a), n in zip(widths, shape))
    inner = tuple(slice(b, b + n) for (b, _), n in zip(widths, shape))
    data = x._device.xp.full(out_shape, constant_values, dtype=x._data.dtype)
    data[inner] = x._data
    return emit("Pad", data, x._device, (x,), {"widths": widths, "inner": inner})


def _pad_source(n, before, after, mode):
    """For each position of a padded axis of length ``n``, the index of ``x`` it copies (np.pad's modes)."""
    i = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return i % n
    if n == 1:  # reflect: nothing to mirror, the one value repeats (as NumPy)
        return np.zeros_like(i)
    i = i % (2 * n - 2)  # reflect: the periodic extension of x then x[-2:0:-1]
    return np.where(i < n, i, 2 * n - 2 - i)


def _pad_by_gather(x, widths, mode):
    for axis, ((before, after), n) in enumerate(zip(widths, x.shape)):
        if before or after:
            if n == 0:
                raise ShapeError(f"op 'Pad': mode={mode!r} cannot pad the empty axis {axis} of x of shape "
                                 f"{x.shape}")
            x = _gather("Take", x, _pad_source(n, before, after, mode), axis)
    return x


def _pad_widths(pad_width, ndim):
    """NumPy's pad_width as one (before, after) pair per axis; None if it does not fit ``ndim``.

    An int pads every side; one pair (or a 1-tuple) is used for every axis;
    otherwise there is one pair (or 1-tuple) per axis.
    """
    if isinstance(pad_width, (Tensor, np.ndarray)):
        _trace.dynamic_output_shape("pad by a tensor of widths (op 'Pad')", pad_width)
        pad_width = pad_width.numpy().tolist() if isinstance(pad_width, Tensor) else pad_width.tolist()
    if not isinstance(pad_width, (tuple, list)):
        pairs = [(pad_width, pad_width)]
    elif pad_width and not isinstance(pad_width[0], (tuple, list)):
        pairs = [(pad_width[0], pad_width[-1])] if len(pad_width) <= 2 else None
    else:
        pairs = [(p[0], p[-1]) if isinstance(p, (tuple, list)) and len(p) in (1, 2) else None
                 for p in pad_width]
    if not pairs or None in pairs or len(pairs) not in (1, ndim):
        return None
    for pair in pairs:
        for w in pair:
            if isinstance(w, bool) or not isinstance(w, (int, np.integer)):
                raise TypeError(f"op 'Pad' takes integer pad widths, not {w!r}")
            if w < 0:
                return None
    return tuple((int(b), int(a)) for b, a in (pairs * ndim if len(pairs) == 1 else pairs))


@RegisterGradient("Pad", reads_outputs=False)
def _pad_grad(op, dy):
    return (getitem(dy, op.attrs["inner"]),)


TENSOR_METHODS = {
    "__getitem__": getitem,
    "__setitem__": _setitem,
}  # x.take: gpugrad._numpy.methods (NumPy's out=None, mode=)

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "getitem", "getitem_grad", "take", "gather", "pad"
    ]

"""Shape ops: reshape broadcast_to transpose expand_dims squeeze concat stack split.

These move or view data without arithmetic; their gradients move it back.
``expand_dims``, ``squeeze`` and ``flatten`` are recorded as ``Reshape``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..base import emit, emit_many, public_ops, same_device, unaliased, unary

if TYPE_CHECKING:
    from ..._typing import Axis, Shape, TensorLike




def reshape(x: TensorLike, shape: Shape) -> Tensor:
    """``x`` with a new shape of the same size (one dimension may be -1).

    Example:
        >>> import gpugrad as gg
        >>> gg.reshape(gg.tensor([1.0, 2.0, 3.0, 4.0]), (2, -1)).shape
        (2, 2)
    """
    x = unary(x)
    if isinstance(shape, int):
        shape = (shape,)
    try:
        out = x._data.reshape(shape)
    except ValueError:
        raise ShapeError(f"op 'Reshape' cannot reshape shape {x.shape} (size {x.size}) to {tuple(shape)}") from None
    return emit("Reshape", unaliased(x, out), x._device, (x,))


@RegisterGradient("Reshape", reads_outputs=False)
def _reshape_grad(op, dy):
    return (reshape(dy, op.inputs[0].shape),)


def broadcast_to(x: TensorLike, shape: Shape) -> Tensor:
    """``x`` broadcast to ``shape`` as NumPy does (a view, no copy).

    Example:
        >>> import gpugrad as gg
        >>> gg.broadcast_to(gg.tensor([1.0, 2.0]), (3, 2)).shape
        (3, 2)
    """
    x = unary(x)
    shape = tuple(shape)
    if x.shape == shape:
        return emit("BroadcastTo", unaliased(x, x._data), x._device, (x,))
    try:
        out = x._device.xp.broadcast_to(x._data, shape)
    except ValueError:
        raise ShapeError(f"op 'BroadcastTo' cannot broadcast shape {x.shape} to {shape}") from None
    return emit("BroadcastTo", unaliased(x, out), x._device, (x,))


@RegisterGradient("BroadcastTo", reads_outputs=False)
def _broadcast_to_grad(op, dy):
    return (dy,)  # the tape sums dy back to the input's shape


# ---------------------------------------------------------------- helpers


def normalize_axis_index(axis, ndim, op_type, shape):
    """``axis`` as an int in ``[0, ndim)``; ShapeError naming ``op_type`` otherwise."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"op {op_type!r} takes an integer axis, not {axis!r}")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"op {op_type!r}: axis {axis} is out of range [{-ndim}, {ndim}) for shape {shape}")
    return int(axis) % ndim


def _tensor_list(tensors, op_type):
    """A non-empty list of tensors on one device with one dtype (arrays and lists converted)."""
    if not isinstance(tensors, (list, tuple)) and hasattr(tensors, "__iter__") and not isinstance(tensors, Tensor):
        tensors = list(tensors)
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError(f"op {op_type!r} takes a non-empty list or tuple of tensors, not {tensors!r}")
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    if like is None:
        ts = [unary(t) for t in tensors]
        like = ts[0]
    else:
        ts = [t if isinstance(t, Tensor) else Tensor(t, like.dtype, like.device) for t in tensors]
    same_device(ts, op_type)
    dtype = like._data.dtype
    for t in ts:
        if t._data.dtype != dtype:
            raise DTypeError(
                f"op {op_type!r} got tensors of dtypes {[str(t.dtype) for t in ts]}; cast them to one dtype")
    return ts


# ---------------------------------------------------------------- transpose


def transpose(x: TensorLike, axes: Any = None) -> Tensor:
    """Permute the axes of ``x`` (reverse them when ``axes`` is None), as NumPy does.

    Example:
        >>> import gpugrad as gg
        >>> gg.transpose(gg.ones((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
        >>> gg.tensor([[1.0, 2.0]]).T.numpy().tolist()
        [[1.0], [2.0]]
    """
    x = unary(x)
    if axes is None:
        ndim = x._data.ndim
        axes = _REVERSED[ndim] if ndim < 8 else tuple(range(ndim - 1, -1, -1))
        return emit("Transpose", unaliased(x, x._data.transpose(axes)), x._device, (x,), {"axes": axes})
    axes = tuple(axes)
    try:
        data = x._data.transpose(axes)  # validates the permutation
    except (ValueError, IndexError, TypeError):
        raise ShapeError(f"op 'Transpose': axes {axes} are not a permutation of the {x.ndim} axes "
                         f"of shape {x.shape}") from None
    return emit("Transpose", unaliased(x, data), x._device, (x,), {"axes": axes})


_REVERSED = [tuple(range(n - 1, -1, -1)) for n in range(8)]


@RegisterGradient("Transpose", reads_outputs=False)
def _transpose_grad(op, dy):
    axes = op.attrs["axes"]
    n = len(axes)
    inverse = [0] * n
    for i, a in enumerate(axes):
        inverse[a % n] = i
    return (transpose(dy, inverse),)


# ---------------------------------------------------------------- expand_dims, squeeze (reshapes)


def expand_dims(x: TensorLike, axis: Axis) -> Tensor:
    """``x`` with a new axis of length 1 at ``axis`` (an int or a tuple), as NumPy does.

    Recorded as a ``Reshape``, whose gradient it shares.

    Example:
        >>> import gpugrad as gg
        >>> gg.expand_dims(gg.ones((2, 3)), -1).shape
        (2, 3, 1)
        >>> gg.expand_dims(gg.ones((2, 3)), (0, 2)).shape
        (1, 2, 1, 3)
    """
    x = unary(x)
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    ndim = x._data.ndim + len(axes)
    new = sorted(normalize_axis_index(a, ndim, "ExpandDims", x.shape) for a in axes)
    if len(set(new)) != len(new):
        raise ShapeError(f"op 'ExpandDims': repeated axis in {tuple(axes)} for shape {x.shape}")
    rest = iter(x.shape)
    shape = tuple(1 if i in new else next(rest) for i in range(ndim))
    return emit("Reshape", unaliased(x, x._data.reshape(shape)), x._device, (x,))


def squeeze(x: TensorLike, axis: Axis = None) -> Tensor:
    """``x`` without its axes of length 1 (only those in ``axis`` when given).

    Recorded as a ``Reshape``, whose gradient it shares.

    Example:
        >>> import gpugrad as gg
        >>> gg.squeeze(gg.ones((1, 3, 1))).shape
        (3,)
        >>> gg.ones((1, 3, 1)).squeeze(0).shape
        (3, 1)
    """
    x = unary(x)
    shape = x.shape
    if axis is None:
        drop = {i for i, n in enumerate(shape) if n == 1}
    else:
        axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
        drop = {normalize_axis_index(a, len(shape), "Squeeze", shape) for a in axes}
        for a in sorted(drop):
            if shape[a] != 1:
                raise ShapeError(
                    f"op 'Squeeze' cannot squeeze axis {a} of shape {shape}: its length is {shape[a]}, not 1")
    new = tuple(n for i, n in enumerate(shape) if i not in drop)
    return emit("Reshape", unaliased(x, x._data.reshape(new)), x._device, (x,))


# ---------------------------------------------------------------- concat, stack, split


def concat(tensors: Sequence[TensorLike], axis: Axis = 0) -> Tensor:
    """Join tensors along an existing ``axis``; their other lengths must match.

    Example:
        >>> import gpugrad as gg
        >>> gg.concat([gg.ones((2, 3)), gg.zeros((1, 3))], axis=0).shape
        (3, 3)
    """
    ts = _tensor_list(tensors, "Concat")
    shape0 = ts[0].shape
    if not shape0:
        raise ShapeError("op 'Concat' cannot join 0-d tensors; use stack")
    axis = normalize_axis_index(axis, len(shape0), "Concat", shape0)
    for t in ts:
        s = t.shape
        if len(s) != len(shape0) or s[:axis] != shape0[:axis] or s[axis + 1:] != shape0[axis + 1:]:
            raise ShapeError(f"op 'Concat' cannot join shapes {[t.shape for t in ts]} along axis {axis}: "
                             f"all lengths but axis {axis}'s must match")
    data = ts[0]._device.xp.concatenate([t._data for t in ts], axis=axis)
    sizes = tuple(t.shape[axis] for t in ts)
    return emit("Concat", data, ts[0]._device, tuple(ts), {"axis": axis, "sizes": sizes})


@RegisterGradient("Concat", reads_outputs=False)
def _concat_grad(op, dy):
    return tuple(split(dy, list(op.attrs["sizes"]), op.attrs["axis"]))


def stack(tensors: Sequence[TensorLike], axis: Axis = 0) -> Tensor:
    """Join tensors of one shape along a new ``axis``.

    Example:
        >>> import gpugrad as gg
        >>> gg.stack([gg.ones((2, 3)), gg.zeros((2, 3))], axis=1).shape
        (2, 2, 3)
    """
    ts = _tensor_list(tensors, "Stack")
    shape0 = ts[0].shape
    for t in ts:
        if t.shape != shape0:
            raise ShapeError(f"op 'Stack' needs tensors of one shape, got {[t.shape for t in ts]}")
    axis = normalize_axis_index(axis, len(shape0) + 1, "Stack", shape0)
    data = ts[0]._device.xp.stack([t._data for t in ts], axis=axis)
    return emit("Stack", data, ts[0]._device, tuple(ts), {"axis": axis})


@RegisterGradient("Stack", reads_outputs=False)
def _stack_grad(op, dy):
    parts = split(dy, len(op.inputs), op.attrs["axis"])
    return tuple(reshape(p, t.shape) for p, t in zip(parts, op.inputs))


def split(x: TensorLike, num_or_sizes: int | Sequence[int], axis: Axis = 0) -> list[Tensor]:
    """Cut ``x`` along ``axis`` into a list of tensors, as ``tf.split`` does.

    An int asks for that many equal parts (the length must divide); a list
    gives each part's length, one of which may be -1 for "the rest".

    Example:
        >>> import gpugrad as gg
        >>> [p.shape for p in gg.split(gg.ones((6, 2)), 3)]
        [(2, 2), (2, 2), (2, 2)]
        >>> [p.shape for p in gg.split(gg.ones((6, 2)), [1, -1, 2])]
        [(1, 2), (3, 2), (2, 2)]
    """
    x = unary(x)
    shape = x.shape
    if not shape:
        raise ShapeError("op 'Split' cannot split a 0-d tensor")
    axis = normalize_axis_index(axis, len(shape), "Split", shape)
    length = shape[axis]
    if isinstance(num_or_sizes, (int, np.integer)) and not isinstance(num_or_sizes, bool):
        n = int(num_or_sizes)
        if n < 1 or length % n:
            raise ShapeError(f"op 'Split' cannot cut axis {axis} of shape {shape} (length {length}) "
                             f"into {n} equal parts")
        sizes = [length // n] * n
    else:
        sizes = [int(s) for s in (num_or_sizes.numpy() if isinstance(num_or_sizes, Tensor) else num_or_sizes)]
        unknown = [i for i, s in enumerate(sizes) if s == -1]
        if len(unknown) > 1 or any(s < -1 for s in sizes):
            raise ShapeError(f"op 'Split': sizes {sizes} may hold one -1 and no other negative length")
        if unknown:
            sizes[unknown[0]] = length - (sum(sizes) + 1)
        if sum(sizes) != length or any(s < 0 for s in sizes) or not sizes:
            raise ShapeError(f"op 'Split': sizes {list(num_or_sizes)} do not add up to length {length} "
                             f"of axis {axis} of shape {shape}")
    lead = (slice(None),) * axis
    data, datas, start = x._data, [], 0
    for n in sizes:
        datas.append(data[lead + (slice(start, start + n),)])
        start += n
    return emit_many("Split", [unaliased(x, d) for d in datas], x._device, (x,), {"axis": axis})


@RegisterGradient("Split", reads_outputs=False)
def _split_grad(op, *dys):
    return (concat(list(dys), op.attrs["axis"]),)  # unused outputs arrive as zeros


def _reshape_method(self: Tensor, *shape: Any) -> Tensor:
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``: :func:`reshape` of ``x``, the new sizes given as
    arguments or as one sequence (one may be -1), as ``numpy.ndarray.reshape``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        >>> x.reshape(2, 3).shape, x.reshape((3, -1)).shape, x.reshape(6).shape
        ((2, 3), (3, 2), (6,))
    """
    return reshape(self, shape[0] if len(shape) == 1 else shape)


def _transpose_method(self: Tensor, *axes: Any) -> Tensor:
    """``x.transpose()`` reverses the axes; ``x.transpose(1, 0, 2)`` or ``x.transpose((1, 0, 2))`` permutes
    them: :func:`transpose` of ``x``, as ``numpy.ndarray.transpose``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.ones((2, 3, 4))
        >>> x.transpose().shape, x.transpose(1, 0, 2).shape, x.transpose((2, 0, 1)).shape
        ((4, 3, 2), (3, 2, 4), (4, 2, 3))
    """
    return transpose(
        self, axes[0] if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)) else (axes or None))


TENSOR_METHODS = {
    "reshape": _reshape_method,
    "broadcast_to": broadcast_to,
    "transpose": _transpose_method,
    "T": property(lambda self: transpose(self), doc="``x`` with its axes reversed."),
    "expand_dims": expand_dims,
    "squeeze": squeeze,
}  # x.flatten: gpugrad._numpy.methods (NumPy's order=)

__all__ = public_ops(globals(), not_ops=('normalize_axis_index',))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "reshape", "broadcast_to", "transpose", "expand_dims", "squeeze", "concat", "stack", "split"
    ]

"""Cumulative ops along an axis: cumsum cumprod (own gradients), and diff gradient trapezoid (compositions).

``cumsum``'s gradient is a reversed cumsum of ``dy``. ``cumprod``'s gradient
multiplies by no ``1 / x``: away from zeros it is the reversed cumsum of
``dy * y`` over ``x``, and along an axis holding a zero it is computed exactly
from the products of the others (see ``_cumprod_grad``). ``diff``, ``gradient``
and ``trapezoid`` are slices, subtractions and sums, so they need no rule of
their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..elementwise.arithmetic import multiply, subtract, where
from ..base import emit, public_ops, unary
from ..elementwise.control import cast
from ..array.indexing import getitem
from ..elementwise.math import reciprocal
from .reductions import sum as _sum
from ..array.shape import broadcast_to, concat, expand_dims, normalize_axis_index, reshape, transpose
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import Axis, DTypeLike, TensorLike
    from ...tensor import Tensor


def _along(x, axis, op_type):
    """``x`` flattened for ``axis=None`` (axis 0 then), else ``x`` and ``axis`` made non-negative."""
    if axis is None:
        return reshape(x, -1), 0
    if x.ndim == 0:
        raise ShapeError(f"op {op_type!r}: axis {axis} is out of range for a 0-d tensor")
    return x, normalize_axis_index(axis, x.ndim, op_type, x.shape)


def _reversed(x, axis):
    """``x`` reversed along ``axis`` (a GetItem with a negative step)."""
    return getitem(x, (slice(None),) * axis + (slice(None, None, -1),))


# ---------------------------------------------------------------- cumsum


def cumsum(x: TensorLike, axis: Axis = None, dtype: DTypeLike = None) -> Tensor:
    """Cumulative sum along ``axis`` (of the flattened tensor for ``None``), as ``np.cumsum``.

    Example:
        >>> import gpugrad as gg
        >>> gg.cumsum(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).numpy().tolist()
        [[1.0, 2.0], [4.0, 6.0]]
        >>> gg.tensor([1.0, 2.0, 3.0]).cumsum().numpy().tolist()
        [1.0, 3.0, 6.0]
    """
    x = unary(x)
    if dtype is not None:
        x = cast(x, dtype)
    x, axis = _along(x, axis, "CumSum")
    out = _dt.narrow(x._device.xp.cumsum(_dt.wide(x._data), axis=axis), x._data)  # low dtypes: in float32
    return emit("CumSum", out, x._device, (x,), {"axis": axis})


@RegisterGradient("CumSum", reads_outputs=False)
def _cumsum_grad(op, dy):
    # d y_j / d x_i = 1 for j >= i: dx = the reversed cumsum of dy
    axis = op.attrs["axis"]
    return (_reversed(cumsum(_reversed(dy, axis), axis=axis), axis),)


# ---------------------------------------------------------------- cumprod


def cumprod(x: TensorLike, axis: Axis = None, dtype: DTypeLike = None) -> Tensor:
    """Cumulative product along ``axis`` (of the flattened tensor for ``None``), as ``np.cumprod``.

    Its gradient is exact with zeros in ``x`` (no division by ``x``).

    Example:
        >>> import gpugrad as gg
        >>> gg.cumprod(gg.tensor([1.0, 2.0, 3.0])).numpy().tolist()
        [1.0, 2.0, 6.0]
        >>> x = gg.tensor([2.0, 0.0, 3.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.sum(x.cumprod())
        >>> tape.gradient(y, x).numpy().tolist()
        [1.0, 8.0, 0.0]
    """
    x = unary(x)
    if dtype is not None:
        x = cast(x, dtype)
    x, axis = _along(x, axis, "CumProd")
    out = _dt.narrow(x._device.xp.cumprod(_dt.wide(x._data), axis=axis), x._data)  # low dtypes: in float32
    return emit("CumProd", out, x._device, (x,), {"axis": axis})


@RegisterGradient("CumProd")
def _cumprod_grad(op, dy):
    # dx_i = sum_{j >= i} dy_j prod_{k <= j, k != i} x_k.
    # No zero in x: that is revcumsum(dy * y)_i / x_i, the same function near x, so exact to every order.
    # A zero in x: with the axis last, T[..., i, k] = (1 if k == i else x_k) has
    # cumprod(T)[..., i, j] = prod_{k <= j, k != i} x_k, so dx_i = sum_{j >= i} cumprod(T)[i, j] dy_j;
    # written in gpugrad ops (cumprod of T recorded again), it is exact to every order too.
    # NOTE: the zero case costs n times the memory of x per order (n = the axis length).
    (x,) = op.inputs
    axis = op.attrs["axis"]
    xp = x._device.xp
    if not (x._data == 0).any():
        return (_reversed(cumsum(_reversed(dy * op.outputs[0], axis), axis=axis), axis) * reciprocal(x),)
    n = x.shape[axis]
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    inverse = list(np.argsort(perm))
    xl, dyl = transpose(x, perm), transpose(dy, perm)
    eye = xp.eye(n, dtype=bool)
    others = cumprod(where(eye, 1.0, expand_dims(xl, -2)), axis=-1)  # [..., i, j]
    upper = xp.triu(xp.ones((n, n), dtype=bool))  # j >= i
    dx = _sum(where(upper, others, 0.0) * expand_dims(dyl, -2), axis=-1)
    return (transpose(dx, inverse),)


# ---------------------------------------------------------------- diff


def _edge(v, x, axis, op_type, name):
    """``prepend`` / ``append`` value ``v`` as a tensor of ``x``'s shape with 1 along ``axis``
    (a scalar is broadcast, as NumPy does)."""
    v = v if hasattr(v, "_data") else unary(np.asarray(v, dtype=x.dtype))  # numbers and lists take x's dtype
    if v.ndim == 0:
        shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
        return broadcast_to(v, shape)
    if v.ndim != x.ndim:
        raise ShapeError(f"op {op_type!r}: {name} of shape {v.shape} does not match a tensor of "
                         f"shape {x.shape} (it needs {x.ndim} dimensions, or none)")
    return v


def diff(a: TensorLike, n: int = 1, axis: Axis = -1, prepend: TensorLike | None = None,
         append: TensorLike | None = None) -> Tensor:
    """The ``n``-th discrete difference along ``axis``, ``out[i] = a[i + 1] - a[i]``, as ``np.diff``.

    ``prepend`` / ``append`` (scalars or tensors) are joined to ``a`` along
    ``axis`` first. Written with slices and subtractions: differentiable in ``a``
    and in ``prepend`` / ``append``.

    Example:
        >>> import gpugrad as gg
        >>> gg.diff(gg.tensor([1.0, 4.0, 9.0, 16.0])).numpy().tolist()
        [3.0, 5.0, 7.0]
        >>> gg.diff(gg.tensor([1.0, 4.0, 9.0, 16.0]), n=2, prepend=0.0).numpy().tolist()
        [2.0, 2.0, 2.0]
    """
    a = unary(a, prepend, append)
    if n.__class__ is not int and not isinstance(n, np.integer) or n < 0:
        raise ShapeError(f"op 'Diff': order n must be a non-negative int, not {n!r}")
    if n == 0:
        return a
    if a.ndim == 0:
        raise ShapeError("op 'Diff' needs a tensor of at least one dimension, not a 0-d one")
    axis = normalize_axis_index(axis, a.ndim, "Diff", a.shape)
    parts = []
    if prepend is not None:
        parts.append(_edge(prepend, a, axis, "Diff", "prepend"))
    parts.append(a)
    if append is not None:
        parts.append(_edge(append, a, axis, "Diff", "append"))
    if len(parts) > 1:
        a = concat(parts, axis=axis)
    head = (slice(None),) * axis
    for _ in range(n):
        later, earlier = getitem(a, head + (slice(1, None),)), getitem(a, head + (slice(None, -1),))
        if a._data.dtype.kind == "b":  # booleans differ where they are not equal, as np.diff (a bool result)
            a = Tensor._wrap(a._device.xp.not_equal(later._data, earlier._data), a._device)
        else:
            a = subtract(later, earlier)
    return a


# ---------------------------------------------------------------- gradient


def _spacing(varargs, naxes):
    if not varargs:
        return [1.0] * naxes
    if len(varargs) == 1 and naxes != 1:
        varargs = varargs * naxes
    if len(varargs) != naxes:
        raise ShapeError(f"op 'Gradient': {len(varargs)} spacings given for {naxes} axes")
    out = []
    for h in varargs:
        if isinstance(h, (int, float, np.integer, np.floating)) or np.ndim(h) == 0 and not hasattr(h, "_data"):
            out.append(float(h))
        else:
            raise ShapeError("op 'Gradient': only scalar spacings are supported (unit spacing or one number "
                             "per axis), not coordinate arrays")
    return out


def gradient(f: TensorLike, *varargs: TensorLike, axis: Axis = None, edge_order: int = 1) -> Tensor | tuple[Tensor, ...]:
    """The gradient of sampled ``f`` by central differences inside, one-sided at the edges, as ``np.gradient``.

    ``varargs`` is the spacing: none (unit), one scalar for every axis, or one
    scalar per axis. Only ``edge_order=1``. For one axis the result is a
    tensor; for several (``axis=None`` on a tensor of several dimensions, or a
    tuple) a tuple of tensors, one per axis, as NumPy returns.

    Example:
        >>> import gpugrad as gg
        >>> gg.gradient(gg.tensor([1.0, 2.0, 4.0, 7.0])).numpy().tolist()
        [1.0, 1.5, 2.5, 3.0]
        >>> [g.numpy().tolist() for g in gg.gradient(gg.tensor([[1.0, 2.0], [3.0, 5.0]]))]
        [[[2.0, 3.0], [2.0, 3.0]], [[1.0, 1.0], [2.0, 2.0]]]
    """
    f = unary(f)
    if edge_order != 1:
        raise ShapeError(f"op 'Gradient': only edge_order=1 is supported, not {edge_order!r}")
    if f.ndim == 0:
        raise ShapeError("op 'Gradient' needs a tensor of at least one dimension, not a 0-d one")
    if axis is None:
        axes = tuple(range(f.ndim))
    else:
        given = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = tuple(normalize_axis_index(a, f.ndim, "Gradient", f.shape) for a in given)
        if len(set(axes)) != len(axes):
            raise ShapeError(f"op 'Gradient': axis {axis!r} repeats an axis")
    if not _dt.inexact(f._data.dtype):
        f = cast(f, np.float32 if f._data.dtype.itemsize < 8 or f._data.dtype.kind == "b" else np.float64)
    out = []
    for a, h in zip(axes, _spacing(varargs, len(axes))):
        if f.shape[a] < 2:
            raise ShapeError(f"op 'Gradient': axis {a} of shape {f.shape} needs at least 2 samples "
                             f"(edge_order + 1)")
        head = (slice(None),) * a
        part = lambda s: getitem(f, head + (s,))  # noqa: E731
        first = (part(slice(1, 2)) - part(slice(0, 1))) / h
        last = (part(slice(-1, None)) - part(slice(-2, -1))) / h
        pieces = [first]
        if f.shape[a] > 2:
            pieces.append((part(slice(2, None)) - part(slice(None, -2))) / (2.0 * h))
        pieces.append(last)
        out.append(concat(pieces, axis=a))
    return out[0] if len(out) == 1 else tuple(out)


# ---------------------------------------------------------------- trapezoid


def trapezoid(y: TensorLike, x: TensorLike | None = None, dx: float = 1.0, axis: Axis = -1) -> Tensor:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, as ``np.trapezoid``.

    With ``x`` (a tensor of ``y``'s shape or a 1-D one along ``axis``) the
    sample points are ``x``, else they are ``dx`` apart. Differentiable in ``y`` and ``x``.

    Example:
        >>> import gpugrad as gg
        >>> gg.trapezoid(gg.tensor([1.0, 2.0, 3.0])).item()
        4.0
        >>> gg.trapezoid(gg.tensor([1.0, 2.0, 3.0]), x=gg.tensor([0.0, 1.0, 3.0])).item()
        6.5
    """
    y = unary(y, x)
    if y.ndim == 0:
        raise ShapeError("op 'Trapezoid' needs a tensor of at least one dimension, not a 0-d one")
    axis = normalize_axis_index(axis, y.ndim, "Trapezoid", y.shape)
    head = (slice(None),) * axis
    if x is None:
        d = dx
    else:
        x = unary(x) if not isinstance(x, (list, tuple)) else unary(np.asarray(x, dtype=y.dtype))
        if x.ndim == 1:
            if x.shape[0] != y.shape[axis]:
                raise ShapeError(f"op 'Trapezoid': x of shape {x.shape} does not match axis {axis} of y's "
                                 f"shape {y.shape}")
            d = diff(x)
            d = reshape(d, (1,) * axis + (d.shape[0],) + (1,) * (y.ndim - axis - 1))  # type: ignore[attr-defined]  # d: a Tensor here
        elif x.shape == y.shape:
            d = diff(x, axis=axis)
        else:
            raise ShapeError(f"op 'Trapezoid': x of shape {x.shape} must be 1-D or of y's shape {y.shape}")
    mid = getitem(y, head + (slice(1, None),)) + getitem(y, head + (slice(None, -1),))
    return _sum(multiply(d, mid) / 2.0, axis=axis)


TENSOR_METHODS: dict = {}  # x.cumsum, x.cumprod: gpugrad._numpy.methods (NumPy's out=None)

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "cumsum", "cumprod", "diff", "gradient", "trapezoid"
    ]

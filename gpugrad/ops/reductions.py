"""Reductions over axes: sum mean (more in the modules that import this).

A reduction's gradient spreads ``dy`` back over the reduced axes with
:func:`expand_to`, a broadcast view that costs no memory.
"""
from ..registry import RegisterGradient
from .base import emit, unary
from .shape import broadcast_to, reshape

__all__ = ['sum', 'mean']



def normalize_axis(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (all axes for ``None``)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            from ..errors import ShapeError

            raise ShapeError(f"axis {a} is out of range for a tensor of {ndim} dimensions")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(set(out)))


def kept_shape(shape, axes):
    """``shape`` with each reduced axis set to 1 (the keepdims shape)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_to(dy, x_shape, axes):
    """``dy`` of a reduction over ``axes`` broadcast back to ``x_shape``."""
    kept = kept_shape(x_shape, axes)
    if dy.shape != kept:
        dy = reshape(dy, kept)
    return broadcast_to(dy, x_shape)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    """Sum over ``axis`` (all axes by default).

    Example:
        >>> import gpugrad as gg
        >>> gg.sum(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).numpy().tolist()
        [4.0, 6.0]
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    out = x._data.sum(axis=axes, keepdims=keepdims)
    return emit("Sum", out, x._device, (x,), {"axes": axes})


@RegisterGradient("Sum")
def _sum_grad(op, dy):
    return (expand_to(dy, op.inputs[0].shape, op.attrs["axes"]),)


def mean(x, axis=None, keepdims=False):
    """Mean over ``axis`` (all axes by default).

    Example:
        >>> import gpugrad as gg
        >>> gg.mean(gg.tensor([1.0, 2.0, 6.0])).item()
        3.0
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    out = x._data.mean(axis=axes, keepdims=keepdims)
    return emit("Mean", out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out,
                x._device, (x,), {"axes": axes})


@RegisterGradient("Mean")
def _mean_grad(op, dy):
    x = op.inputs[0]
    axes = op.attrs["axes"]
    count = 1
    for a in axes:
        count *= x.shape[a]
    return (expand_to(dy / max(count, 1), x.shape, axes),)


TENSOR_METHODS = {"sum": sum, "mean": mean}

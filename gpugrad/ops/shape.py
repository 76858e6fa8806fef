"""Shape ops: reshape broadcast_to sum_to (more in the modules after this one).

These move or view data without arithmetic; their gradients move it back.
"""
from ..errors import ShapeError
from ..registry import RegisterGradient
from .base import emit, unary

__all__ = ['reshape', 'broadcast_to', 'sum_to']



def reshape(x, shape):
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
    return emit("Reshape", out, x._device, (x,))


@RegisterGradient("Reshape")
def _reshape_grad(op, dy):
    return (reshape(dy, op.inputs[0].shape),)


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` as NumPy does (a view, no copy).

    Example:
        >>> import gpugrad as gg
        >>> gg.broadcast_to(gg.tensor([1.0, 2.0]), (3, 2)).shape
        (3, 2)
    """
    x = unary(x)
    shape = tuple(shape)
    if x.shape == shape:
        return emit("BroadcastTo", x._data, x._device, (x,))
    try:
        out = x._device.xp.broadcast_to(x._data, shape)
    except ValueError:
        raise ShapeError(f"op 'BroadcastTo' cannot broadcast shape {x.shape} to {shape}") from None
    return emit("BroadcastTo", out, x._device, (x,))


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, dy):
    return (dy,)  # the tape sums dy back to the input's shape


def sum_to(x, shape):
    """Sum ``x`` over the axes broadcasting added, down to ``shape``.

    The inverse of :func:`broadcast_to`; the tape uses it to undo broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.sum_to(gg.ones((3, 2)), (1, 2)).numpy().tolist()
        [[3.0, 3.0]]
    """
    from .reductions import sum as reduce_sum

    x = unary(x)
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(shape, x.shape[lead:])):
        raise ShapeError(f"op 'SumTo' cannot reduce shape {x.shape} to {shape}")
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    return reshape(reduce_sum(x, axis=axes), shape)


TENSOR_METHODS = {
    "reshape": lambda self, *shape: reshape(self, shape[0] if len(shape) == 1 else shape),
    "broadcast_to": broadcast_to,
}

"""Control of gradient flow: identity and stop_gradient.

Both pass values through unchanged. ``Identity`` passes the gradient through
too; ``StopGradient`` is declared not differentiable, so the tape records it
(diagnostics can name it) but sends no gradient back through it.
"""
from ..registry import NotDifferentiable, RegisterGradient
from ..tensor import Tensor
from .base import emit, unary

__all__ = ['identity', 'stop_gradient']


def _read(x):
    """``x``'s array; a Variable's is copied, so a later assign does not change the result."""
    return x._data if x.__class__ is Tensor else x._data.copy()


def identity(x):
    """A tensor with the values of ``x``; the gradient passes through unchanged.

    Reading a Variable through ``identity`` snapshots its current value.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.identity(x) * 3.0
        >>> tape.gradient(y, x).numpy().tolist()
        [3.0, 3.0]
    """
    x = unary(x)
    return emit("Identity", _read(x), x._device, (x,))


@RegisterGradient("Identity")
def _identity_grad(op, dy):
    return (dy,)


def stop_gradient(x):
    """A tensor with the values of ``x`` through which no gradient flows.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * gg.stop_gradient(x)
        >>> tape.gradient(y, x).numpy().tolist()  # d(x * c)/dx with c = x held constant
        [1.0, 2.0]
    """
    x = unary(x)
    return emit("StopGradient", _read(x), x._device, (x,))


NotDifferentiable("StopGradient")


TENSOR_METHODS = {}
